#pragma once
// Conversions between bfloat16 and float arrays, for the CPU kernels that compute bf16 tensors in
// float: the cast, and the bf16 kernels that run an f32 loop over widened blocks (unary.cpp).
#include <cstdint>

#include "weir/half.hpp"

namespace weir::internal {

/// to[i] = from[i] (exact: a bfloat16 is the top half of a float).
void WidenBFloat16(const bfloat16* from, float* to, std::int64_t count);

/// to[i] = from[i] rounded to nearest, ties to even. Where the CPU has AVX512_BF16 it takes its
/// instruction (16 values at a time), which reads floats below 2^-126 (denormal) as zero.
void NarrowToBFloat16(const float* from, bfloat16* to, std::int64_t count);

}  // namespace weir::internal
