// NCCL behind common/nccl.hpp, in the CUDA backend library (compiled by nvcc).
//
// The communicator is non-blocking (ncclConfig_t::blocking = 0): every NCCL call may return
// ncclInProgress, after which NCCL's documented rule is to poll ncclCommGetAsyncError until the state
// leaves ncclInProgress before the next call. Settle() does that with a deadline and the `broken`
// check, so that neither joining nor a first collective (which connects the peers) waits forever on a
// rank that is gone.
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common/cuda_check.cuh"
#include "common/cuda_runtime.hpp"
#include "common/nccl.hpp"

namespace weir::internal {

namespace {

using Clock = std::chrono::steady_clock;

ncclDataType_t NativeType(NcclType type) {
  switch (type) {
    case NcclType::kF32: return ncclFloat32;
    case NcclType::kF64: return ncclFloat64;
    case NcclType::kI32: return ncclInt32;
    case NcclType::kI64: return ncclInt64;
    case NcclType::kU8: return ncclUint8;
  }
  throw std::invalid_argument("[nccl] unknown element type");
}

std::string Seconds(Clock::duration elapsed) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count() / 1000.0).substr(0, 5) +
         " s";
}

// The state of a CudaNcclCommunicator.
struct CommunicatorState {
  // A queued collective, watched through an event recorded behind it on its stream.
  struct Queued {
    cudaEvent_t event;
    Clock::time_point queued;
    std::string what;
  };

  NcclOptions options;
  ncclComm_t comm = nullptr;
  std::mutex calls;  // NCCL calls on the communicator, and Abort, one at a time
  mutable std::mutex state;  // failure, queued, free_events
  std::string failure;
  std::deque<Queued> queued;
  std::vector<cudaEvent_t> free_events;

  // Waits until NCCL has done what `result` left in progress; throws (after aborting) when it failed,
  // when the deadline passes or when the peers are gone. Called with `calls` held.
  void Settle(ncclResult_t result, const std::string& what, Clock::time_point deadline) {
    while (result == ncclInProgress) {
      if (std::string why = options.broken ? options.broken() : std::string(); !why.empty()) {
        FailLocked(what + ": " + why);
      }
      if (Clock::now() > deadline) {
        FailLocked(what + ": not done within " + Seconds(options.timeout) + " (a rank that never joined, or stopped)");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      if (ncclCommGetAsyncError(comm, &result) != ncclSuccess) break;
    }
    if (result != ncclSuccess) {
      FailLocked(what + ": " + ncclGetErrorString(result) + " (" + (ncclGetLastError(comm) ? ncclGetLastError(comm) : "") + ")");
    }
  }

  [[noreturn]] void FailLocked(const std::string& why) {
    AbortLocked(why);
    throw std::runtime_error("[nccl] " + why);
  }

  void AbortLocked(const std::string& why) noexcept {
    {
      std::lock_guard<std::mutex> lock(state);
      if (!failure.empty()) return;
      failure = why;
    }
    if (comm != nullptr) ncclCommAbort(comm);  // NCCL's kernels on the GPU give up; the streams move on
    comm = nullptr;
  }

  void ThrowIfFailed() const {
    std::lock_guard<std::mutex> lock(state);
    if (!failure.empty()) throw std::runtime_error("[nccl] the communicator failed earlier: " + failure);
  }

  // Records an event behind the collective just queued on `stream`.
  void Watch(void* stream, const std::string& what) {
    cudaEvent_t event = nullptr;
    {
      std::lock_guard<std::mutex> lock(state);
      if (!free_events.empty()) {
        event = free_events.back();
        free_events.pop_back();
      }
    }
    if (event == nullptr) WEIR_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    WEIR_CUDA_CHECK(cudaEventRecord(event, static_cast<cudaStream_t>(stream)));
    std::lock_guard<std::mutex> lock(state);
    queued.push_back({event, Clock::now(), what});
  }

  void CheckPeer(int peer, const std::string& what) const {
    if (peer < 0 || peer >= options.size || peer == options.rank) {
      throw std::invalid_argument("[nccl] " + what + ": the peer must be another rank in [0, " +
                                  std::to_string(options.size) + "), got " + std::to_string(peer));
    }
  }

  // One collective: `issue` makes the NCCL call(s) and returns the last result.
  template <typename Issue> void Run(void* stream, const std::string& what, Issue issue) {
    std::lock_guard<std::mutex> lock(calls);
    ThrowIfFailed();
    WEIR_CUDA_CHECK(cudaSetDevice(CudaOrdinal(options.device)));
    Settle(issue(), what, Clock::now() + options.timeout);
    Watch(stream, what);
  }
};

class CudaNcclCommunicator final : public NcclCommunicator {
 public:
  explicit CudaNcclCommunicator(const NcclOptions& options);
  ~CudaNcclCommunicator() override;
  CudaNcclCommunicator(const CudaNcclCommunicator&) = delete;
  CudaNcclCommunicator& operator=(const CudaNcclCommunicator&) = delete;

