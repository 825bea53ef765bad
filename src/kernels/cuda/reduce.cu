// The reduction launcher: one block per output element (grid-striding over outputs), or, for a few
// long sums, several blocks per output whose partials a second launch adds (ReduceSplit); the threads
// stride over the reduced elements, accumulate in ReduceAcc (double for floats, wrapping uint64 for
// integers, as the CPU does) and combine in shared memory.
#include <cstdint>
#include <type_traits>

#include "common/cuda_check.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.hpp"

namespace weir::internal::cuda {

namespace {

// An output from its accumulated sum: the mean divides by the reduced count (floats only).
template <typename T> __device__ T Finished(ReduceAcc<T> total, bool mean, std::int64_t reduced_count) {
  if constexpr (std::is_floating_point_v<T>) return static_cast<T>(mean ? total / static_cast<double>(reduced_count) : total);
  return static_cast<T>(total);
}

template <typename T>
__global__ void ReduceKernel(ReductionPlan plan, bool mean, const T* x, T* y, std::int64_t outputs) {
  using Acc = ReduceAcc<T>;
  for (std::int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    Acc sum = 0;
    for (std::int64_t r = threadIdx.x; r < plan.reduced_count; r += blockDim.x) sum += static_cast<Acc>(x[plan.Offset(o, r)]);
    const Acc total = BlockSum(sum);
    if (threadIdx.x == 0) y[o] = Finished<T>(total, mean, plan.reduced_count);
  }
}

// Block b sums part b % parts of output b / parts into partials[b].
template <typename T>
__global__ void ReducePartsKernel(ReductionPlan plan, ReduceSplit split, const T* x, ReduceAcc<T>* partials, std::int64_t blocks) {
  using Acc = ReduceAcc<T>;
  for (std::int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    const std::int64_t o = b / split.parts, begin = (b % split.parts) * split.chunk;
    const std::int64_t end = begin + split.chunk < plan.reduced_count ? begin + split.chunk : plan.reduced_count;
    Acc sum = 0;
    for (std::int64_t r = begin + threadIdx.x; r < end; r += blockDim.x) sum += static_cast<Acc>(x[plan.Offset(o, r)]);
    const Acc total = BlockSum(sum);
    if (threadIdx.x == 0) partials[b] = total;
  }
}

// A block per output adds its partials.
template <typename T>
__global__ void CombinePartsKernel(ReduceSplit split, std::int64_t reduced_count, bool mean, const ReduceAcc<T>* partials,
                                   T* y, std::int64_t outputs) {
  using Acc = ReduceAcc<T>;
  for (std::int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    Acc sum = 0;
    for (std::int64_t p = threadIdx.x; p < split.parts; p += blockDim.x) sum += partials[o * split.parts + p];
    const Acc total = BlockSum(sum);
    if (threadIdx.x == 0) y[o] = Finished<T>(total, mean, reduced_count);
  }
}

template <typename T, typename Op>
__global__ void ExtremumKernel(ReductionPlan plan, const T* x, T* y, std::int64_t outputs) {
  for (std::int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    T acc = Op::template Identity<T>();
    for (std::int64_t r = threadIdx.x; r < plan.reduced_count; r += blockDim.x) acc = Op::Combine(acc, x[plan.Offset(o, r)]);
    acc = BlockCombine(acc, [](T a, T b) { return Op::Combine(a, b); });
    if (threadIdx.x == 0) y[o] = acc;
  }
}

// A block per output: count the elements equal to y[o] (the ties), then spread dy[o] over them.
template <typename T>
__global__ void ExtremumGradKernel(ReductionPlan plan, const T* x, const T* y, const T* dy, T* dx, std::int64_t outputs) {
  for (std::int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    std::int64_t count = 0;
    for (std::int64_t r = threadIdx.x; r < plan.reduced_count; r += blockDim.x) count += x[plan.Offset(o, r)] == y[o];
    const std::int64_t ties = BlockSum(count);
    const T share = ties > 0 ? dy[o] / static_cast<T>(ties) : T(0);
    for (std::int64_t r = threadIdx.x; r < plan.reduced_count; r += blockDim.x) {
      const std::int64_t at = plan.Offset(o, r);
      dx[at] = x[at] == y[o] ? share : T(0);
    }
  }
}

template <typename T> __global__ void AddSquaresKernel(const T* x, std::int64_t count, double* square_sum) {
  double sum = 0;
  WEIR_FOR_EACH_ELEMENT(i, count) { sum += static_cast<double>(x[i]) * x[i]; }
  sum = BlockSum(sum);
  if (threadIdx.x == 0) atomicAdd(square_sum, sum);
}

template <typename T>
__global__ void ScaleByGlobalNormKernel(const T* x, T* y, std::int64_t count, const double* square_sum, double scale,
                                        double clip) {
  const double norm = scale * sqrt(*square_sum);
  const T factor = static_cast<T>(clip / (norm > clip ? norm : clip));
  WEIR_FOR_EACH_ELEMENT(i, count) { y[i] = x[i] * factor; }
}


}  // namespace

template <typename T>
void ReduceExtremum(void* stream, const ReductionPlan& plan, bool max, const T* x, T* y, std::int64_t outputs) {
  if (outputs == 0) return;
  if (max) {
    ExtremumKernel<T, MaxOp><<<BlockPerItem(outputs), kThreads, 0, Native(stream)>>>(plan, x, y, outputs);
  } else {
    ExtremumKernel<T, MinOp><<<BlockPerItem(outputs), kThreads, 0, Native(stream)>>>(plan, x, y, outputs);
  }
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void ReduceExtremumGrad(void* stream, const ReductionPlan& plan, const T* x, const T* y, const T* dy, T* dx,
                        std::int64_t outputs) {
  if (outputs == 0) return;
  ExtremumGradKernel<T><<<BlockPerItem(outputs), kThreads, 0, Native(stream)>>>(plan, x, y, dy, dx,
                                                                                                   outputs);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template void ReduceExtremum<float>(void*, const ReductionPlan&, bool, const float*, float*, std::int64_t);
template void ReduceExtremum<double>(void*, const ReductionPlan&, bool, const double*, double*, std::int64_t);
template void ReduceExtremum<std::int32_t>(void*, const ReductionPlan&, bool, const std::int32_t*, std::int32_t*, std::int64_t);
template void ReduceExtremum<std::int64_t>(void*, const ReductionPlan&, bool, const std::int64_t*, std::int64_t*, std::int64_t);
template void ReduceExtremumGrad<float>(void*, const ReductionPlan&, const float*, const float*, const float*, float*,
                                        std::int64_t);
template void ReduceExtremumGrad<double>(void*, const ReductionPlan&, const double*, const double*, const double*, double*,
                                         std::int64_t);

void Zero(void* stream, void* memory, std::size_t bytes) {
  if (bytes != 0) WEIR_CUDA_CHECK(cudaMemsetAsync(memory, 0, bytes, Native(stream)));
}

template <typename T> void AddSquares(void* stream, const T* x, std::int64_t count, double* square_sum) {
  if (count == 0) return;
  AddSquaresKernel<T><<<Blocks(count), kThreads, 0, Native(stream)>>>(x, count, square_sum);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void ScaleByGlobalNorm(void* stream, const T* x, T* y, std::int64_t count, const double* square_sum, double scale,
                       double clip) {
  if (count == 0) return;
  ScaleByGlobalNormKernel<T><<<Blocks(count), kThreads, 0, Native(stream)>>>(x, y, count, square_sum, scale, clip);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template void AddSquares<float>(void*, const float*, std::int64_t, double*);
template void AddSquares<double>(void*, const double*, std::int64_t, double*);
template void ScaleByGlobalNorm<float>(void*, const float*, float*, std::int64_t, const double*, double, double);
template void ScaleByGlobalNorm<double>(void*, const double*, double*, std::int64_t, const double*, double, double);

template <typename T>
void Reduce(void* stream, const ReductionPlan& plan, bool mean, const T* x, T* y, std::int64_t outputs,
            const ReduceSplit& split, void* partials) {
  if (outputs == 0) return;
  if (split.parts <= 1) {
    ReduceKernel<T><<<BlockPerItem(outputs), kThreads, 0, Native(stream)>>>(plan, mean, x, y, outputs);
    WEIR_CUDA_CHECK(cudaGetLastError());
    return;
  }
  auto* sums = static_cast<ReduceAcc<T>*>(partials);
  const std::int64_t blocks = outputs * split.parts;
  ReducePartsKernel<T><<<BlockPerItem(blocks), kThreads, 0, Native(stream)>>>(plan, split, x, sums, blocks);
  WEIR_CUDA_CHECK(cudaGetLastError());
  CombinePartsKernel<T><<<BlockPerItem(outputs), kThreads, 0, Native(stream)>>>(split, plan.reduced_count, mean, sums, y,
                                                                                 outputs);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

#define WEIR_INSTANTIATE_REDUCE(T) \
  template void Reduce<T>(void*, const ReductionPlan&, bool, const T*, T*, std::int64_t, const ReduceSplit&, void*);
WEIR_INSTANTIATE_REDUCE(float)
WEIR_INSTANTIATE_REDUCE(double)
WEIR_INSTANTIATE_REDUCE(std::int32_t)
WEIR_INSTANTIATE_REDUCE(std::int64_t)
#undef WEIR_INSTANTIATE_REDUCE

}  // namespace weir::internal::cuda
