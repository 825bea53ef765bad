// cast on the CPU: one kernel per (input, output) dtype pair, picked when the task is created; the
// conversion is kernels/functors/cast.hpp (the CUDA kernel's too).
// Float to integer saturates and maps NaN to 0 (a plain out-of-range conversion is undefined);
// integer narrowing wraps; anything to bool is value != 0.
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>

#include "kernels/functors/cast.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

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
    case DType::kI8: return std::make_unique<CastCpu<In, std::int8_t>>(setup);
    case DType::kBool: return std::make_unique<CastCpu<In, bool>>(setup);
  }
  return nullptr;  // unreachable: the switch covers every dtype
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"cast", Device::Kind::kCpu, DType::kF32}, &MakeCast<float>);
  RegisterKernel({"cast", Device::Kind::kCpu, DType::kF64}, &MakeCast<double>);
  RegisterKernel({"cast", Device::Kind::kCpu, DType::kI32}, &MakeCast<std::int32_t>);
  RegisterKernel({"cast", Device::Kind::kCpu, DType::kI64}, &MakeCast<std::int64_t>);
  RegisterKernel({"cast", Device::Kind::kCpu, DType::kU8}, &MakeCast<std::uint8_t>);
  RegisterKernel({"cast", Device::Kind::kCpu, DType::kI8}, &MakeCast<std::int8_t>);
  RegisterKernel({"cast", Device::Kind::kCpu, DType::kBool}, &MakeCast<bool>);
}

}  // namespace
}  // namespace weir::internal
