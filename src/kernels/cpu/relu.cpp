// relu on the CPU: a vectorised loop, split over the intra-op pool when large.
#include <algorithm>

#include "kernels/cpu/elementwise.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T> class ReluCpu final : public Kernel {
 public:
  explicit ReluCpu(const KernelSetup&) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    MapElements(inputs[0].NumElements(), inputs[0].As<T>(), outputs[0].As<T>(), [](T x) { return std::max(x, T(0)); });
  }
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"relu", Device::Kind::kCpu, DType::kF32}, &MakeKernel<ReluCpu<float>>);
  RegisterKernel({"relu", Device::Kind::kCpu, DType::kF64}, &MakeKernel<ReluCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
