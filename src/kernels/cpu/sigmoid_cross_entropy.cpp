// sigmoid_cross_entropy and its backward op on the CPU: plain elementwise loops. The loss uses the
// stable form max(x, 0) − x·z + log1p(e^−|x|), which neither overflows nor loses small losses.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/functors/sigmoid_cross_entropy.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T> class SigmoidCrossEntropyCpu final : public Kernel {
 public:
  explicit SigmoidCrossEntropyCpu(const KernelSetup& setup) : count_(setup.inputs[1].shape.NumElements()) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* z = inputs[0].As<T>();
    const T* x = inputs[1].As<T>();
    T* loss = outputs[0].As<T>();
    for (std::int64_t i = 0; i < count_; ++i) loss[i] = SigmoidCrossEntropy(z[i], x[i]);
  }

 private:
  std::int64_t count_;
};

template <typename T> class SigmoidCrossEntropyGradCpu final : public Kernel {
 public:
  explicit SigmoidCrossEntropyGradCpu(const KernelSetup& setup) : count_(setup.inputs[1].shape.NumElements()) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* z = inputs[0].As<T>();
    const T* x = inputs[1].As<T>();
    const T* dy = inputs[2].As<T>();
    T* dz = outputs[0].As<T>();
    T* dx = outputs[1].As<T>();
    for (std::int64_t i = 0; i < count_; ++i) SigmoidCrossEntropyGrad(z[i], x[i], dy[i], dz[i], dx[i]);
  }

 private:
  std::int64_t count_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"sigmoid_cross_entropy", Device::Kind::kCpu, DType::kF32}, &MakeKernel<SigmoidCrossEntropyCpu<float>>);
  RegisterKernel({"sigmoid_cross_entropy", Device::Kind::kCpu, DType::kF64}, &MakeKernel<SigmoidCrossEntropyCpu<double>>);
  RegisterKernel({"sigmoid_cross_entropy_grad", Device::Kind::kCpu, DType::kF32},
                 &MakeKernel<SigmoidCrossEntropyGradCpu<float>>);
  RegisterKernel({"sigmoid_cross_entropy_grad", Device::Kind::kCpu, DType::kF64},
                 &MakeKernel<SigmoidCrossEntropyGradCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
