#include "kernels/cpu/vector/gelu_f32.hpp"

#include <bit>
#include <cstdint>

// This folder is compiled without trapping math (src/kernels/cpu/meson.build): otherwise GCC keeps each
// float select below as a branch, since evaluating both of its sides might raise a floating-point
// exception early, and a loop with branches does not vectorize. No code here reads those flags.

// Each loop is built for AVX-512, AVX2 and the baseline; the loader picks by the CPU. (Clones named by
// architecture, "arch=haswell", vectorize nothing here with GCC 12; by instruction set they do.)
#define WEIR_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

namespace weir::internal {
namespace {

// e^x for x <= 0 (and a few ulps above): x = n·ln 2 + r with |r| <= ln 2 / 2 (ln 2 in two parts, so r
// is exact), e^r by its Taylor polynomial to r^7 (relative error below 1e-8 there), times 2^n written
// into the exponent bits. Below -87.3 (where e^x is denormal) it is 0; NaN stays NaN.
__attribute__((always_inline)) inline float ExpNonPositive(float x) {
  const float clamped = x < -87.3f ? -87.3f : x;
  constexpr float kRound = 12582912.f;  // 1.5·2^23: adding and subtracting it rounds to an integer
  const float n = (clamped * 1.44269504f + kRound) - kRound;
  const float r = (clamped - n * 0.693145752f) - n * 1.42860677e-6f;
  const float p =
      1.f + r * (1.f + r * (0.5f + r * (1.f / 6 + r * (1.f / 24 + r * (1.f / 120 + r * (1.f / 720 + r * (1.f / 5040)))))));
  const float scale = std::bit_cast<float>((static_cast<std::int32_t>(n) + 127) << 23);
  const float result = x < -87.3f ? 0.f : p * scale;
  return x != x ? x : result;
}

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
