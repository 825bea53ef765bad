// cast on the CPU: one kernel per (input, output) dtype pair, picked when the task is created; the
// conversion is kernels/functors/cast.hpp (the CUDA kernel's too).
// Float to integer saturates and maps NaN to 0 (a plain out-of-range conversion is undefined);
// integer narrowing wraps; anything to bool is value != 0; to float16/bfloat16 rounds to nearest even.
// f32 to bf16, which mixed precision runs on every weight each step, uses the AVX512_BF16 instruction
// where the CPU has it (vector/bfloat16_f32.hpp: like the CUDA conversions it rounds to nearest even,
// but it reads floats below 2^-126, denormal, as zero).
#include <cstdint>
#include <memory>
#include <type_traits>

#include "common/intra_op_pool.hpp"
#include "kernels/cpu/vector/bfloat16_f32.hpp"
#include "kernels/functors/cast.hpp"
#include "kernels/kernel.hpp"
#include "kernels/word_dispatch.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

// Casts of at least this many elements are split over the intra-op pool: mixed precision casts
// activations and weights every step, and one core converts about a gigabyte per second.
constexpr std::int64_t kParallelElements = 1 << 16;

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
    if constexpr (std::is_same_v<In, float> && std::is_same_v<Out, bfloat16>) {
      NarrowToBFloat16(x + begin, y + begin, end - begin);
    } else {
      for (std::int64_t i = begin; i < end; ++i) y[i] = Convert<Out>(x[i]);
    }
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
