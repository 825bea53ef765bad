// maximum_grad and minimum_grad on the CPU: one select per element, all operands of one shape.
#include <cstdint>

#include "kernels/functors/binary.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T, typename PicksA> class ExtremumGradCpu final : public Kernel {
 public:
  explicit ExtremumGradCpu(const KernelSetup& setup) : count_(setup.inputs[0].shape.NumElements()) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* dy = inputs[0].As<T>();
    const T* a = inputs[1].As<T>();
    const T* b = inputs[2].As<T>();
    T* da = outputs[0].As<T>();
    T* db = outputs[1].As<T>();
    for (std::int64_t i = 0; i < count_; ++i) ExtremumGrad<PicksA>(dy[i], a[i], b[i], da[i], db[i]);
  }

 private:
  std::int64_t count_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"maximum_grad", Device::Kind::kCpu, DType::kF32}, &MakeKernel<ExtremumGradCpu<float, MaximumPicksA>>);
  RegisterKernel({"maximum_grad", Device::Kind::kCpu, DType::kF64}, &MakeKernel<ExtremumGradCpu<double, MaximumPicksA>>);
  RegisterKernel({"minimum_grad", Device::Kind::kCpu, DType::kF32}, &MakeKernel<ExtremumGradCpu<float, MinimumPicksA>>);
  RegisterKernel({"minimum_grad", Device::Kind::kCpu, DType::kF64}, &MakeKernel<ExtremumGradCpu<double, MinimumPicksA>>);
}

}  // namespace
}  // namespace weir::internal