  void AllReduce(const void* in, void* out, std::size_t count, NcclType type, NcclReduce op, void* stream,
                 const std::string& what) override;
  void Broadcast(const void* in, void* out, std::size_t count, NcclType type, int root, void* stream,
                 const std::string& what) override;
  void Send(const void* in, std::size_t count, NcclType type, int to, void* stream, const std::string& what) override;
  void Recv(void* out, std::size_t count, NcclType type, int from, void* stream, const std::string& what) override;
  void BroadcastEach(std::span<const Part> parts, NcclType type, void* stream, const std::string& what) override;
  std::optional<std::string> QueuedLongerThan(std::chrono::milliseconds wait) override;
  std::chrono::milliseconds Timeout() const override;
  std::string AsyncError() override;
  void Abort(const std::string& why) noexcept override;
  std::string Failure() const override;

 private:
  std::unique_ptr<CommunicatorState> impl_;
};

CudaNcclCommunicator::CudaNcclCommunicator(const NcclOptions& options) : impl_(std::make_unique<CommunicatorState>()) {
  impl_->options = options;
  if (options.unique_id.size() != sizeof(ncclUniqueId::internal)) {
    throw std::invalid_argument("[nccl] unique_id: expected " + std::to_string(sizeof(ncclUniqueId::internal)) +
                                " bytes, got " + std::to_string(options.unique_id.size()));
  }
  if (options.rank < 0 || options.rank >= options.size) {
    throw std::invalid_argument("[nccl] rank: expected a value in [0, " + std::to_string(options.size) + "), got " +
                                std::to_string(options.rank));
  }
  ncclUniqueId id;
  std::memcpy(id.internal, options.unique_id.data(), sizeof(id.internal));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  std::lock_guard<std::mutex> lock(impl_->calls);
  WEIR_CUDA_CHECK(cudaSetDevice(CudaOrdinal(options.device)));
  const ncclResult_t result = ncclCommInitRankConfig(&impl_->comm, options.size, id, options.rank, &config);
  const std::string what = "joining the NCCL communicator of " + std::to_string(options.size) + " ranks as rank " +
                           std::to_string(options.rank);
  if (impl_->comm == nullptr) {
    throw std::runtime_error("[nccl] " + what + ": " + ncclGetErrorString(result));
  }
  impl_->Settle(result, what, Clock::now() + options.timeout);
}

CudaNcclCommunicator::~CudaNcclCommunicator() {
  std::lock_guard<std::mutex> lock(impl_->calls);
  if (impl_->comm != nullptr) {
    // Finalizing flushes what is queued and may wait for the peers: bounded like everything else, and
    // given up (aborted) at once when the control plane reports the peers gone.
    cudaSetDevice(CudaOrdinal(impl_->options.device));
    ncclResult_t result = ncclCommFinalize(impl_->comm);
    const Clock::time_point deadline = Clock::now() + impl_->options.timeout;
    while (result == ncclInProgress && Clock::now() < deadline &&
           !(impl_->options.broken && !impl_->options.broken().empty())) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (ncclCommGetAsyncError(impl_->comm, &result) != ncclSuccess) break;
    }
    if (result == ncclSuccess) {
      ncclCommDestroy(impl_->comm);
    } else {
      ncclCommAbort(impl_->comm);
    }
    impl_->comm = nullptr;
  }
  for (const CommunicatorState::Queued& queued : impl_->queued) cudaEventDestroy(queued.event);
  for (cudaEvent_t event : impl_->free_events) cudaEventDestroy(event);
}

void CudaNcclCommunicator::AllReduce(const void* in, void* out, std::size_t count, NcclType type, NcclReduce op,
                                 void* stream, const std::string& what) {
  impl_->Run(stream, what, [&] {
    return ncclAllReduce(in, out, count, NativeType(type), op == NcclReduce::kAvg ? ncclAvg : ncclSum, impl_->comm,
                         static_cast<cudaStream_t>(stream));
  });
}

