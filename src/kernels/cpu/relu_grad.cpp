// relu_grad on the CPU: dx = dy where y > 0, else 0; one vectorisable pass.
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T> class ReluGradCpu final : public Kernel {
 public:
  explicit ReluGradCpu(const KernelSetup&) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* dy = inputs[0].As<T>();
    const T* y = inputs[1].As<T>();
    T* dx = outputs[0].As<T>();
    const std::int64_t count = inputs[0].NumElements();
    for (std::int64_t i = 0; i < count; ++i) dx[i] = y[i] > T(0) ? dy[i] : T(0);
  }
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"relu_grad", Device::Kind::kCpu, DType::kF32}, &MakeKernel<ReluGradCpu<float>>);
  RegisterKernel({"relu_grad", Device::Kind::kCpu, DType::kF64}, &MakeKernel<ReluGradCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
