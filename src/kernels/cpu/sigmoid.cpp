// sigmoid on the CPU. exp is only taken of -|x|, so it never overflows for large |x|.
#include <cmath>

#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T> class SigmoidCpu final : public Kernel {
 public:
  explicit SigmoidCpu(const KernelSetup&) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    T* y = outputs[0].As<T>();
    const std::int64_t count = inputs[0].NumElements();
    for (std::int64_t i = 0; i < count; ++i) {
      const T e = std::exp(-std::abs(x[i]));
      // 1 / (1 + e^-x) for x >= 0; the equal e^x / (1 + e^x) otherwise.
      y[i] = x[i] >= T(0) ? T(1) / (T(1) + e) : e / (T(1) + e);
    }
  }
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"sigmoid", Device::Kind::kCpu, DType::kF32}, &MakeKernel<SigmoidCpu<float>>);
  RegisterKernel({"sigmoid", Device::Kind::kCpu, DType::kF64}, &MakeKernel<SigmoidCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
