// learning_rate on the CPU: the schedule's rate at the train step (kernels/learning_rate_schedule.hpp).
#include "kernels/kernel.hpp"
#include "kernels/attrs/update_attrs.hpp"
#include "kernels/learning_rate_schedule.hpp"

namespace weir::internal {
namespace {

class LearningRateCpu final : public Kernel {
 public:
  explicit LearningRateCpu(const KernelSetup& setup) : schedule_(setup.Get<LearningRateAttrs>().schedule) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    outputs[0].As<float>()[0] = static_cast<float>(ScheduledLearningRate(schedule_, inputs[0].As<std::int64_t>()[0]));
  }

 private:
  LrSchedule schedule_;
};

WEIR_REGISTER_KERNELS { RegisterKernel({"learning_rate", Device::Kind::kCpu, DType::kI64}, &MakeKernel<LearningRateCpu>); }

}  // namespace
}  // namespace weir::internal
