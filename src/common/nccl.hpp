#pragma once
// NCCL as plain C++ (no NCCL or CUDA header leaks out of here): one communicator between processes
// that hold one GPU each, whose collectives are queued on CUDA streams. The communicator lives in the
// CUDA backend (common/nccl.cu, in libweir_cuda); joining one loads the backend, and in a build without
// CUDA it throws.
//
// Nothing here waits without a bound. The communicator is NCCL's non-blocking kind: joining, and a
// collective that first has to connect its peers, return at once and are polled until done, until
// the deadline passes or until `broken` reports why the peers are gone; then the communicator is
// aborted. Queued collectives are watched through events: Stalled() names one that is late, and Abort()
// makes NCCL's kernels on the GPU give up, so that the streams behind them move on.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace weir::internal {

enum class NcclType : std::uint8_t { kF32, kF64, kI32, kI64, kU8 };
enum class NcclReduce : std::uint8_t { kSum, kAvg };

/// A fresh ncclUniqueId's bytes: rank 0 makes one, the others get it through the control plane.
std::string NcclNewUniqueId();

struct NcclOptions {
  std::string unique_id;  // NcclNewUniqueId() of rank 0
  int rank = 0;
  int size = 1;
  int device = 0;  // a plan's device index (common/cuda_runtime.hpp: CudaOrdinal)
  /// Bounds joining, connecting, and each queued collective (from when it is queued).
  std::chrono::milliseconds timeout{180000};
  /// Why the peers are gone (a lost rank, from the control plane), or empty while all is well;
  /// polled while waiting.
  std::function<std::string()> broken;
};

/// A joined communicator (JoinNccl). Finalizes when destroyed (bounded by the timeout), or aborts a
/// failed one.
class NcclCommunicator {
 public:
  virtual ~NcclCommunicator() = default;

  // Queued on `stream` (a MakeCudaDeviceStream's NativeHandle()); they return once queued. `what`
  // names the collective in Stalled(). Throw std::runtime_error once the communicator failed.

  /// out = op over every rank's `in` (they may be the same buffer).
  virtual void AllReduce(const void* in, void* out, std::size_t count, NcclType type, NcclReduce op, void* stream,
                         const std::string& what) = 0;
  /// out = rank root's `in` (read on root only; `in` may be `out`).
  virtual void Broadcast(const void* in, void* out, std::size_t count, NcclType type, int root, void* stream,
                         const std::string& what) = 0;
  /// Point to point (ncclSend / ncclRecv): `in` to rank `to`; `out` from rank `from`.
  virtual void Send(const void* in, std::size_t count, NcclType type, int to, void* stream, const std::string& what) = 0;
  virtual void Recv(void* out, std::size_t count, NcclType type, int from, void* stream, const std::string& what) = 0;
  /// One broadcast from every rank, as one NCCL group: parts[q].in (read on rank q only) to parts[q].out
  /// on every rank. parts.size() must be the communicator's size.
  struct Part {
    const void* in;
    void* out;
    std::size_t count;
  };
  virtual void BroadcastEach(std::span<const Part> parts, NcclType type, void* stream, const std::string& what) = 0;

  /// The oldest queued collective still running past its deadline, as "'what' (queued N s ago)", or
  /// nothing. Called by a watchdog thread.
  std::optional<std::string> Stalled() { return QueuedLongerThan(Timeout()); }
  /// The same for a collective queued longer than `wait`.
  virtual std::optional<std::string> QueuedLongerThan(std::chrono::milliseconds wait) = 0;
  /// The options' timeout.
  virtual std::chrono::milliseconds Timeout() const = 0;
  /// NCCL's asynchronous error (a failure it noticed on its own, such as a peer's socket closing), or
  /// empty.
  virtual std::string AsyncError() = 0;
  /// Ends the communicator: its queued collectives return (with garbage) and every later call throws
  /// std::runtime_error with `why`. Idempotent; safe from any thread.
  virtual void Abort(const std::string& why) noexcept = 0;
  /// Why the communicator failed, or empty.
  virtual std::string Failure() const = 0;
};

/// Joins the communicator. Throws std::runtime_error saying why when it does not form in time.
std::unique_ptr<NcclCommunicator> JoinNccl(const NcclOptions& options);

}  // namespace weir::internal
