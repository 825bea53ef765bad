// tanh on the CPU: std::tanh, which saturates to ±1 without overflow.
#include <cmath>

#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T> class TanhCpu final : public Kernel {
 public:
  explicit TanhCpu(const KernelSetup&) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    T* y = outputs[0].As<T>();
    const std::int64_t count = inputs[0].NumElements();
    for (std::int64_t i = 0; i < count; ++i) y[i] = std::tanh(x[i]);
  }
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"tanh", Device::Kind::kCpu, DType::kF32}, &MakeKernel<TanhCpu<float>>);
  RegisterKernel({"tanh", Device::Kind::kCpu, DType::kF64}, &MakeKernel<TanhCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
