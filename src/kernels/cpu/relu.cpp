// relu on the CPU: a plain loop the compiler vectorises.
#include <algorithm>

#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T> class ReluCpu final : public Kernel {
 public:
  explicit ReluCpu(const KernelSetup&) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    T* y = outputs[0].As<T>();
    const std::int64_t count = inputs[0].NumElements();
    for (std::int64_t i = 0; i < count; ++i) y[i] = std::max(x[i], T(0));
  }
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"relu", Device::Kind::kCpu, DType::kF32}, &MakeKernel<ReluCpu<float>>);
  RegisterKernel({"relu", Device::Kind::kCpu, DType::kF64}, &MakeKernel<ReluCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
