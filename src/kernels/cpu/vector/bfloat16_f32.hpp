#pragma once
// Conversions between bfloat16 and float arrays, for the CPU kernels that compute bf16 tensors in
// float: the cast, and the bf16 kernels that run an f32 loop over widened blocks (unary.cpp's
// activations, broadcast_binary.cpp's sums).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "weir/half.hpp"

namespace weir::internal {

/// to[i] = from[i] (exact: a bfloat16 is the top half of a float).
void WidenBFloat16(const bfloat16* from, float* to, std::int64_t count);

/// to[i] = from[i] rounded to nearest, ties to even. Where the CPU has AVX512_BF16 it takes its
/// instruction (16 values at a time), which reads floats below 2^-126 (denormal) as zero.
void NarrowToBFloat16(const float* from, bfloat16* to, std::int64_t count);

/// Elements [begin, end) of bf16 inputs `in` through an f32 loop: blocks of each input widened on the
/// stack, fn(widened inputs, widened output, count) run on them, and the output rounded into `out`.
template <std::size_t kInputs, typename Fn>
void OverWidenedBlocks(const std::array<const bfloat16*, kInputs>& in, bfloat16* out, std::int64_t begin,
                       std::int64_t end, Fn&& fn) {
  constexpr std::int64_t kBlock = 1024;
  float wide_in[kInputs][kBlock];
  float wide_out[kBlock];
  for (std::int64_t at = begin; at < end; at += kBlock) {
    const std::int64_t count = std::min(kBlock, end - at);
    for (std::size_t k = 0; k < kInputs; ++k) WidenBFloat16(in[k] + at, wide_in[k], count);
    fn(wide_in, wide_out, count);
    NarrowToBFloat16(wide_out, out + at, count);
  }
}

}  // namespace weir::internal
