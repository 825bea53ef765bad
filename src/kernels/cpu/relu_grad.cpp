// relu_grad on the CPU: dx = dy where y > 0, else 0; one vectorised pass (a select, not a branch:
// see elementwise.hpp), split over the intra-op pool when large.
#include "kernels/cpu/elementwise.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T> class ReluGradCpu final : public Kernel {
 public:
  explicit ReluGradCpu(const KernelSetup&) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    MapElements(inputs[0].NumElements(), inputs[0].As<T>(), inputs[1].As<T>(), outputs[0].As<T>(),
                [](T dy, T y) { return y > T(0) ? dy : T(0); });
  }
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"relu_grad", Device::Kind::kCpu, DType::kF32}, &MakeKernel<ReluGradCpu<float>>);
  RegisterKernel({"relu_grad", Device::Kind::kCpu, DType::kF64}, &MakeKernel<ReluGradCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
