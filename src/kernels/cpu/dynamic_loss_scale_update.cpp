// dynamic_loss_scale_update on the CPU (the math: kernels/functors/update.hpp), in place.
#include "kernels/attrs/update_attrs.hpp"
#include "kernels/functors/update.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

class DynamicLossScaleUpdateCpu final : public Kernel {
 public:
  explicit DynamicLossScaleUpdateCpu(const KernelSetup& setup) : attrs_(setup.Get<DynamicLossScaleAttrs>()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    DynamicLossScaleStep(inputs[3].As<float>()[0], const_cast<float*>(inputs[0].As<float>())[0],
                         const_cast<std::int64_t*>(inputs[1].As<std::int64_t>())[0],
                         const_cast<std::int64_t*>(inputs[2].As<std::int64_t>())[0], attrs_.increment_period,
                         attrs_.multiplier);
  }

 private:
  DynamicLossScaleAttrs attrs_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"dynamic_loss_scale_update", Device::Kind::kCpu, DType::kF32}, &MakeKernel<DynamicLossScaleUpdateCpu>);
}

}  // namespace
}  // namespace weir::internal
