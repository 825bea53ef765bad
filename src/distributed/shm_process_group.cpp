// The shared-memory backend of ProcessGroup (see the header). Segment layout: a header of cache-line
// separated counters (the barrier's arrivals and generation), then two sets, each a reduced-result area
// and one slot per rank, every area `slot_bytes`. Consecutive chunks (of one collective and the next)
// alternate between the sets, so a chunk needs two barriers, not three: a rank writes a set again only
// after the barrier of the chunk in between, which every rank reaches after it has read that set.
// Then one mailbox per ordered pair of ranks for point-to-point messages: two counters (chunks put,
// chunks taken) and a slot; the sender puts a chunk once the receiver has taken the one before.
#include "distributed/shm_process_group.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "common/stale_files.hpp"
#include "distributed/stall_report.hpp"

namespace weir::internal {
namespace {

constexpr std::string_view kSegmentPrefix = "weir-";

constexpr std::size_t kLine = 64;

struct alignas(kLine) Header {
  std::atomic<std::uint32_t> arrived;
  char pad0[kLine - sizeof(std::atomic<std::uint32_t>)];
  std::atomic<std::uint32_t> generation;
  char pad1[kLine - sizeof(std::atomic<std::uint32_t>)];
  std::atomic<std::uint32_t> departed;  // 1 + the first rank that left the group (0: none)
  char pad2[kLine - sizeof(std::atomic<std::uint32_t>)];
};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free, "shared counters must be lock free");

// A mailbox's counters, then its slot.
struct alignas(kLine) Mailbox {
  std::atomic<std::uint64_t> put;
  char pad0[kLine - sizeof(std::atomic<std::uint64_t>)];
  std::atomic<std::uint64_t> taken;
  char pad1[kLine - sizeof(std::atomic<std::uint64_t>)];
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "shared counters must be lock free");

// Each rank's departure flag (1 once it left the group), after the header: a point-to-point wait
// minds only its peer's, so that ranks done with their part may leave while others still exchange.
std::size_t DepartureBytes(int ranks) {
  return (static_cast<std::size_t>(ranks) * sizeof(std::atomic<std::uint32_t>) + kLine - 1) / kLine * kLine;
}

// The segment's bytes for `ranks` ranks and slots of `slot_bytes`.
std::size_t SegmentBytes(int ranks, std::size_t slot_bytes) {
  const auto n = static_cast<std::size_t>(ranks);
  return sizeof(Header) + DepartureBytes(ranks) + 2 * slot_bytes * (n + 1) + n * (n - 1) * (sizeof(Mailbox) + slot_bytes);
}

void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

class ShmProcessGroup final : public HostProcessGroup {
 public:
  ShmProcessGroup(ControlPlaneClient& control_plane, void* base, std::size_t bytes, std::size_t slot_bytes,
                  std::chrono::milliseconds timeout, std::string prefix)
      : control_plane_(control_plane), prefix_(std::move(prefix)), base_(base), bytes_(bytes), slot_bytes_(slot_bytes),
        timeout_(timeout), rank_(control_plane.Rank()), size_(control_plane.WorldSize()) {
    header_ = static_cast<Header*>(base);
    departures_ = reinterpret_cast<std::atomic<std::uint32_t>*>(static_cast<std::byte*>(base) + sizeof(Header));
    sets_ = static_cast<std::byte*>(base) + sizeof(Header) + DepartureBytes(size_);
    mailboxes_ = sets_ + 2 * slot_bytes_ * static_cast<std::size_t>(size_ + 1);
    generation_ = header_->generation.load(std::memory_order_acquire);
  }
  ~ShmProcessGroup() override {
    // A rank still waiting in a collective of this group, or for this rank's messages, learns at once
    // that no answer will come.
    departures_[rank_].store(1, std::memory_order_release);
    std::uint32_t none = 0;
    header_->departed.compare_exchange_strong(none, static_cast<std::uint32_t>(rank_ + 1));
    munmap(base_, bytes_);
  }

