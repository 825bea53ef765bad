#pragma once
// Rows of a tensor's last axis, each reduced (a maximum, a sum) and then written by a team of threads
// running the row math of kernels/functors/ (softmax.hpp's SerialTeam has the members these have):
// a warp per row for rows of up to kWarpRowLimit elements (eight rows a block, the reductions in
// registers), a block of kThreads per row for longer ones (a cross entropy over a vocabulary). The
// team's threads read the row's neighbouring elements together. A thread per row, as the softmax
// kernels were first written, read memory a row length apart from thread to thread: BERT's masked-LM
// loss over 30,522 classes took 11 ms forward and 22 ms backward on an H200.
//
//   for (std::int64_t r = Team::FirstRow(); r < rows; r += Team::RowStride()) {   // uniform in a team
//     for (std::int64_t c = Team::Lane(); c < n; c += Team::kSize) ...              // the lane's share
//     total = Team::Reduce(part, Plus{});                                           // to every lane
//   }
#include <cstdint>
#include <utility>

#include "kernels/cuda/grid.cuh"

namespace weir::internal::cuda {

/// Rows at most this long get a warp each; longer rows a block.
inline constexpr std::int64_t kWarpRowLimit = 1024;

struct WarpPerRow {
  static constexpr int kSize = 32;
  static constexpr int kRowsPerBlock = kThreads / kSize;
  __device__ static int Lane() { return static_cast<int>(threadIdx.x) % kSize; }
  __device__ static std::int64_t FirstRow() {
    return static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + static_cast<std::int64_t>(threadIdx.x) / kSize;
  }
  __device__ static std::int64_t RowStride() { return static_cast<std::int64_t>(gridDim.x) * kRowsPerBlock; }
  /// `value` combined over the warp, returned to every lane (all 32 must call it).
  template <typename T, typename Combine> __device__ static T Reduce(T value, Combine combine) {
    for (int offset = kSize / 2; offset > 0; offset /= 2) value = combine(value, __shfl_xor_sync(0xffffffffu, value, offset));
    return value;
  }
};

struct BlockPerRow {
  static constexpr int kSize = kThreads;
  __device__ static int Lane() { return static_cast<int>(threadIdx.x); }
  __device__ static std::int64_t FirstRow() { return blockIdx.x; }
  __device__ static std::int64_t RowStride() { return gridDim.x; }
  /// `value` combined over the block, returned to every thread (all must call it).
  template <typename T, typename Combine> __device__ static T Reduce(T value, Combine combine) {
    return BlockCombine(value, combine);
  }
};

/// Queues `warp_kernel` (a warp a row) where rows are at most kWarpRowLimit long, else `block_kernel`
/// (a block a row), over `rows` rows, and checks the launch; nothing for no rows. The two are one
/// kernel template instantiated for WarpPerRow and BlockPerRow.
template <typename... Params, typename... Args>
void LaunchRows(void* stream, std::int64_t rows, std::int64_t length, void (*warp_kernel)(Params...),
                void (*block_kernel)(Params...), Args&&... args) {
  if (rows == 0) return;
  if (length <= kWarpRowLimit) {
    warp_kernel<<<Blocks(rows, WarpPerRow::kRowsPerBlock), kThreads, 0, Native(stream)>>>(std::forward<Args>(args)...);
  } else {
    block_kernel<<<BlockPerItem(rows), kThreads, 0, Native(stream)>>>(std::forward<Args>(args)...);
  }
  WEIR_CUDA_CHECK(cudaGetLastError());
}

}  // namespace weir::internal::cuda