void CudaNcclCommunicator::Broadcast(const void* in, void* out, std::size_t count, NcclType type, int root, void* stream,
                                 const std::string& what) {
  if (root < 0 || root >= impl_->options.size) {
    throw std::invalid_argument("[nccl] " + what + ": root must be in [0, " + std::to_string(impl_->options.size) +
                                "), got " + std::to_string(root));
  }
  impl_->Run(stream, what, [&] {
    return ncclBroadcast(in, out, count, NativeType(type), root, impl_->comm, static_cast<cudaStream_t>(stream));
  });
}

void CudaNcclCommunicator::Send(const void* in, std::size_t count, NcclType type, int to, void* stream,
                            const std::string& what) {
  impl_->CheckPeer(to, what);
  impl_->Run(stream, what, [&] {
    return ncclSend(in, count, NativeType(type), to, impl_->comm, static_cast<cudaStream_t>(stream));
  });
}

void CudaNcclCommunicator::Recv(void* out, std::size_t count, NcclType type, int from, void* stream, const std::string& what) {
  impl_->CheckPeer(from, what);
  impl_->Run(stream, what, [&] {
    return ncclRecv(out, count, NativeType(type), from, impl_->comm, static_cast<cudaStream_t>(stream));
  });
}

void CudaNcclCommunicator::BroadcastEach(std::span<const Part> parts, NcclType type, void* stream, const std::string& what) {
  if (static_cast<int>(parts.size()) != impl_->options.size) {
    throw std::invalid_argument("[nccl] " + what + ": expected one part per rank (" + std::to_string(impl_->options.size) +
                                "), got " + std::to_string(parts.size()));
  }
  impl_->Run(stream, what, [&] {
    ncclResult_t result = ncclGroupStart();
    if (result != ncclSuccess) return result;
    for (std::size_t q = 0; q < parts.size(); ++q) {
      result = ncclBroadcast(parts[q].in, parts[q].out, parts[q].count, NativeType(type), static_cast<int>(q),
                             impl_->comm, static_cast<cudaStream_t>(stream));
      if (result != ncclSuccess && result != ncclInProgress) {
        ncclGroupEnd();
        return result;
      }
    }
    return ncclGroupEnd();
  });
}

std::chrono::milliseconds CudaNcclCommunicator::Timeout() const { return impl_->options.timeout; }

std::optional<std::string> CudaNcclCommunicator::QueuedLongerThan(std::chrono::milliseconds wait) {
  std::lock_guard<std::mutex> lock(impl_->state);
  while (!impl_->queued.empty()) {
    CommunicatorState::Queued& oldest = impl_->queued.front();
    const cudaError_t status = cudaEventQuery(oldest.event);
    if (status == cudaErrorNotReady) {
      const Clock::duration waited = Clock::now() - oldest.queued;
      if (waited <= wait) return std::nullopt;
      return "'" + oldest.what + "' (queued " + Seconds(waited) + " ago)";
    }
    // Done, or the device failed (which the stream's own event reports to the call).
    impl_->free_events.push_back(oldest.event);
    impl_->queued.pop_front();
  }
  return std::nullopt;
}

std::string CudaNcclCommunicator::AsyncError() {
  std::lock_guard<std::mutex> lock(impl_->calls);
  if (impl_->comm == nullptr) return {};
  ncclResult_t state = ncclSuccess;
  if (ncclCommGetAsyncError(impl_->comm, &state) != ncclSuccess) return "ncclCommGetAsyncError failed";
  if (state == ncclSuccess || state == ncclInProgress) return {};
  return ncclGetErrorString(state);
}

void CudaNcclCommunicator::Abort(const std::string& why) noexcept {
  std::lock_guard<std::mutex> lock(impl_->calls);
  impl_->AbortLocked(why);
}

std::string CudaNcclCommunicator::Failure() const {
  std::lock_guard<std::mutex> lock(impl_->state);
  return impl_->failure;
}

}  // namespace

namespace cuda {

std::string NcclNewUniqueId() {
  ncclUniqueId id;
  WEIR_CUDA_CHECK(ncclGetUniqueId(&id));
  return std::string(id.internal, sizeof(id.internal));
}

std::unique_ptr<NcclCommunicator> JoinNccl(const NcclOptions& options) {
  return std::make_unique<CudaNcclCommunicator>(options);
}

}  // namespace cuda

}  // namespace weir::internal
