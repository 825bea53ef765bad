#pragma once
// The launch shape every Weir CUDA launcher uses: 256 threads a block, enough blocks to cover the
// elements (capped where more would only queue), and a grid-stride loop over them.
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include <cuda_runtime.h>

#include "common/cuda_check.cuh"

#include "kernels/cuda/launch.hpp"

namespace weir::internal::cuda {

inline constexpr int kThreads = 256;

inline unsigned Blocks(std::int64_t count, int threads = kThreads) {
  const std::int64_t blocks = (count + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > 65535 * 8 ? 65535 * 8 : blocks);
}

/// A block per item (a channel, an output), capped; the kernel strides blocks over the rest.
inline unsigned BlockPerItem(std::int64_t items) { return Blocks(items, 1); }

inline cudaStream_t Native(void* stream) { return static_cast<cudaStream_t>(stream); }

/// `value` as the int that cuBLAS's and cuDNN's sizes are; throws naming the op and the size when it
/// does not fit.
inline int LibraryDim(std::int64_t value, const char* op, const char* what) {
  if (value < 0 || value > INT_MAX) {
    throw std::invalid_argument(std::string("[") + op + "] " + what + " " + std::to_string(value) +
                                " is beyond the 32-bit sizes that cuBLAS and cuDNN take");
  }
  return static_cast<int>(value);
}

/// `value` combined over the block's threads (every thread of a kThreads block calls it) by a tree in
/// shared memory, returned to every thread. The block synchronises inside.
template <typename T, typename Combine> __device__ T BlockCombine(T value, Combine combine) {
  __shared__ T partial[kThreads];
  partial[threadIdx.x] = value;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) partial[threadIdx.x] = combine(partial[threadIdx.x], partial[threadIdx.x + width]);
    __syncthreads();
  }
  const T result = partial[0];
  __syncthreads();  // partial may be reused by the block's next call
  return result;
}

/// True when 0 <= index < bound; otherwise reports (position, index) into the Run's slot of `reports`
/// (kernels/cuda/cuda_kernel.hpp's DeviceReports decodes it): the lowest position wins, the index's
/// low 32 bits kept. Only a failing check reads the ring's counter (mapped host memory).
__device__ inline bool CheckIndex(std::int64_t position, std::int64_t index, std::int64_t bound, const ReportRing& reports) {
  if (index >= 0 && index < bound) return true;
  const std::uint64_t run = *static_cast<volatile const std::uint64_t*>(reports.counter);
  std::int64_t* report = reports.slots + run % reports.size;
  const auto key = static_cast<unsigned long long>((position << 32) | (static_cast<std::uint64_t>(index) & 0xffffffffull));
  atomicMin(reinterpret_cast<unsigned long long*>(report), key);
  return false;
}

/// Queues `kernel` over `count` elements (Blocks(count) blocks of kThreads, the kernel looping with
/// WEIR_FOR_EACH_ELEMENT) on the stream, and checks the launch; nothing for no elements.
template <typename... Params, typename... Args>
void LaunchOver(void* stream, std::int64_t count, void (*kernel)(Params...), Args&&... args) {
  if (count == 0) return;
  kernel<<<Blocks(count), kThreads, 0, Native(stream)>>>(std::forward<Args>(args)...);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

/// Queues `kernel` with a block of kThreads per item (a channel, an output; BlockPerItem caps the
/// grid, the kernel strides blocks over the rest) on the stream, and checks the launch; nothing for no items.
template <typename... Params, typename... Args>
void LaunchPerItem(void* stream, std::int64_t items, void (*kernel)(Params...), Args&&... args) {
  if (items == 0) return;
  kernel<<<BlockPerItem(items), kThreads, 0, Native(stream)>>>(std::forward<Args>(args)...);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T> __device__ T BlockSum(T value) {
  return BlockCombine(value, [](T a, T b) { return a + b; });
}

}  // namespace weir::internal::cuda

/// for (i = this thread's first element; i < count; i += the grid's threads)
#define WEIR_FOR_EACH_ELEMENT(i, count)                                                                \
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < (count); \
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x)
