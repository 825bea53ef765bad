// The NCCL backend of DeviceProcessGroup (see the header).
#include "distributed/nccl_process_group.hpp"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "common/nccl.hpp"
#include "distributed/stall_report.hpp"

namespace weir::internal {

namespace {

NcclType ReducibleType(DType dtype, ReduceOp op, std::string_view what) {
  const bool floating = dtype == DType::kF32 || dtype == DType::kF64;
  if (op == ReduceOp::kMean && !floating) {
    throw std::invalid_argument(fmt::format("[nccl] '{}': the mean of {} is not supported (f32, f64 are)", what, dtype));
  }
  switch (dtype) {
    case DType::kF32: return NcclType::kF32;
    case DType::kF64: return NcclType::kF64;
    case DType::kI32: return NcclType::kI32;
    case DType::kI64: return NcclType::kI64;
    default: throw std::invalid_argument(fmt::format("[nccl] '{}': all-reduce of {} is not supported (f32, f64, i32, i64 are)", what, dtype));
  }
}

class NcclProcessGroup final : public DeviceProcessGroup {
 public:
  NcclProcessGroup(ControlPlaneClient& control_plane, const NcclGroupOptions& options, const std::string& unique_id)
      : control_plane_(control_plane), timeout_(options.timeout),
        comm_(JoinNccl({.unique_id = unique_id, .rank = control_plane.Rank(), .size = control_plane.WorldSize(),
                        .device = options.device, .timeout = options.timeout,
                        .broken = [&control_plane] { return control_plane.Broken(); }})),
        watchdog_([this] { Watch(); }) {}

  ~NcclProcessGroup() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    watchdog_.join();
  }

  std::string_view Backend() const override { return "nccl"; }
  int Rank() const override { return control_plane_.Rank(); }
  int Size() const override { return control_plane_.WorldSize(); }

  void AllReduce(const ConstTensorView& in, const TensorView& out, ReduceOp op, void* stream, std::string_view what) override {
    const NcclType type = ReducibleType(out.GetDType(), op, what);
    Guarded(what, [&] {
      comm_->AllReduce(in.data, out.data, static_cast<std::size_t>(out.NumElements()), type,
                      op == ReduceOp::kMean ? NcclReduce::kAvg : NcclReduce::kSum, stream, std::string(what));
    });
  }

  void Broadcast(const TensorView& tensor, int root, void* stream, std::string_view what) override {
    Guarded(what, [&] {
      comm_->Broadcast(tensor.data, tensor.data, tensor.meta->NumBytes(), NcclType::kU8, root, stream, std::string(what));
    });
  }

  void Send(const ConstTensorView& tensor, int to, void* stream, std::string_view what) override {
    Guarded(what, [&] { comm_->Send(tensor.data, tensor.meta->NumBytes(), NcclType::kU8, to, stream, std::string(what)); });
  }

  void Recv(const TensorView& tensor, int from, void* stream, std::string_view what) override {
    Guarded(what, [&] { comm_->Recv(tensor.data, tensor.meta->NumBytes(), NcclType::kU8, from, stream, std::string(what)); });
  }

  void BroadcastEach(std::span<const TensorView> packed, void* stream, std::string_view what) override {
    std::vector<NcclCommunicator::Part> parts;
    for (const TensorView& part : packed) parts.push_back({part.data, part.data, part.meta->NumBytes()});
    Guarded(what, [&] { comm_->BroadcastEach(parts, NcclType::kU8, stream, std::string(what)); });
  }

  void ThrowIfFailed(std::string_view what) override {
    if (const std::string failure = comm_->Failure(); !failure.empty()) {
      MarkFailed();
      if (peer_left_.load()) throw PeerLeftError(fmt::format("[nccl] '{}' failed: {}", what, failure));
      throw std::runtime_error(fmt::format("[nccl] '{}' failed: {}", what, failure));
    }
  }

 private:
  // NCCL's errors name the collective.
  template <typename Fn> void Guarded(std::string_view what, Fn&& fn) {
    try {
      fn();
    } catch (const std::invalid_argument&) {
      throw;
    } catch (const std::exception& error) {
      MarkFailed();
      throw std::runtime_error(fmt::format("[nccl] '{}' failed: {}", what, error.what()));
    }
  }

  // Every 100 ms: a lost rank, an error NCCL noticed, or a collective past its time aborts the
  // communicator, so that no stream waits forever behind a collective that cannot complete.
  void Watch() {
    std::unique_lock lock(mutex_);
    for (int round = 1; !wake_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping_; }); ++round) {
      if (!comm_->Failure().empty()) continue;
      // About every second, for a collective queued over a second: a rank that closed its session (the
      // ranks made different numbers of calls) never comes, and it said so before it closed.
      std::string departed;
      if (round % 10 == 0 && comm_->QueuedLongerThan(std::chrono::seconds(1))) {
        departed = DescribeDeparture(control_plane_, std::chrono::milliseconds(1));
      }
      if (!departed.empty()) {
        peer_left_.store(true);
        comm_->Abort(departed);
      } else if (const std::string lost = control_plane_.Broken(); !lost.empty()) {
        comm_->Abort(lost);
      } else if (const std::string error = comm_->AsyncError(); !error.empty()) {
        comm_->Abort(fmt::format("NCCL reported {}", error));
      } else if (const std::optional<std::string> stalled = comm_->Stalled()) {
        comm_->Abort(fmt::format("collective {} did not complete within {} ms, and no rank was reported lost", *stalled,
                                timeout_.count()));
      }
    }
  }

  ControlPlaneClient& control_plane_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<NcclCommunicator> comm_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::atomic<bool> peer_left_{false};  // the abort was for a rank that closed its session
  std::thread watchdog_;  // last: starts once the rest is made
};

}  // namespace

std::unique_ptr<DeviceProcessGroup> MakeNcclProcessGroup(ControlPlaneClient& control_plane, const NcclGroupOptions& options) {
  if (options.prefix.empty()) throw std::invalid_argument("[nccl] prefix: expected a non-empty key prefix, got \"\"");
  if (options.timeout.count() <= 0) {
    throw std::invalid_argument(fmt::format("[nccl] timeout: expected > 0 ms, got {} ms", options.timeout.count()));
  }
  const std::string key = options.prefix + "/unique_id";
  std::string unique_id;
  if (control_plane.Rank() == 0) {
    unique_id = NcclNewUniqueId();
    control_plane.Set(key, unique_id, options.timeout);
  } else {
    unique_id = control_plane.Get(key, options.timeout);
  }
  return std::make_unique<NcclProcessGroup>(control_plane, options, unique_id);
}

}  // namespace weir::internal
