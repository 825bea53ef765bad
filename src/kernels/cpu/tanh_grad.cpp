// tanh_grad on the CPU: dx = dy · (1 − y²) from tanh's output y; one pass.
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T> class TanhGradCpu final : public Kernel {
 public:
  explicit TanhGradCpu(const KernelSetup&) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* dy = inputs[0].As<T>();
    const T* y = inputs[1].As<T>();
    T* dx = outputs[0].As<T>();
    const std::int64_t count = inputs[0].NumElements();
    for (std::int64_t i = 0; i < count; ++i) dx[i] = dy[i] * (T(1) - y[i] * y[i]);
  }
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"tanh_grad", Device::Kind::kCpu, DType::kF32}, &MakeKernel<TanhGradCpu<float>>);
  RegisterKernel({"tanh_grad", Device::Kind::kCpu, DType::kF64}, &MakeKernel<TanhGradCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
