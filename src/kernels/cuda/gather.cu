// gather's launcher (kernels/cuda/gather.cpp declares it): a thread per output element, which checks
// its index (CheckIndex reports a bad one into the Run's slot) and copies one word.
#include <cstdint>

#include "common/cuda_check.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/gather.hpp"

namespace weir::internal::cuda {

namespace {

template <typename Word, typename Index>
__global__ void GatherKernel(GatherPlan plan, const Word* params, const Index* indices, Word* out, ReportRing reports) {
  WEIR_FOR_EACH_ELEMENT(e, plan.PerIndexElements()) {
    const std::int64_t n = plan.IndexOf(e);
    const std::int64_t index = indices[n];
    out[e] = CheckIndex(n, index, plan.axis_size, reports) ? params[plan.IndexedElement(e, index)] : Word{0};
  }
}

}  // namespace

template <typename Word, typename Index>
void Gather(void* stream, const GatherPlan& plan, const Word* params, const Index* indices, Word* out, ReportRing reports) {
  const std::int64_t count = plan.PerIndexElements();
  if (count == 0) return;
  GatherKernel<Word, Index><<<Blocks(count), kThreads, 0, Native(stream)>>>(plan, params, indices, out, reports);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

#define WEIR_INSTANTIATE(Word)                                                                                   \
  template void Gather<Word, std::int32_t>(void*, const GatherPlan&, const Word*, const std::int32_t*, Word*, \
                                           ReportRing);                                                       \
  template void Gather<Word, std::int64_t>(void*, const GatherPlan&, const Word*, const std::int64_t*, Word*, ReportRing);
WEIR_INSTANTIATE(std::uint8_t)
WEIR_INSTANTIATE(std::uint32_t)
WEIR_INSTANTIATE(std::uint64_t)
#undef WEIR_INSTANTIATE

}  // namespace weir::internal::cuda
