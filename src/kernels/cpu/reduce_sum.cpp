// reduce_sum on the CPU through the shared Reduction walk.
#include "kernels/cpu/reduce.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T> class ReduceSumCpu final : public Kernel {
 public:
  explicit ReduceSumCpu(const KernelSetup& setup)
      : reduction_(setup.inputs[0], setup.outputs[0], setup.Get<ReduceAttrs>()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    reduction_.Run(inputs[0].As<T>(), outputs[0].As<T>(), [](ReduceAcc<T> sum) { return static_cast<T>(sum); });
  }

 private:
  Reduction<T> reduction_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"reduce_sum", Device::Kind::kCpu, DType::kF32}, &MakeKernel<ReduceSumCpu<float>>);
  RegisterKernel({"reduce_sum", Device::Kind::kCpu, DType::kF64}, &MakeKernel<ReduceSumCpu<double>>);
  RegisterKernel({"reduce_sum", Device::Kind::kCpu, DType::kI32}, &MakeKernel<ReduceSumCpu<std::int32_t>>);
  RegisterKernel({"reduce_sum", Device::Kind::kCpu, DType::kI64}, &MakeKernel<ReduceSumCpu<std::int64_t>>);
}

}  // namespace
}  // namespace weir::internal
