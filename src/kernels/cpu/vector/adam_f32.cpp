#include "kernels/cpu/vector/adam_f32.hpp"

namespace weir::internal {
namespace {

// With kLazy a compile-time constant the plain Adam loop has no branch left, so it vectorizes; inlined
// into each clone, so that each is built for its instruction set.
template <bool kLazy>
[[gnu::always_inline]] inline void Steps(float* __restrict p, float* __restrict m, float* __restrict v,
                                         const float* __restrict g, std::int64_t count, float lr,
                                         AdamConstants<float> constants, const RegularizedGradient<float>& regularized) {
  constants.lazy = kLazy;
  for (std::int64_t i = 0; i < count; ++i) AdamStep(p[i], m[i], v[i], g[i], lr, constants, regularized);
}

}  // namespace

__attribute__((target_clones("avx512f", "avx2", "default"))) void AdamStepsF32(
    float* p, float* m, float* v, const float* g, std::int64_t count, float lr, const AdamConstants<float>& constants,
    const RegularizedGradient<float>& regularized) {
  if (constants.lazy) {
    Steps<true>(p, m, v, g, count, lr, constants, regularized);
  } else {
    Steps<false>(p, m, v, g, count, lr, constants, regularized);
  }
}

}  // namespace weir::internal
