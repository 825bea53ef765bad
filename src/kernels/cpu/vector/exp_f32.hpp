#pragma once
// e^x for x <= 0 on floats without libm, for loops that must vectorize (gelu, softmax). Included only by
// this folder's files, which are compiled without trapping math (src/kernels/cpu/meson.build).
#include <bit>
#include <cstdint>

namespace weir::internal {

// x = n·ln 2 + r with |r| <= ln 2 / 2 (ln 2 in two parts, so r is exact), e^r by its Taylor polynomial
// to r^7 (relative error below 1e-8 there), times 2^n written into the exponent bits. Below -87.3
// (where e^x is denormal) it is 0; NaN stays NaN; a few ulps above 0 are fine.
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

}  // namespace weir::internal

// Each loop is built for AVX-512, AVX2 and the baseline; the loader picks by the CPU. (Clones named by
// architecture, "arch=haswell", vectorize nothing here with GCC 12; by instruction set they do.)
// Under ThreadSanitizer the baseline alone: the loader runs the clones' resolvers before TSan's runtime
// has started, and their instrumented entry crashes the program before main.
#if defined(__SANITIZE_THREAD__)
#define WEIR_VECTOR_CLONES
#else
#define WEIR_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
