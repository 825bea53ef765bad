// cast on the CPU: one kernel per (input, output) dtype pair, picked when the task is created; the
// conversion is kernels/functors/cast.hpp (the CUDA kernel's too).
// Float to integer saturates and maps NaN to 0 (a plain out-of-range conversion is undefined);
// integer narrowing wraps; anything to bool is value != 0; to float16/bfloat16 rounds to nearest even.
// f32 to bf16, which mixed precision runs on every weight each step, uses the AVX512_BF16 instruction
// where the CPU has it (16 values an instruction; like the CUDA conversions it rounds to nearest even,
// but it reads floats below 2^-126, denormal, as zero).
#include <cstdint>
#include <memory>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "common/intra_op_pool.hpp"
#include "kernels/cpu/dnnl_engine.hpp"
#include "kernels/functors/cast.hpp"
#include "kernels/kernel.hpp"
#include "kernels/word_dispatch.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

// Casts of at least this many elements are split over the intra-op pool: mixed precision casts
// activations and weights every step, and one core converts about a gigabyte per second.
constexpr std::int64_t kParallelElements = 1 << 16;

#if defined(__x86_64__)
__attribute__((target("avx512f,avx512bf16"))) void FloatToBFloat16Native(const float* x, bfloat16* y, std::int64_t begin,
                                                                       std::int64_t end) {
  std::int64_t i = begin;
  for (; i + 16 <= end; i += 16) {
    const __m256bh narrowed = _mm512_cvtneps_pbh(_mm512_loadu_ps(x + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), reinterpret_cast<const __m256i&>(narrowed));
  }
  for (; i < end; ++i) y[i] = bfloat16(x[i]);
}
#endif

// Whether f32 -> bf16 takes the AVX512_BF16 instruction (checked once).
bool NativeBFloat16Casts() {
#if defined(__x86_64__)
  static const bool native = CpuHasNativeBFloat16();
  return native;
#else
  return false;
#endif
}

template <typename In, typename Out> class CastCpu final : public Kernel {
 public:
  explicit CastCpu(const KernelSetup&) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const In* x = inputs[0].As<In>();
    Out* y = outputs[0].As<Out>();
    const std::int64_t count = inputs[0].NumElements();
    if (count < kParallelElements) {
      ConvertRange(x, y, 0, count);
      return;
    }
    const int chunks = IntraOpThreads();
    ParallelFor(chunks, [&](int i) { ConvertRange(x, y, count * i / chunks, count * (i + 1) / chunks); });
  }

 private:
  static void ConvertRange(const In* x, Out* y, std::int64_t begin, std::int64_t end) {
#if defined(__x86_64__)
    if constexpr (std::is_same_v<In, float> && std::is_same_v<Out, bfloat16>) {
      if (NativeBFloat16Casts()) return FloatToBFloat16Native(x, y, begin, end);
    }
#endif
    for (std::int64_t i = begin; i < end; ++i) y[i] = Convert<Out>(x[i]);
  }
};

std::unique_ptr<Kernel> MakeCast(const KernelSetup& setup) {
  return WithTypeOf(setup.inputs[0].dtype, [&]<typename In>() {
    return WithTypeOf(setup.Get<CastAttrs>().dtype,
                      [&]<typename Out>() -> std::unique_ptr<Kernel> { return std::make_unique<CastCpu<In, Out>>(setup); });
  });
}

WEIR_REGISTER_KERNELS {
  for (DType dtype : kAllDTypes) RegisterKernel({"cast", Device::Kind::kCpu, dtype}, &MakeCast);
}

}  // namespace
}  // namespace weir::internal