  std::string_view Backend() const override { return "shm"; }
  // Set when a collective cost about 12 us (two barriers), what copying 256 KiB in and out cost. Since
  // each rank sums with vectorized loops a collective costs about 1 us in bursts, so a lower threshold
  // may now pay; not measured yet.
  std::size_t PackBelowBytes() const override { return std::size_t{256} << 10; }
  int Rank() const override { return rank_; }
  int Size() const override { return size_; }

  void AllReduce(const TensorView& tensor, ReduceOp op, std::string_view what) override {
    ++collectives_;
    try {
      ForReducibleDType(tensor.GetDType(), [&](auto element) { AllReduceAs<decltype(element)>(tensor, op, what); });
    } catch (const std::invalid_argument& error) {
      throw std::invalid_argument(fmt::format("[shm] rank {}: all-reduce {}: {}", rank_, what, error.what()));
    }
  }

  void Broadcast(const TensorView& tensor, int root, std::string_view what) override {
    if (root < 0 || root >= size_) {
      throw std::invalid_argument(fmt::format("[shm] broadcast {}: root must be in [0, {}), got {}", what, size_, root));
    }
    ++collectives_;
    auto* data = static_cast<std::byte*>(tensor.data);
    const std::size_t total = tensor.meta->NumBytes();
    for (std::size_t offset = 0; offset < total; offset += slot_bytes_) {
      const std::size_t length = std::min(slot_bytes_, total - offset);
      std::byte* result = Result(NextSet());
      if (rank_ == root) std::memcpy(result, data + offset, length);
      Barrier("broadcast", what);
      if (rank_ != root) std::memcpy(data + offset, result, length);
    }
  }

  void Send(const ConstTensorView& tensor, int to, std::string_view what) override {
    CheckPeer("send", to, what);
    Mailbox& box = MailboxOf(rank_, to);
    const auto* data = static_cast<const std::byte*>(tensor.data);
    const std::size_t total = tensor.meta->NumBytes();
    std::uint64_t& chunks = sent_[static_cast<std::size_t>(to)];
    for (std::size_t offset = 0; offset < total; offset += slot_bytes_, ++chunks) {
      WaitUntil([&] { return box.taken.load(std::memory_order_acquire) == chunks; }, "send", what, [&] { return Departed(to); });
      std::memcpy(SlotOf(box), data + offset, std::min(slot_bytes_, total - offset));
      box.put.store(chunks + 1, std::memory_order_release);
    }
  }

  void Recv(const TensorView& tensor, int from, std::string_view what) override {
    CheckPeer("recv", from, what);
    Mailbox& box = MailboxOf(from, rank_);
    auto* data = static_cast<std::byte*>(tensor.data);
    const std::size_t total = tensor.meta->NumBytes();
    std::uint64_t& chunks = received_[static_cast<std::size_t>(from)];
    for (std::size_t offset = 0; offset < total; offset += slot_bytes_, ++chunks) {
      WaitUntil([&] { return box.put.load(std::memory_order_acquire) > chunks; }, "recv", what, [&] { return Departed(from); });
      std::memcpy(data + offset, SlotOf(box), std::min(slot_bytes_, total - offset));
      box.taken.store(chunks + 1, std::memory_order_release);
    }
  }

  // Puts a chunk to `to` whenever its mailbox is free and takes one from `from` whenever one is there,
  // until both are done.
  void SendRecv(const ConstTensorView& send, int to, const TensorView& recv, int from, std::string_view what) override {
    CheckPeer("send", to, what);
    CheckPeer("recv", from, what);
    Mailbox& out = MailboxOf(rank_, to);
    Mailbox& in = MailboxOf(from, rank_);
    const auto* source = static_cast<const std::byte*>(send.data);
    auto* target = static_cast<std::byte*>(recv.data);
    const std::size_t send_total = send.meta->NumBytes();
    const std::size_t recv_total = recv.meta->NumBytes();
    std::uint64_t& put = sent_[static_cast<std::size_t>(to)];
    std::uint64_t& taken = received_[static_cast<std::size_t>(from)];
    std::size_t sent = 0, received = 0;
    auto can_put = [&] { return sent < send_total && out.taken.load(std::memory_order_acquire) == put; };
    auto can_take = [&] { return received < recv_total && in.put.load(std::memory_order_acquire) > taken; };
    while (sent < send_total || received < recv_total) {
      // Only a peer this rank still needs: one that took every chunk may have left.
      const auto departed = [&] { return sent < send_total && Departed(to) >= 0 ? to : received < recv_total ? Departed(from) : -1; };
      if (!can_put() && !can_take()) WaitUntil([&] { return can_put() || can_take(); }, "send/recv", what, departed);
      if (can_put()) {
        const std::size_t length = std::min(slot_bytes_, send_total - sent);
        std::memcpy(SlotOf(out), source + sent, length);
        out.put.store(++put, std::memory_order_release);
        sent += length;
      }
      if (can_take()) {
        const std::size_t length = std::min(slot_bytes_, recv_total - received);
        std::memcpy(target + received, SlotOf(in), length);
        in.taken.store(++taken, std::memory_order_release);
        received += length;
      }
    }
  }

