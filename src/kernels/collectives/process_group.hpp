#pragma once
// Collectives between the processes of a distributed session: one buffer per process (what the
// collective actor of that process holds after combining its own devices' pieces). Backends: Gloo
// for CPU devices (distributed/gloo_process_group.hpp), later NCCL between GPUs.
//
// Every process calls the same collectives in the same order (the planner chains a job's collective
// actors, and a session runs one call with cross-process collectives at a time). `what` names the
// collective (the actor's name) in errors. Every call is bounded by the group's timeout; a failure
// (a lost peer, a timeout) throws std::runtime_error naming the collective and the peer when known.
#include <cstdint>
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

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  /// "gloo", later "nccl".
  virtual std::string_view Backend() const = 0;
  virtual int Rank() const = 0;
  virtual int Size() const = 0;
  /// In place: `tensor` becomes op over every process's `tensor` (kMean divides by Size()).
  virtual void AllReduce(const TensorView& tensor, ReduceOp op, std::string_view what) = 0;
  /// In place: every process's `tensor` becomes process `root`'s.
  virtual void Broadcast(const TensorView& tensor, int root, std::string_view what) = 0;
};

}  // namespace weir::internal
