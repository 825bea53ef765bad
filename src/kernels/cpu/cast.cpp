// cast on the CPU: one kernel per (input, output) dtype pair, picked when the task is created.
// Float to integer saturates and maps NaN to 0 (a plain out-of-range conversion is undefined);
// integer narrowing wraps; anything to bool is value != 0.
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>

#include "kernels/kernel.hpp"
#include "weir/ops.hpp"

namespace weir::internal {
namespace {

template <typename Out, typename In> Out Convert(In value) {
  if constexpr (std::is_same_v<Out, bool>) {
    return value != In(0);
  } else if constexpr (std::is_floating_point_v<In> && std::is_integral_v<Out>) {
    // min is 0 or -2^k and max + 1 is 2^k, all exact as doubles.
    constexpr double kLow = static_cast<double>(std::numeric_limits<Out>::min());
    constexpr double kHigh = static_cast<double>(std::numeric_limits<Out>::max()) + 1.0;
    const double v = value;
    if (std::isnan(v)) return Out(0);
    if (v <= kLow) return std::numeric_limits<Out>::min();
    if (v >= kHigh) return std::numeric_limits<Out>::max();
    return static_cast<Out>(v);
  } else {
    return static_cast<Out>(value);
  }
}

template <typename In, typename Out> class CastCpu final : public Kernel {
 public:
  explicit CastCpu(const KernelSetup&) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const In* x = inputs[0].As<In>();
    Out* y = outputs[0].As<Out>();
    const std::int64_t count = inputs[0].NumElements();
    for (std::int64_t i = 0; i < count; ++i) y[i] = Convert<Out>(x[i]);
  }
};

template <typename In> std::unique_ptr<Kernel> MakeCast(const KernelSetup& setup) {
  switch (setup.Get<CastAttrs>().dtype) {
    case DType::kF32: return std::make_unique<CastCpu<In, float>>(setup);
    case DType::kF64: return std::make_unique<CastCpu<In, double>>(setup);
    case DType::kI32: return std::make_unique<CastCpu<In, std::int32_t>>(setup);
    case DType::kI64: return std::make_unique<CastCpu<In, std::int64_t>>(setup);
    case DType::kU8: return std::make_unique<CastCpu<In, std::uint8_t>>(setup);
    case DType::kBool: return std::make_unique<CastCpu<In, bool>>(setup);
  }
  return nullptr;  // unreachable: inference accepts only the six dtypes
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"cast", Device::Kind::kCpu, DType::kF32}, &MakeCast<float>);
  RegisterKernel({"cast", Device::Kind::kCpu, DType::kF64}, &MakeCast<double>);
  RegisterKernel({"cast", Device::Kind::kCpu, DType::kI32}, &MakeCast<std::int32_t>);
  RegisterKernel({"cast", Device::Kind::kCpu, DType::kI64}, &MakeCast<std::int64_t>);
  RegisterKernel({"cast", Device::Kind::kCpu, DType::kU8}, &MakeCast<std::uint8_t>);
  RegisterKernel({"cast", Device::Kind::kCpu, DType::kBool}, &MakeCast<bool>);
}

}  // namespace
}  // namespace weir::internal
