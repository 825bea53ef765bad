#pragma once
// NCCL as plain C++ (no NCCL or CUDA header leaks out of here): one communicator between processes
// that hold one GPU each, whose collectives are queued on CUDA streams. In a build without CUDA,
// joining one throws (common/cuda_runtime_none.cpp).
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

class NcclCommunicator {
 public:
  /// Joins the communicator. Throws std::runtime_error saying why when it does not form in time.
  explicit NcclCommunicator(const NcclOptions& options);
  /// Finalizes (bounded by the timeout), or aborts a failed communicator.
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  // Queued on `stream` (a MakeCudaDeviceStream's NativeHandle()); they return once queued. `what`
  // names the collective in Stalled(). Throw std::runtime_error once the communicator failed.

  /// out = op over every rank's `in` (they may be the same buffer).
  void AllReduce(const void* in, void* out, std::size_t count, NcclType type, NcclReduce op, void* stream,
                 const std::string& what);
  /// out = rank root's `in` (read on root only; `in` may be `out`).
  void Broadcast(const void* in, void* out, std::size_t count, NcclType type, int root, void* stream,
                 const std::string& what);
  /// Point to point (ncclSend / ncclRecv): `in` to rank `to`; `out` from rank `from`.
  void Send(const void* in, std::size_t count, NcclType type, int to, void* stream, const std::string& what);
  void Recv(void* out, std::size_t count, NcclType type, int from, void* stream, const std::string& what);
  /// One broadcast from every rank, as one NCCL group: parts[q].in (read on rank q only) to parts[q].out
  /// on every rank. parts.size() must be the communicator's size.
  struct Part {
    const void* in;
    void* out;
    std::size_t count;
  };
  void BroadcastEach(std::span<const Part> parts, NcclType type, void* stream, const std::string& what);

  /// The oldest queued collective still running past its deadline, as "'what' (queued N s ago)", or
  /// nothing. Called by a watchdog thread.
  std::optional<std::string> Stalled() { return QueuedLongerThan(Timeout()); }
  /// The same for a collective queued longer than `wait`.
  std::optional<std::string> QueuedLongerThan(std::chrono::milliseconds wait);
  /// The options' timeout.
  std::chrono::milliseconds Timeout() const;
  /// NCCL's asynchronous error (a failure it noticed on its own, such as a peer's socket closing), or
  /// empty.
  std::string AsyncError();
  /// Ends the communicator: its queued collectives return (with garbage) and every later call throws
  /// std::runtime_error with `why`. Idempotent; safe from any thread.
  void Abort(const std::string& why) noexcept;
  /// Why the communicator failed, or empty.
  std::string Failure() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weir::internal
