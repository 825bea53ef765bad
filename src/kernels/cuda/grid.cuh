#pragma once
// The launch shape every Weir CUDA launcher uses: 256 threads a block, enough blocks to cover the
// elements (capped where more would only queue), and a grid-stride loop over them.
#include <cstdint>

#include <cuda_runtime.h>

namespace weir::internal::cuda {

inline constexpr int kThreads = 256;

inline unsigned Blocks(std::int64_t count, int threads = kThreads) {
  const std::int64_t blocks = (count + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > 65535 * 8 ? 65535 * 8 : blocks);
}

inline cudaStream_t Native(void* stream) { return static_cast<cudaStream_t>(stream); }

/// The sum of `value` over the block's threads (every thread of a kThreads block calls it), returned
/// to every thread. Uses shared memory, so the block synchronises inside.
__device__ inline double BlockSum(double value) {
  __shared__ double partial[kThreads];
  partial[threadIdx.x] = value;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) partial[threadIdx.x] += partial[threadIdx.x + width];
    __syncthreads();
  }
  const double sum = partial[0];
  __syncthreads();  // partial may be reused by the block's next call
  return sum;
}

}  // namespace weir::internal::cuda

/// for (i = this thread's first element; i < count; i += the grid's threads)
#define WEIR_FOR_EACH_ELEMENT(i, count)                                                                \
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < (count); \
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x)