 private:
  void CheckPeer(std::string_view kind, int peer, std::string_view what) const {
    if (peer < 0 || peer >= size_ || peer == rank_) {
      throw std::invalid_argument(fmt::format("[shm] {} {}: the peer must be another rank in [0, {}), got {}", kind,
                                              what, size_, peer));
    }
  }

  // The mailbox of messages from `from` to `to`.
  Mailbox& MailboxOf(int from, int to) const {
    const std::size_t index = static_cast<std::size_t>(from) * static_cast<std::size_t>(size_ - 1) +
                              static_cast<std::size_t>(to < from ? to : to - 1);
    return *reinterpret_cast<Mailbox*>(mailboxes_ + index * (sizeof(Mailbox) + slot_bytes_));
  }
  std::byte* SlotOf(Mailbox& box) const { return reinterpret_cast<std::byte*>(&box) + sizeof(Mailbox); }

  // Per chunk (one slot's worth): each rank puts in its slot the pieces of the chunk that the other
  // ranks reduce (its own piece stays in its buffer), then each rank sums its piece over the ranks in
  // rank order into the result area and its buffer, then copies the other pieces from the result area.
  // Every element is summed once, by its piece's owner, so every rank gets bitwise the same result.
  // Per rank that moves 3 chunks of bytes, where putting the whole chunk in the slot moved 5.
  template <typename T>
  void AllReduceAs(const TensorView& tensor, ReduceOp op, std::string_view what) {
    T* data = tensor.As<T>();
    const auto total = static_cast<std::size_t>(tensor.NumElements());
    const std::size_t chunk = slot_bytes_ / sizeof(T);
    for (std::size_t begin = 0; begin < total; begin += chunk) {
      const std::size_t length = std::min(chunk, total - begin);
      const int set = NextSet();
      auto piece = [&](int rank) { return length * static_cast<std::size_t>(rank) / static_cast<std::size_t>(size_); };
      const std::size_t own_begin = piece(rank_);
      const std::size_t own_end = piece(rank_ + 1);
      T* slot = reinterpret_cast<T*>(Slot(set, rank_));
      std::memcpy(slot, data + begin, own_begin * sizeof(T));
      std::memcpy(slot + own_end, data + begin + own_end, (length - own_end) * sizeof(T));
      Barrier("all-reduce", what);
      T* result = reinterpret_cast<T*>(Result(set));
      auto values = [&](int rank) { return rank == rank_ ? data + begin : reinterpret_cast<const T*>(Slot(set, rank)); };
      SumInRankOrder(values, result + own_begin, own_begin, own_end - own_begin, op);
      std::memcpy(data + begin + own_begin, result + own_begin, (own_end - own_begin) * sizeof(T));
      Barrier("all-reduce", what);
      // The other ranks' pieces: before its piece, after it.
      std::memcpy(data + begin, result, own_begin * sizeof(T));
      std::memcpy(data + begin + own_end, result + own_end, (length - own_end) * sizeof(T));
    }
  }

