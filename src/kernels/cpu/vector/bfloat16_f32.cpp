#include "kernels/cpu/vector/bfloat16_f32.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu/dnnl_engine.hpp"

namespace weir::internal {
namespace {

#if defined(__x86_64__)
__attribute__((target("avx512f,avx512bf16"))) void NarrowNative(const float* from, bfloat16* to, std::int64_t count) {
  std::int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m256bh narrowed = _mm512_cvtneps_pbh(_mm512_loadu_ps(from + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to + i), reinterpret_cast<const __m256i&>(narrowed));
  }
  for (; i < count; ++i) to[i] = bfloat16(from[i]);
}
#endif

// Whether f32 -> bf16 takes the AVX512_BF16 instruction (checked once).
bool NativeNarrowing() {
#if defined(__x86_64__)
  static const bool native = CpuHasNativeBFloat16();
  return native;
#else
  return false;
#endif
}

}  // namespace

// Built for AVX-512, AVX2 and the baseline, picked at load by the CPU: 16 values an instruction where it can.
__attribute__((target_clones("avx512f", "avx2", "default"))) void WidenBFloat16(const bfloat16* from, float* to,
                                                                                std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) to[i] = half_bits::FloatFromBFloat16(from[i].bits);
}

void NarrowToBFloat16(const float* from, bfloat16* to, std::int64_t count) {
#if defined(__x86_64__)
  if (NativeNarrowing()) return NarrowNative(from, to, count);
#endif
  for (std::int64_t i = 0; i < count; ++i) to[i] = bfloat16(from[i]);
}

}  // namespace weir::internal
