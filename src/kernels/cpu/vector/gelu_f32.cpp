#include "kernels/cpu/vector/gelu_f32.hpp"

#include <cstdint>

#include "kernels/cpu/vector/exp_f32.hpp"

// This folder is compiled without trapping math (src/kernels/cpu/meson.build): otherwise GCC keeps each
// float select below as a branch, since evaluating both of its sides might raise a floating-point
// exception early, and a loop with branches does not vectorize. No code here reads those flags.

namespace weir::internal {
namespace {

// Φ(x) = erfc(-x/√2) / 2, erfc(u) = t·e^(-u² + P(t)) for u >= 0 with t = 1 / (1 + u/2), and
// erfc(u) = 2 - erfc(-u) below 0.
__attribute__((always_inline)) inline float NormalCdf(float x) {
  const float u = x * -0.70710678f;
  const float z = u < 0.f ? -u : u;
  const float t = 1.f / (1.f + 0.5f * z);
  const float poly =
      -1.26551223f +
      t * (1.00002368f +
           t * (0.37409196f +
                t * (0.09678418f +
                     t * (-0.18628806f +
                          t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f + t * (-0.82215223f + t * 0.17087277f))))))));
  const float tail = t * ExpNonPositive(-z * z + poly);
  return 0.5f * (u < 0.f ? 2.f - tail : tail);
}

}  // namespace

WEIR_VECTOR_CLONES void GeluForwardF32(const float* __restrict x, float* __restrict y, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) y[i] = x[i] * NormalCdf(x[i]);
}

WEIR_VECTOR_CLONES void GeluGradF32(const float* __restrict dy, const float* __restrict x, float* __restrict dx,
                                    std::int64_t count) {
  constexpr float kOneOverSqrtTwoPi = 0.39894228f;
  for (std::int64_t i = 0; i < count; ++i) {
    const float v = x[i];
    dx[i] = dy[i] * (NormalCdf(v) + v * kOneOverSqrtTwoPi * ExpNonPositive(-0.5f * v * v));
  }
}

}  // namespace weir::internal
