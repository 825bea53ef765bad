// The reduction launcher: one block per output element (grid-striding over outputs); its threads
// stride over the reduced elements, accumulate in ReduceAcc (double for floats, wrapping uint64 for
// integers, as the CPU does) and combine in shared memory.
#include <cstdint>
#include <type_traits>

#include "common/cuda_check.cuh"
#include "kernels/cuda/launch.hpp"

namespace weir::internal::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void ReduceKernel(ReductionPlan plan, bool mean, const T* x, T* y, std::int64_t outputs) {
  using Acc = ReduceAcc<T>;
  __shared__ Acc partial[kThreads];
  for (std::int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    Acc sum = 0;
    for (std::int64_t r = threadIdx.x; r < plan.reduced_count; r += blockDim.x) sum += static_cast<Acc>(x[plan.Offset(o, r)]);
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int width = kThreads / 2; width > 0; width /= 2) {
      if (threadIdx.x < width) partial[threadIdx.x] += partial[threadIdx.x + width];
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      const Acc total = partial[0];
      if constexpr (std::is_floating_point_v<T>) {
        y[o] = static_cast<T>(mean ? total / static_cast<double>(plan.reduced_count) : total);
      } else {
        y[o] = static_cast<T>(total);
      }
    }
    __syncthreads();  // partial is reused by the block's next output
  }
}

}  // namespace

template <typename T>
void Reduce(void* stream, const ReductionPlan& plan, bool mean, const T* x, T* y, std::int64_t outputs) {
  if (outputs == 0) return;
  const unsigned blocks = static_cast<unsigned>(outputs < 65535 * 8 ? outputs : 65535 * 8);
  ReduceKernel<T><<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(plan, mean, x, y, outputs);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template void Reduce<float>(void*, const ReductionPlan&, bool, const float*, float*, std::int64_t);
template void Reduce<double>(void*, const ReductionPlan&, bool, const double*, double*, std::int64_t);
template void Reduce<std::int32_t>(void*, const ReductionPlan&, bool, const std::int32_t*, std::int32_t*, std::int64_t);
template void Reduce<std::int64_t>(void*, const ReductionPlan&, bool, const std::int64_t*, std::int64_t*, std::int64_t);

}  // namespace weir::internal::cuda