  // out[i] = values(0)[offset + i] + values(1)[offset + i] + ... in rank order (then / ranks for a
  // mean): one pass per rank over `out`, which stays in cache (a piece of a slot), so each loop is a
  // plain vectorized one.
  template <typename T, typename Values>
  void SumInRankOrder(Values&& values, T* out, std::size_t offset, std::size_t count, ReduceOp op) const {
    const T* first = values(0) + offset;
    if (size_ == 1) {
      std::memcpy(out, first, count * sizeof(T));
    } else {
      const T* second = values(1) + offset;
      for (std::size_t i = 0; i < count; ++i) out[i] = first[i] + second[i];
    }
    for (int r = 2; r < size_; ++r) {
      const T* next = values(r) + offset;
      for (std::size_t i = 0; i < count; ++i) out[i] += next[i];
    }
    if (op == ReduceOp::kMean) {
      const T divisor = static_cast<T>(size_);
      for (std::size_t i = 0; i < count; ++i) out[i] /= divisor;
    }
  }

  int NextSet() { return static_cast<int>(chunks_++ % 2); }
  std::byte* Result(int set) const {
    return sets_ + static_cast<std::size_t>(set) * static_cast<std::size_t>(size_ + 1) * slot_bytes_;
  }
  std::byte* Slot(int set, int rank) const { return Result(set) + static_cast<std::size_t>(rank + 1) * slot_bytes_; }

  // A sense-counting barrier on the shared header: the last to arrive resets the count and bumps the
  // generation the others wait on.
  void Barrier(std::string_view kind, std::string_view what) {
    const std::uint32_t generation = generation_++;
    if (header_->arrived.fetch_add(1, std::memory_order_acq_rel) == static_cast<std::uint32_t>(size_ - 1)) {
      header_->arrived.store(0, std::memory_order_relaxed);
      header_->generation.store(generation + 1, std::memory_order_release);
      return;
    }
    WaitUntil([&] { return header_->generation.load(std::memory_order_acquire) != generation; }, kind, what,
              [&] { return static_cast<int>(header_->departed.load(std::memory_order_acquire)) - 1; });
  }

  // The rank if it left the group, else -1.
  int Departed(int rank) const { return departures_[rank].load(std::memory_order_acquire) != 0 ? rank : -1; }

  // Waits until `done()`: spins, then yields, then sleeps briefly (ranks may share a core); about every
  // millisecond it checks the deadline, the control plane and `departed()` (a rank the wait needs that
  // left the group, else -1: any rank for a collective, the peer for a message).
  template <typename Done, typename Gone>
  void WaitUntil(Done&& done, std::string_view kind, std::string_view what, Gone&& departed) {
    const auto start = std::chrono::steady_clock::now();
    auto next_check = start + std::chrono::milliseconds(1);
    for (std::uint64_t spins = 0; !done(); ++spins) {
      if (spins < 4096) {
        Pause();
        continue;
      }
      if (spins < 8192) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
      const auto now = std::chrono::steady_clock::now();
      if (now < next_check) continue;
      next_check = now + std::chrono::milliseconds(1);
      if (const int gone = departed(); gone >= 0 && !done()) {
        MarkFailed();
        std::string why = DescribeDeparture(control_plane_, kDepartureNoticeWait);
        if (why.empty()) why = fmt::format("rank {} left the group", gone);
        throw PeerLeftError(fmt::format("[shm] rank {}: {} {} failed: {}", rank_, kind, what, why));
      }
      if (std::string broken = control_plane_.Broken(); !broken.empty()) {
        MarkFailed();
        throw std::runtime_error(fmt::format("[shm] rank {}: {} {} failed ({}): the other ranks cannot take part",
                                             rank_, kind, what, broken));
      }
      if (now - start > timeout_) {
        MarkFailed();
        throw std::runtime_error(fmt::format("[shm] rank {}: {} {} timed out after {} ms: {}", rank_, kind, what,
                                             timeout_.count(),
                                             DescribeStall(control_plane_, prefix_, collectives_, what, kStallReportWait)));
      }
    }
  }

