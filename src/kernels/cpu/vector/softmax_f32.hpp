#pragma once
// softmax over contiguous float rows, vectorized: the generic row loop called std::exp per element
// (libm, scalar). The row maximum comes out of the exponent (so e^(x - max) <= 1 never overflows), e^x
// is exp_f32.hpp's (relative error below 1e-7 against std::exp), and the sum is kept in double lanes.
// Built for AVX-512, AVX2 and the baseline (target_clones).
#include <cstdint>

namespace weir::internal {

/// y = softmax(x) along each of `rows` rows of `n` contiguous floats (n > 0).
void SoftmaxRowsF32(const float* x, float* y, std::int64_t rows, std::int64_t n);

}  // namespace weir::internal
