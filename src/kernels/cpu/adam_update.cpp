// adam_update on the CPU (Adam and AdamW; the formulas are in graph/ops/adam_update.cpp). The variable
// and its m, v slots are written in place: the planner made every other reader of this call act first.
#include <cmath>

#include "kernels/kernel.hpp"
#include "kernels/cpu/regularized_gradient.hpp"
#include "kernels/attrs/update_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> class AdamUpdateCpu final : public Kernel {
 public:
  explicit AdamUpdateCpu(const KernelSetup& setup)
      : attrs_(setup.Get<UpdateAttrs>()), count_(setup.inputs[0].shape.NumElements()) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    const Optimizer& optimizer = attrs_.optimizer;
    T* p = const_cast<T*>(inputs[0].As<T>());
    const T* g = inputs[1].As<T>();
    T* m = const_cast<T*>(inputs[3].As<T>());
    T* v = const_cast<T*>(inputs[4].As<T>());
    double learning_rate = inputs[2].As<float>()[0];
    if (optimizer.do_bias_correction) {
      // OneFlow's adam_bias_correction_learning_rate, t = train step + 1.
      const double t = static_cast<double>(inputs[5].As<std::int64_t>()[0] + 1);
      learning_rate *= std::sqrt(1 - std::pow(optimizer.beta2, t)) / (1 - std::pow(optimizer.beta1, t));
    }
    const T lr = static_cast<T>(learning_rate);
    const RegularizedGradient<T> regularized(attrs_);
    const T beta1 = static_cast<T>(optimizer.beta1);
    const T beta2 = static_cast<T>(optimizer.beta2);
    // 1 − β in double first: 1 − 0.999f is 4.7e-5 away from 0.001 in relative terms.
    const T one_minus_beta1 = static_cast<T>(1 - optimizer.beta1);
    const T one_minus_beta2 = static_cast<T>(1 - optimizer.beta2);
    const T epsilon = static_cast<T>(optimizer.epsilon);
    const T weight_decay = static_cast<T>(optimizer.weight_decay);
    for (std::int64_t i = 0; i < count_; ++i) {
      const T grad = regularized(g[i], p[i]);
      m[i] = beta1 * m[i] + one_minus_beta1 * grad;
      v[i] = beta2 * v[i] + one_minus_beta2 * grad * grad;
      p[i] -= lr * (m[i] / (std::sqrt(v[i]) + epsilon) + weight_decay * p[i]);
    }
  }

 private:
  UpdateAttrs attrs_;
  std::int64_t count_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"adam_update", Device::Kind::kCpu, DType::kF32}, &MakeKernel<AdamUpdateCpu<float>>);
  RegisterKernel({"adam_update", Device::Kind::kCpu, DType::kF64}, &MakeKernel<AdamUpdateCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
