// scalar_grad on the CPU: dx = dy · d(x (op) s)/dx (kernels/functors/scalar.hpp, the CUDA kernel's math too).
#include <cmath>
#include <cstdint>

#include "kernels/functors/scalar.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> class ScalarGradCpu final : public Kernel {
 public:
  explicit ScalarGradCpu(const KernelSetup& setup)
      : kind_(setup.Get<ScalarAttrs>().kind), value_(static_cast<T>(setup.Get<ScalarAttrs>().value)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* dy = inputs[0].As<T>();
    const T* x = inputs[1].As<T>();
    T* dx = outputs[0].As<T>();
    const std::int64_t count = inputs[0].NumElements();
    const T s = value_;
    const ScalarOpKind kind = kind_;
    for (std::int64_t i = 0; i < count; ++i) dx[i] = ScalarGrad(kind, dy[i], x[i], s);
  }

 private:
  ScalarOpKind kind_;
  T value_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"scalar_grad", Device::Kind::kCpu, DType::kF32}, &MakeKernel<ScalarGradCpu<float>>);
  RegisterKernel({"scalar_grad", Device::Kind::kCpu, DType::kF64}, &MakeKernel<ScalarGradCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
