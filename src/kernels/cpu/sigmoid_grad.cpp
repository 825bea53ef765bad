// sigmoid_grad on the CPU: dx = dy · y · (1 − y) from sigmoid's output y; one pass.
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T> class SigmoidGradCpu final : public Kernel {
 public:
  explicit SigmoidGradCpu(const KernelSetup&) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* dy = inputs[0].As<T>();
    const T* y = inputs[1].As<T>();
    T* dx = outputs[0].As<T>();
    const std::int64_t count = inputs[0].NumElements();
    for (std::int64_t i = 0; i < count; ++i) dx[i] = dy[i] * y[i] * (T(1) - y[i]);
  }
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"sigmoid_grad", Device::Kind::kCpu, DType::kF32}, &MakeKernel<SigmoidGradCpu<float>>);
  RegisterKernel({"sigmoid_grad", Device::Kind::kCpu, DType::kF64}, &MakeKernel<SigmoidGradCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
