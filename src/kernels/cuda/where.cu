// where's launcher (kernels/cuda/where.cpp declares it): a thread per output element.
#include <cstdint>

#include "common/cuda_check.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/where.hpp"

namespace weir::internal::cuda {

namespace {

template <typename Condition, typename Word>
__global__ void WhereKernel(WherePlan plan, const Condition* condition, const Word* x, const Word* y, Word* out,
                            std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) {
    std::int64_t c = 0, from_x = 0, from_y = 0;
    plan.Offsets(i, c, from_x, from_y);
    out[i] = condition[c] != 0 ? x[from_x] : y[from_y];
  }
}

}  // namespace

template <typename Condition, typename Word>
void Where(void* stream, const WherePlan& plan, const Condition* condition, const Word* x, const Word* y, Word* out,
           std::int64_t count) {
  if (count == 0) return;
  WhereKernel<Condition, Word><<<Blocks(count), kThreads, 0, Native(stream)>>>(plan, condition, x, y, out, count);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

#define WEIR_INSTANTIATE(Condition, Word)                                                                   \
  template void Where<Condition, Word>(void*, const WherePlan&, const Condition*, const Word*, const Word*, \
                                       Word*, std::int64_t);
#define WEIR_INSTANTIATE_WORDS(Condition)        \
  WEIR_INSTANTIATE(Condition, std::uint8_t)      \
  WEIR_INSTANTIATE(Condition, std::uint32_t)     \
  WEIR_INSTANTIATE(Condition, std::uint64_t)
WEIR_INSTANTIATE_WORDS(std::uint8_t)
WEIR_INSTANTIATE_WORDS(std::uint32_t)
WEIR_INSTANTIATE_WORDS(std::uint64_t)
#undef WEIR_INSTANTIATE_WORDS
#undef WEIR_INSTANTIATE

}  // namespace weir::internal::cuda
