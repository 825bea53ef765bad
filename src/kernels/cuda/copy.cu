// Copies on a device stream: bytes (identity, reshape, constants), zeroes, the train step's increment
// and learning rate (kernels/functors/learning_rate.hpp) and broadcasts (kernels/functors/binary.hpp's plan).
#include <cstdint>

#include "common/cuda_check.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.hpp"

namespace weir::internal::cuda {

namespace {

__global__ void IncrementKernel(std::int64_t* value) { ++*value; }

__global__ void LearningRateKernel(ScheduleView view, const std::int64_t* train_step, float* lr) {
  *lr = static_cast<float>(ScheduledLearningRate(view, *train_step));
}

template <typename T> __global__ void BroadcastCopyKernel(BroadcastPlan plan, const T* x, T* out, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x) {
    std::int64_t from = i, unused = 0;
    if (plan.rank > 0) plan.Offsets(i, from, unused);
    out[i] = x[from];
  }
}

}  // namespace

void CopyOnDevice(void* stream, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0 || dst == src) return;
  WEIR_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, Native(stream)));
}

void CopyBetweenMemories(void* stream, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  // Unified addressing: the runtime knows from the pointers whether each end is pinned host memory or
  // which device's.
  WEIR_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, Native(stream)));
}

void CopyFromHost(void* stream, void* dst, const void* host, std::size_t bytes) {
  if (bytes == 0) return;
  WEIR_CUDA_CHECK(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, Native(stream)));
}

void CopyRows(void* stream, void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t width,
              std::size_t height) {
  if (width == 0 || height == 0) return;
  WEIR_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, height, cudaMemcpyDeviceToDevice, Native(stream)));
}

void Zero(void* stream, void* memory, std::size_t bytes) {
  if (bytes != 0) WEIR_CUDA_CHECK(cudaMemsetAsync(memory, 0, bytes, Native(stream)));
}

void Increment(void* stream, std::int64_t* value) {
  IncrementKernel<<<1, 1, 0, Native(stream)>>>(value);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

void LearningRate(void* stream, const ScheduleView& view, const std::int64_t* train_step, float* lr) {
  LearningRateKernel<<<1, 1, 0, Native(stream)>>>(view, train_step, lr);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T> void BroadcastCopy(void* stream, const BroadcastPlan& plan, const T* x, T* out, std::int64_t count) {
  if (count == 0) return;
  BroadcastCopyKernel<T><<<Blocks(count), kThreads, 0, Native(stream)>>>(plan, x, out, count);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template void BroadcastCopy<std::uint8_t>(void*, const BroadcastPlan&, const std::uint8_t*, std::uint8_t*, std::int64_t);
template void BroadcastCopy<std::uint16_t>(void*, const BroadcastPlan&, const std::uint16_t*, std::uint16_t*, std::int64_t);
template void BroadcastCopy<std::uint32_t>(void*, const BroadcastPlan&, const std::uint32_t*, std::uint32_t*, std::int64_t);
template void BroadcastCopy<std::uint64_t>(void*, const BroadcastPlan&, const std::uint64_t*, std::uint64_t*, std::int64_t);

}  // namespace weir::internal::cuda
