// lars_update on the CPU (the math: kernels/functors/update.hpp): the sums of squares of the variable
// and its regularized gradient, the variable's rate from them, then the momentum step, in place.
#include <cstdint>

#include "kernels/attrs/update_params.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T> class LarsUpdateCpu final : public Kernel {
 public:
  explicit LarsUpdateCpu(const KernelSetup& setup)
      : attrs_(setup.Get<UpdateAttrs>()), count_(setup.inputs[0].shape.NumElements()) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    if (SkipsStep(SkipFlagOf(attrs_, inputs))) return;  // dynamic loss scaling's non-finite step
    const Optimizer& optimizer = attrs_.optimizer;
    T* p = const_cast<T*>(inputs[0].As<T>());
    const T* g = inputs[1].As<T>();
    T* v = const_cast<T*>(inputs[3].As<T>());
    const RegularizedGradient<T> regularized = MakeRegularizedGradient<T>(attrs_);
    double p_square_sum = 0, g_square_sum = 0;
    for (std::int64_t i = 0; i < count_; ++i) {
      const double gradient = regularized(g[i], p[i]);
      p_square_sum += static_cast<double>(p[i]) * p[i];
      g_square_sum += gradient * gradient;
    }
    const T rate = static_cast<T>(LarsRate(inputs[2].As<float>()[0], optimizer.lars_coefficient, optimizer.epsilon,
                                           p_square_sum, g_square_sum));
    const T beta = static_cast<T>(optimizer.momentum);
    for (std::int64_t i = 0; i < count_; ++i) LarsStep(p[i], v[i], g[i], rate, beta, regularized);
  }

 private:
  UpdateAttrs attrs_;
  std::int64_t count_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"lars_update", Device::Kind::kCpu, DType::kF32}, &MakeKernel<LarsUpdateCpu<float>>);
  RegisterKernel({"lars_update", Device::Kind::kCpu, DType::kF64}, &MakeKernel<LarsUpdateCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
