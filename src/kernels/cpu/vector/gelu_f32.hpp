#pragma once
// The exact gelu, x·Φ(x), and its gradient on float arrays, vectorized: the generic unary loops call
// std::erfc and std::exp per element (libm, scalar), which made gelu 17 % of a BERT forward pass on
// one core (ten times faster here with AVX-512). Φ(x) = erfc(-x/√2) / 2 comes from the Chebyshev fit of
// erfc in Numerical Recipes (Press et al., "erfcc": fractional error below 1.2e-7) and e^x from
// a range reduction without branches, so that the compiler vectorizes the loops; each is built for
// AVX-512, AVX2 and the baseline, picked at load by the CPU (target_clones). Within 6e-7·(1 + x²/4) of
// the exact values (relative): a few ulps near 0; in the left tail e^(-x²/2) magnifies the rounding of
// x² (1.4e-5 at -11.6, where gelu is 1e-30). tests/kernels/test_ops_math.cpp checks it over [-15, 15]. Compiled apart, without
// trapping math (src/kernels/cpu/meson.build).
#include <cstdint>

namespace weir::internal {

/// y[i] = x[i]·Φ(x[i]).
void GeluForwardF32(const float* x, float* y, std::int64_t count);
/// dx[i] = dy[i]·(Φ(x[i]) + x[i]·φ(x[i])), φ the standard normal density.
void GeluGradF32(const float* dy, const float* x, float* dx, std::int64_t count);

}  // namespace weir::internal
