#pragma once
// The math of the in-process collectives' reductions, for the CPU's shared-memory communicator and the
// CUDA collective kernel of several GPUs in one process (whose pieces the planner has copied onto the
// collective's GPU): one element of the sum, or mean, of every device's piece, added in device order.
#include <cstdint>

#include "kernels/functors/host_device.hpp"

namespace weir::internal {

/// Pieces a CUDA reduction of one launch takes: a process's GPUs (8 on the largest machines; 16
/// leaves room). The pointers travel by value in the launch's arguments.
inline constexpr int kMaxReducedPieces = 16;

/// pieces[0][i] + pieces[1][i] + ... (in that order), divided by the count for a mean.
template <typename T>
WEIR_HOST_DEVICE T ReducePiecesAt(const T* const* pieces, int count, std::int64_t i, bool mean) {
  T sum = pieces[0][i];
  for (int k = 1; k < count; ++k) sum += pieces[k][i];
  if (mean) sum /= static_cast<T>(count);
  return sum;
}

}  // namespace weir::internal
