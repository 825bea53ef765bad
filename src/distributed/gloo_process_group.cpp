// The Gloo backend of ProcessGroup: a rendezvous context over the control plane's store, Gloo's ring
// all-reduce and one-to-all broadcast on buffers in place, and errors that name the collective and the
// rank that was lost.
#include "distributed/gloo_process_group.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include "distributed/stall_report.hpp"

namespace weir::internal {
namespace {

/// Gloo's rendezvous store over the control plane: Gloo's keys under the group's prefix, values as
/// byte strings; waits bounded by the group's timeout (Gloo's own default is 30 s).
class ControlPlaneStore final : public gloo::rendezvous::Store {
 public:
  ControlPlaneStore(ControlPlaneClient& control_plane, std::string prefix, std::chrono::milliseconds timeout)
      : control_plane_(control_plane), prefix_(std::move(prefix)), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    control_plane_.Set(Key(key), std::string(data.begin(), data.end()), timeout_);
  }
  std::vector<char> get(const std::string& key) override {
    const std::string value = control_plane_.Get(Key(key), timeout_);
    return {value.begin(), value.end()};
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    std::vector<std::string> prefixed;
    for (const std::string& key : keys) prefixed.push_back(Key(key));
    control_plane_.Wait(prefixed, timeout);
  }

 private:
  std::string Key(const std::string& key) const { return prefix_ + "/" + key; }

  ControlPlaneClient& control_plane_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
};

class GlooProcessGroup final : public HostProcessGroup {
 public:
  GlooProcessGroup(ControlPlaneClient& control_plane, std::shared_ptr<gloo::Context> context, std::string prefix)
      : control_plane_(control_plane), context_(std::move(context)), prefix_(std::move(prefix)) {}

  std::string_view Backend() const override { return "gloo"; }
  // A collective costs 170 us even on loopback (bench/multi_process.py's all-reduce table), and about
  // 4 ms with each process on one core (its TCP loop thread and the caller share the core:
  // docs/distributed.md), against 0.5-1 ms to copy 4 MiB in and out.
  std::size_t PackBelowBytes() const override { return std::size_t{4} << 20; }
  int Rank() const override { return context_->rank; }
  int Size() const override { return context_->size; }

  void AllReduce(const TensorView& tensor, ReduceOp op, std::string_view what) override {
    ++collectives_;
    Guarded("all-reduce", what, [&] {
      ForReducibleDType(tensor.GetDType(), [&](auto element) { AllReduceAs<decltype(element)>(tensor, op); });
    });
  }

  void Broadcast(const TensorView& tensor, int root, std::string_view what) override {
    if (root < 0 || root >= Size()) {
      throw std::invalid_argument(fmt::format("[gloo] broadcast {}: root must be in [0, {}), got {}", what, Size(), root));
    }
    ++collectives_;
    Guarded("broadcast", what, [&] {
      if (tensor.NumElements() == 0) return;
      gloo::BroadcastOptions options(context_);
      options.setOutput(static_cast<std::uint8_t*>(tensor.data), tensor.meta->NumBytes());
      options.setRoot(root);
      options.setTag(NextTag());
      gloo::broadcast(options);
    });
  }

  void Send(const ConstTensorView& tensor, int to, std::string_view what) override {
    CheckPeer("send", to, what);
    Guarded("send", what, [&] {
      const std::uint64_t slot = PeerSlot(sent_to_, to);
      if (tensor.meta->NumBytes() == 0) return;
      auto buffer = context_->createUnboundBuffer(const_cast<void*>(tensor.data), tensor.meta->NumBytes());
      buffer->send(to, slot);
      if (!buffer->waitSend()) throw std::runtime_error("the send was aborted");  // bounded by the context's timeout
    });
  }

  void Recv(const TensorView& tensor, int from, std::string_view what) override {
    CheckPeer("recv", from, what);
    Guarded("recv", what, [&] {
      const std::uint64_t slot = PeerSlot(received_from_, from);
      if (tensor.meta->NumBytes() == 0) return;
      auto buffer = context_->createUnboundBuffer(tensor.data, tensor.meta->NumBytes());
      buffer->recv(from, slot);
      if (!buffer->waitRecv()) throw std::runtime_error("the receive was aborted");
    });
  }

  void SendRecv(const ConstTensorView& send, int to, const TensorView& recv, int from, std::string_view what) override {
    CheckPeer("send", to, what);
    CheckPeer("recv", from, what);
    Guarded("send/recv", what, [&] {
      const std::uint64_t send_slot = PeerSlot(sent_to_, to);
      const std::uint64_t recv_slot = PeerSlot(received_from_, from);
      std::unique_ptr<gloo::transport::UnboundBuffer> out, in;
      if (send.meta->NumBytes() > 0) {
        out = context_->createUnboundBuffer(const_cast<void*>(send.data), send.meta->NumBytes());
        out->send(to, send_slot);
      }
      if (recv.meta->NumBytes() > 0) {
        in = context_->createUnboundBuffer(recv.data, recv.meta->NumBytes());
        in->recv(from, recv_slot);
      }
      if (out && !out->waitSend()) throw std::runtime_error("the send was aborted");
      if (in && !in->waitRecv()) throw std::runtime_error("the receive was aborted");
    });
  }

 private:
  void CheckPeer(std::string_view kind, int peer, std::string_view what) const {
    if (peer < 0 || peer >= Size() || peer == Rank()) {
      throw std::invalid_argument(fmt::format("[gloo] {} {}: the peer must be another rank in [0, {}), got {}", kind,
                                              what, Size(), peer));
    }
  }

