// compare's launcher (kernels/cuda/compare.cpp declares it): one grid-stride loop per comparison kind
// over the broadcast plan of kernels/functors/binary.hpp, the math of kernels/functors/compare.hpp.
#include <cstdint>

#include "common/cuda_check.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/binary.hpp"
#include "kernels/functors/compare.hpp"

namespace weir::internal::cuda {

namespace {

template <typename T, typename Op>
__global__ void CompareKernel(BroadcastPlan plan, const T* a, const T* b, std::int8_t* out, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x) {
    std::int64_t at_a = i, at_b = i;
    if (plan.rank > 0) plan.Offsets(i, at_a, at_b);
    out[i] = Op::Apply(a[at_a], b[at_b]);
  }
}

}  // namespace

template <typename T>
void Compare(void* stream, CompareOpKind kind, const BroadcastPlan& plan, const T* a, const T* b, std::int8_t* out,
             std::int64_t count) {
  if (count == 0) return;
  WithCompareOp(kind, [&](auto op) {
    CompareKernel<T, decltype(op)><<<Blocks(count), kThreads, 0, Native(stream)>>>(plan, a, b, out, count);
  });
  WEIR_CUDA_CHECK(cudaGetLastError());
}

#define WEIR_INSTANTIATE(T)                                                                                   \
  template void Compare<T>(void*, CompareOpKind, const BroadcastPlan&, const T*, const T*, std::int8_t*, \
                           std::int64_t);
WEIR_INSTANTIATE(float)
WEIR_INSTANTIATE(double)
WEIR_INSTANTIATE(std::int32_t)
WEIR_INSTANTIATE(std::int64_t)
WEIR_INSTANTIATE(std::uint8_t)
WEIR_INSTANTIATE(std::int8_t)
#undef WEIR_INSTANTIATE

}  // namespace weir::internal::cuda
