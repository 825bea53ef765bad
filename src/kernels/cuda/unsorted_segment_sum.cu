// unsorted_segment_sum's launcher (kernels/cuda/unsorted_segment_sum.cpp declares it): a thread per
// data element, which checks its id (CheckIndex reports a bad one into the Run's slot) and adds the
// element into its segment atomically.
#include <cstdint>

#include "common/cuda_check.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/gather.hpp"

namespace weir::internal::cuda {

namespace {

__device__ inline void AtomicAdd(float* to, float value) { atomicAdd(to, value); }
__device__ inline void AtomicAdd(double* to, double value) { atomicAdd(to, value); }
__device__ inline void AtomicAdd(std::int32_t* to, std::int32_t value) { atomicAdd(reinterpret_cast<int*>(to), value); }
// Two's complement: adding the bits as unsigned adds the signed values.
__device__ inline void AtomicAdd(std::int64_t* to, std::int64_t value) {
  atomicAdd(reinterpret_cast<unsigned long long*>(to), static_cast<unsigned long long>(value));
}

template <typename T, typename Index>
__global__ void UnsortedSegmentSumKernel(GatherPlan plan, const T* data, const Index* ids, T* out, ReportRing reports) {
  WEIR_FOR_EACH_ELEMENT(e, plan.PerIndexElements()) {
    const std::int64_t n = plan.IndexOf(e);
    const std::int64_t id = ids[n];
    if (CheckIndex(n, id, plan.axis_size, reports)) AtomicAdd(out + plan.IndexedElement(e, id), data[e]);
  }
}

}  // namespace

template <typename T, typename Index>
void UnsortedSegmentSum(void* stream, const GatherPlan& plan, const T* data, const Index* ids, T* out, ReportRing reports) {
  const std::int64_t count = plan.PerIndexElements();
  if (count == 0) return;
  UnsortedSegmentSumKernel<T, Index><<<Blocks(count), kThreads, 0, Native(stream)>>>(plan, data, ids, out, reports);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

#define WEIR_INSTANTIATE(T)                                                                                            \
  template void UnsortedSegmentSum<T, std::int32_t>(void*, const GatherPlan&, const T*, const std::int32_t*, T*, ReportRing); \
  template void UnsortedSegmentSum<T, std::int64_t>(void*, const GatherPlan&, const T*, const std::int64_t*, T*, ReportRing);
WEIR_INSTANTIATE(float)
WEIR_INSTANTIATE(double)
WEIR_INSTANTIATE(std::int32_t)
WEIR_INSTANTIATE(std::int64_t)
#undef WEIR_INSTANTIATE

}  // namespace weir::internal::cuda