  ControlPlaneClient& control_plane_;
  std::string prefix_;             // the group's keys in the control plane
  std::uint64_t collectives_ = 0;  // all-rank collectives begun, alike on every rank
  void* base_;
  std::size_t bytes_;
  std::size_t slot_bytes_;
  std::chrono::milliseconds timeout_;
  int rank_;
  int size_;
  Header* header_ = nullptr;
  std::atomic<std::uint32_t>* departures_ = nullptr;  // one per rank
  std::byte* sets_ = nullptr;
  std::byte* mailboxes_ = nullptr;
  std::vector<std::uint64_t> sent_ = std::vector<std::uint64_t>(static_cast<std::size_t>(size_), 0);      // chunks to each rank
  std::vector<std::uint64_t> received_ = std::vector<std::uint64_t>(static_cast<std::size_t>(size_), 0);  // from each
  std::uint64_t chunks_ = 0;      // chunks this rank has begun (the same count on every rank)
  std::uint32_t generation_ = 0;  // the barrier generation this rank waits for next
};

void* MapSegment(int fd, std::size_t bytes, const std::string& name) {
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    throw ControlPlaneError(fmt::format("[shm] cannot map the shared segment {} ({} bytes): {}", name, bytes,
                                        std::strerror(errno)));
  }
  return base;
}

}  // namespace

void RemoveStaleSegments() {
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return;
  while (const dirent* entry = readdir(dir)) {
    const std::string_view name(entry->d_name);
    if (name.starts_with(kSegmentPrefix) && GoneOwner(name.substr(kSegmentPrefix.size()))) {
      std::string path = "/";
      path += name;
      shm_unlink(path.c_str());
    }
  }
  closedir(dir);
}

std::unique_ptr<HostProcessGroup> MakeShmProcessGroup(ControlPlaneClient& control_plane, const ShmGroupOptions& options) {
  if (options.prefix.empty()) throw std::invalid_argument("[shm] ShmGroupOptions::prefix must not be empty");
  if (options.timeout.count() <= 0) {
    throw std::invalid_argument(fmt::format("[shm] ShmGroupOptions::timeout must be positive, got {} ms",
                                            options.timeout.count()));
  }
  if (options.slot_bytes < 64 || options.slot_bytes % 64 != 0) {
    throw std::invalid_argument(fmt::format("[shm] ShmGroupOptions::slot_bytes must be a positive multiple of 64, "
                                            "got {}", options.slot_bytes));
  }
  const std::size_t bytes = SegmentBytes(control_plane.WorldSize(), options.slot_bytes);
  const std::string key = options.prefix + "/shm_name";
  int fd = -1;
  std::string name;
  if (control_plane.Rank() == 0) {
    RemoveStaleSegments();
    name = "/";
    name += kSegmentPrefix;
    name += OwnedSuffix();
    fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      const std::string error = std::strerror(errno);
      if (fd >= 0) {
        close(fd);
        shm_unlink(name.c_str());
      }
      control_plane.Set(key, "");  // the others fail at once rather than at the timeout
      throw ControlPlaneError(fmt::format("[shm] cannot make the shared segment {} ({} bytes): {}", name, bytes, error));
    }
    control_plane.Set(key, name, options.timeout);
  } else {
    name = control_plane.Get(key, options.timeout);
    if (name.empty()) throw ControlPlaneError("[shm] rank 0 could not make the shared segment");
    fd = shm_open(name.c_str(), O_RDWR, 0600);
    if (fd < 0) {
      throw ControlPlaneError(fmt::format("[shm] rank {}: cannot open the shared segment {}: {} (are all ranks on one "
                                          "machine?)", control_plane.Rank(), name, std::strerror(errno)));
    }
  }
  void* base = nullptr;
  try {
    base = MapSegment(fd, bytes, name);
  } catch (...) {
    close(fd);
    if (control_plane.Rank() == 0) shm_unlink(name.c_str());
    throw;
  }
  close(fd);  // the mapping stays
  auto group = std::make_unique<ShmProcessGroup>(control_plane, base, bytes, options.slot_bytes, options.timeout,
                                                 options.prefix);
  // Once every rank has mapped it, the name can go: the memory lives until the last rank unmaps it. The
  // last rank to map it removes the name, so that it goes even when rank 0 is killed meanwhile.
  try {
    if (control_plane.Add(options.prefix + "/shm_mapped_ranks", 1, options.timeout) == control_plane.WorldSize()) {
      shm_unlink(name.c_str());
    }
    control_plane.Barrier(options.prefix + "/shm_mapped", options.timeout);
  } catch (...) {
    if (control_plane.Rank() == 0) shm_unlink(name.c_str());
    throw;
  }
  return group;
}

}  // namespace weir::internal
