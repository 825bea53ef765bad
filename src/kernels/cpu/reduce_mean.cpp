// reduce_mean on the CPU: the Reduction sum divided by the reduced count (NaN for an empty one).
#include "kernels/cpu/reduce.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T> class ReduceMeanCpu final : public Kernel {
 public:
  explicit ReduceMeanCpu(const KernelSetup& setup)
      : reduction_(setup.inputs[0], setup.outputs[0], setup.Get<ReduceAttrs>()),
        count_(static_cast<double>(reduction_.ReducedCount())) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const double count = count_;
    reduction_.Run(inputs[0].As<T>(), outputs[0].As<T>(), [count](double sum) { return static_cast<T>(sum / count); });
  }

 private:
  Reduction<T> reduction_;
  double count_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"reduce_mean", Device::Kind::kCpu, DType::kF32}, &MakeKernel<ReduceMeanCpu<float>>);
  RegisterKernel({"reduce_mean", Device::Kind::kCpu, DType::kF64}, &MakeKernel<ReduceMeanCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
