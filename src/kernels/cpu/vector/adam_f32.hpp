#pragma once
// Adam's step (kernels/functors/update.hpp) over float arrays, vectorized: the kernel's plain loop
// ran one element at a time (its square root keeps errno and LazyAdam's early exit is a branch), which
// made the optimizer a sixth of a BERT-base training step. Built for AVX-512, AVX2 and the baseline,
// picked at load by the CPU; compiled apart without errno and trapping math (src/kernels/cpu/meson.build).
#include <cstdint>

#include "kernels/functors/update.hpp"

namespace weir::internal {

/// AdamStep(p[i], m[i], v[i], g[i], lr, constants, regularized) for i in [0, count).
void AdamStepsF32(float* p, float* m, float* v, const float* g, std::int64_t count, float lr,
                  const AdamConstants<float>& constants, const RegularizedGradient<float>& regularized);

}  // namespace weir::internal
