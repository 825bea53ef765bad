#pragma once
// Collectives between the processes of a distributed session: one buffer per process (what the
// collective actor of that process holds after combining its own devices' pieces). Backends: Gloo
// and shared memory for CPU devices (distributed/gloo_process_group.hpp, shm_process_group.hpp),
// NCCL between processes with one GPU each (distributed/nccl_process_group.hpp).
//
// Every process calls the same collectives in the same order (the planner chains a job's collective
// actors, call after call: graph/planner/process_split.hpp, GateCollectiveCalls; and a session does not overlap
// the calls of two jobs with cross-process collectives). `what` names the
// collective (the actor's name) in errors. Every call is bounded by the group's timeout; a failure
// (a lost peer, a timeout) throws std::runtime_error naming the collective and the peer when known.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "common/tensor_meta.hpp"
#include "kernels/collectives/communicator.hpp"

namespace weir::internal {

/// Calls fn(T{}) with T the element type of a dtype the groups reduce (f32, f64, i32, i64); throws
/// std::invalid_argument naming the dtype otherwise. Both backends' all-reduce dispatch through it.
template <typename Fn>
void ForReducibleDType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kF32: return fn(float{});
    case DType::kF64: return fn(double{});
    case DType::kI32: return fn(std::int32_t{});
    case DType::kI64: return fn(std::int64_t{});
    default: throw std::invalid_argument(fmt::format("all-reduce of {} is not supported (f32, f64, i32, i64 are)", dtype));
  }
}

/// A collective that failed because another process left the group: it closed its session (or its
/// job's group) while this one still waited in a collective of that job (the processes made different
/// numbers of calls). The session adds this process's side (its call of which job) to the message.
class PeerLeftError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  /// "gloo", "shm" or "nccl".
  virtual std::string_view Backend() const = 0;
  virtual int Rank() const = 0;
  virtual int Size() const = 0;
  /// Set once a collective of this group failed (a lost peer, a timeout): its processes no longer agree
  /// on which collective comes next. Shared, so that whoever keeps it (the session, closing) can read it
  /// after the group is gone.
  std::shared_ptr<const std::atomic<bool>> FailedFlag() const { return failed_; }

 protected:
  void MarkFailed() { failed_->store(true, std::memory_order_relaxed); }

 private:
  std::shared_ptr<std::atomic<bool>> failed_ = std::make_shared<std::atomic<bool>>(false);
};

/// Collectives on host memory (Gloo, shared memory): each call returns when it is done.
class HostProcessGroup : public ProcessGroup {
 public:
  /// In place: `tensor` becomes op over every process's `tensor` (kMean divides by Size()).
  virtual void AllReduce(const TensorView& tensor, ReduceOp op, std::string_view what) = 0;
  /// In place: every process's `tensor` becomes process `root`'s.
  virtual void Broadcast(const TensorView& tensor, int root, std::string_view what) = 0;
  /// Point to point: `tensor` to process `to`, whose matching Recv takes it. Only the two processes
  /// call; each pair's sends and receives match in the order they are made.
  virtual void Send(const ConstTensorView& tensor, int to, std::string_view what) = 0;
  /// Point to point: `tensor` becomes what process `from` sends.
  virtual void Recv(const TensorView& tensor, int from, std::string_view what) = 0;
  /// Send and Recv at once, neither waiting for the other to finish: every process exchanging with its
  /// neighbours in a ring this way cannot deadlock.
  virtual void SendRecv(const ConstTensorView& send, int to, const TensorView& recv, int from, std::string_view what) = 0;
  /// A fusion bucket's tensors below this many bytes cross the processes packed into one buffer, one
  /// collective for all of them: copying a tensor in and out costs less than one more collective's
  /// latency here. Larger ones go in place, one collective each.
  virtual std::size_t PackBelowBytes() const = 0;
};

/// Collectives on device memory between processes that hold one GPU each (NCCL): each call queues the
/// work on `stream` (the calling kernel's CUDA stream) and returns; the stream's event tells when it is
/// done. A lost rank or a collective stalled past the timeout aborts the group: its queued work ends,
/// and ThrowIfFailed, which the kernels call once their work's event has completed, fails the call.
class DeviceProcessGroup : public ProcessGroup {
 public:
  /// out = op over every process's `in` (kMean divides by Size()); `out` may be `in`.
  virtual void AllReduce(const ConstTensorView& in, const TensorView& out, ReduceOp op, void* stream,
                         std::string_view what) = 0;
  /// In place: every process's `tensor` becomes process `root`'s.
  virtual void Broadcast(const TensorView& tensor, int root, void* stream, std::string_view what) = 0;
  /// Point to point, as HostProcessGroup's.
  virtual void Send(const ConstTensorView& tensor, int to, void* stream, std::string_view what) = 0;
  virtual void Recv(const TensorView& tensor, int from, void* stream, std::string_view what) = 0;
  /// packed[q] becomes process q's packed[q], for every q at once (one group of broadcasts): the
  /// gather of pieces that the processes hold, of any sizes. packed.size() is Size().
  virtual void BroadcastEach(std::span<const TensorView> packed, void* stream, std::string_view what) = 0;
  /// Throws std::runtime_error naming the lost rank or the stalled collective once the group failed.
  virtual void ThrowIfFailed(std::string_view what) = 0;
};

}  // namespace weir::internal
