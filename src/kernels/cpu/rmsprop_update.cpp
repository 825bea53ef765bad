// rmsprop_update on the CPU, centered (with the mean-gradient slot) when the optimizer is (the formulas are in
// graph/ops/rmsprop_update.cpp). The variable and its slots are written in place: the planner made every other reader of this
// call act first.
#include <cmath>

#include "kernels/kernel.hpp"
#include "kernels/attrs/update_params.hpp"
#include "kernels/attrs/update_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> class RmsPropUpdateCpu final : public Kernel {
 public:
  explicit RmsPropUpdateCpu(const KernelSetup& setup)
      : attrs_(setup.Get<UpdateAttrs>()),
        count_(setup.inputs[0].shape.NumElements()),
        centered_(attrs_.optimizer.centered) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    if (SkipsStep(SkipFlagOf(attrs_, inputs))) return;  // dynamic loss scaling's non-finite step
    T* p = const_cast<T*>(inputs[0].As<T>());
    const T* g = inputs[1].As<T>();
    const T lr = static_cast<T>(inputs[2].As<float>()[0]);
    T* mean_square = const_cast<T*>(inputs[3].As<T>());
    const RegularizedGradient<T> regularized = MakeRegularizedGradient<T>(attrs_);
    const T decay = static_cast<T>(attrs_.optimizer.decay_rate);
    const T one_minus_decay = static_cast<T>(1 - attrs_.optimizer.decay_rate);
    const T epsilon = static_cast<T>(attrs_.optimizer.epsilon);
    T* mean_gradient = centered_ ? const_cast<T*>(inputs[4].As<T>()) : nullptr;
    for (std::int64_t i = 0; i < count_; ++i) {
      RmsPropStep(p[i], mean_square[i], mean_gradient != nullptr ? &mean_gradient[i] : nullptr, g[i], lr, decay,
                  one_minus_decay, epsilon, regularized);
    }
  }

 private:
  UpdateAttrs attrs_;
  std::int64_t count_;
  bool centered_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"rmsprop_update", Device::Kind::kCpu, DType::kF32}, &MakeKernel<RmsPropUpdateCpu<float>>);
  RegisterKernel({"rmsprop_update", Device::Kind::kCpu, DType::kF64}, &MakeKernel<RmsPropUpdateCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
