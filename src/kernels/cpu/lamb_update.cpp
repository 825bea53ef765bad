// lamb_update on the CPU (the formulas are in graph/ops/lamb_update.cpp). The variable and its m, v
// slots are written in place: the planner made every other reader of this call act first. The update
// direction u needs both norms before any element of p changes, so it is kept in a buffer allocated
// once, with the kernel.
#include <cmath>
#include <vector>

#include "kernels/kernel.hpp"
#include "kernels/attrs/update_params.hpp"
#include "kernels/attrs/update_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> class LambUpdateCpu final : public Kernel {
 public:
  explicit LambUpdateCpu(const KernelSetup& setup)
      : attrs_(setup.Get<UpdateAttrs>()),
        count_(setup.inputs[0].shape.NumElements()),
        direction_(static_cast<std::size_t>(count_)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    if (SkipsStep(SkipFlagOf(attrs_, inputs))) return;  // dynamic loss scaling's non-finite step
    const Optimizer& optimizer = attrs_.optimizer;
    T* p = const_cast<T*>(inputs[0].As<T>());
    const T* g = inputs[1].As<T>();
    T* m = const_cast<T*>(inputs[3].As<T>());
    T* v = const_cast<T*>(inputs[4].As<T>());
    const double t = static_cast<double>(inputs[5].As<std::int64_t>()[0] + 1);
    const T correction1 = static_cast<T>(1 - std::pow(optimizer.beta1, t));
    const T correction2 = static_cast<T>(1 - std::pow(optimizer.beta2, t));
    const RegularizedGradient<T> regularized = MakeRegularizedGradient<T>(attrs_);
    const AdamConstants<T> constants = MakeAdamConstants<T>(optimizer);
    T* u = direction_.data();
    double p_square_sum = 0;
    double u_square_sum = 0;
    for (std::int64_t i = 0; i < count_; ++i) {
      u[i] = LambDirection(p[i], m[i], v[i], g[i], constants, correction1, correction2, regularized);
      p_square_sum += static_cast<double>(p[i]) * p[i];
      u_square_sum += static_cast<double>(u[i]) * u[i];
    }
    const double trust_ratio = LambTrustRatio(p_square_sum, u_square_sum);
    const T lr = static_cast<T>(inputs[2].As<float>()[0] * trust_ratio);
    const T weight_decay = static_cast<T>(optimizer.weight_decay);
    for (std::int64_t i = 0; i < count_; ++i) p[i] -= lr * (u[i] + weight_decay * p[i]);
  }

 private:
  UpdateAttrs attrs_;
  std::int64_t count_;
  std::vector<T> direction_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"lamb_update", Device::Kind::kCpu, DType::kF32}, &MakeKernel<LambUpdateCpu<float>>);
  RegisterKernel({"lamb_update", Device::Kind::kCpu, DType::kF64}, &MakeKernel<LambUpdateCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