  // Point-to-point messages of a pair of ranks are told apart by a count of that pair's messages, which
  // the sender and the receiver keep alike (collectives' tags cannot serve: the other ranks do not
  // take part). Their slots have a prefix of their own, apart from Gloo's collectives'.
  static std::uint64_t PeerSlot(std::vector<std::uint32_t>& counts, int peer) {
    constexpr std::uint8_t kPointToPoint = 0x57;
    return gloo::Slot::build(kPointToPoint, counts[static_cast<std::size_t>(peer)]++);
  }

  template <typename T>
  void AllReduceAs(const TensorView& tensor, ReduceOp op) {
    const auto elements = static_cast<std::size_t>(tensor.NumElements());
    if (elements == 0) return;
    gloo::AllreduceOptions options(context_);
    options.setOutput(tensor.As<T>(), elements);
    options.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, std::size_t)>(&gloo::sum<T>));
    options.setTag(NextTag());
    gloo::allreduce(options);
    if (op == ReduceOp::kMean) {
      T* data = tensor.As<T>();
      const T size = static_cast<T>(Size());
      for (std::size_t i = 0; i < elements; ++i) data[i] /= size;
    }
  }

  // Tags tell Gloo's messages of consecutive collectives apart; every rank counts them the same way.
  std::uint32_t NextTag() { return next_tag_++; }

  // Gloo's errors name a socket; ours name the collective, this rank and the rank that was lost, or the
  // master's connection (the control plane sees a dead peer's connection close at about the time Gloo
  // does, so wait a little for its notice), or, after a timeout with no rank lost, the ranks that did
  // not come (DescribeStall).
  template <typename Fn>
  void Guarded(std::string_view kind, std::string_view what, Fn&& fn) {
    try {
      fn();
    } catch (const std::invalid_argument& error) {
      throw std::invalid_argument(fmt::format("[gloo] rank {}: {} {}: {}", Rank(), kind, what, error.what()));
    } catch (const std::exception& error) {
      MarkFailed();
      std::string broken = control_plane_.Broken();
      if (broken.empty() && std::string_view(error.what()).find("Timed out") != std::string_view::npos) {
        throw std::runtime_error(fmt::format("[gloo] rank {}: {} {} timed out after {} ms: {} (gloo: {})", Rank(), kind,
                                             what, context_->getTimeout().count(),
                                             DescribeStall(control_plane_, prefix_, collectives_, what, kStallReportWait),
                                             error.what()));
      }
      if (broken.empty()) {
        // A peer that closed its session closed its connections: it said so before.
        if (std::string why = DescribeDeparture(control_plane_, kDepartureNoticeWait); !why.empty()) {
          throw PeerLeftError(fmt::format("[gloo] rank {}: {} {} failed: {}", Rank(), kind, what, why));
        }
        for (int i = 0; i < 40 && broken.empty(); ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          broken = control_plane_.Broken();
        }
      }
      throw std::runtime_error(fmt::format("[gloo] rank {}: {} {} failed ({}): {}", Rank(), kind, what,
                                           broken.empty() ? "no rank was reported lost" : broken, error.what()));
    }
  }

  ControlPlaneClient& control_plane_;
  std::shared_ptr<gloo::Context> context_;
  std::string prefix_;           // the group's keys in the control plane
  std::uint64_t collectives_ = 0;  // all-rank collectives begun, alike on every rank
  std::uint32_t next_tag_ = 0;
  std::vector<std::uint32_t> sent_to_ = std::vector<std::uint32_t>(static_cast<std::size_t>(context_->size), 0);
  std::vector<std::uint32_t> received_from_ = std::vector<std::uint32_t>(static_cast<std::size_t>(context_->size), 0);
};

}  // namespace

std::string LocalAddressTowards(const std::string& host) {
  // An IPv4 address or a host name that resolves to one (torchrun's MASTER_ADDR is often a name).
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) {
    throw ControlPlaneError(fmt::format(
        "[control plane] master address '{}' is not an IPv4 address or a host name that resolves to one", host));
  }
  sockaddr_in remote = *reinterpret_cast<const sockaddr_in*>(found->ai_addr);
  freeaddrinfo(found);
  remote.sin_port = htons(9);  // any port: connecting a UDP socket sends nothing
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) throw ControlPlaneError("[control plane] cannot open a socket to find the local address");
  sockaddr_in local{};
  socklen_t length = sizeof(local);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&remote), sizeof(remote)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
  close(fd);
  if (!ok) throw ControlPlaneError(fmt::format("[control plane] no route from this machine to '{}'", host));
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text));
  return text;
}

std::unique_ptr<HostProcessGroup> MakeGlooProcessGroup(ControlPlaneClient& control_plane, const GlooGroupOptions& options) {
  if (options.prefix.empty()) throw std::invalid_argument("[gloo] GlooGroupOptions::prefix must not be empty");
  if (options.address.empty()) throw std::invalid_argument("[gloo] GlooGroupOptions::address must not be empty");
  if (options.timeout.count() <= 0) {
    throw std::invalid_argument(fmt::format("[gloo] GlooGroupOptions::timeout must be positive, got {} ms",
                                            options.timeout.count()));
  }
  gloo::transport::tcp::attr attr;
  attr.hostname = options.address;
  attr.ai_family = AF_INET;
  std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(control_plane.Rank(), control_plane.WorldSize());
  context->setTimeout(options.timeout);
  ControlPlaneStore store(control_plane, options.prefix, options.timeout);
  try {
    context->connectFullMesh(store, device);
  } catch (const ControlPlaneError&) {
    throw;
  } catch (const std::exception& error) {
    throw ControlPlaneError(fmt::format("[gloo] rank {}: connecting group '{}' failed: {}", control_plane.Rank(),
                                        options.prefix, error.what()));
  }
  return std::make_unique<GlooProcessGroup>(control_plane, std::move(context), options.prefix);
}

}  // namespace weir::internal
