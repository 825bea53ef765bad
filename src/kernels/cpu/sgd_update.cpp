// sgd_update and momentum_update on the CPU (the math: kernels/functors/update.hpp). The variable (and momentum slot) inputs are written in
// place: the planner made every other reader of this call act first.
#include <cmath>

#include "kernels/cpu/elementwise.hpp"
#include "kernels/attrs/update_params.hpp"
#include "kernels/kernel.hpp"
#include "kernels/attrs/update_attrs.hpp"

namespace weir::internal {
namespace {

// kMomentum: momentum_update, with the slot v as input 3.
template <typename T, bool kMomentum> class SgdUpdateCpu final : public Kernel {
 public:
  explicit SgdUpdateCpu(const KernelSetup& setup)
      : attrs_(setup.Get<UpdateAttrs>()), count_(setup.inputs[0].shape.NumElements()) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    if (SkipsStep(SkipFlagOf(attrs_, inputs))) return;  // dynamic loss scaling's non-finite step
    T* p = const_cast<T*>(inputs[0].As<T>());
    const T* g = inputs[1].As<T>();
    const T lr = static_cast<T>(inputs[2].As<float>()[0]);
    const RegularizedGradient<T> regularized = MakeRegularizedGradient<T>(attrs_);
    if constexpr (!kMomentum) {
      ForEachRange(count_, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) SgdStep(p[i], g[i], lr, regularized);
      });
    } else {
      T* v = const_cast<T*>(inputs[3].As<T>());
      const T beta = static_cast<T>(attrs_.optimizer.momentum);
      ForEachRange(count_, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) MomentumStep(p[i], v[i], g[i], lr, beta, regularized);
      });
    }
  }

 private:
  UpdateAttrs attrs_;
  std::int64_t count_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"sgd_update", Device::Kind::kCpu, DType::kF32}, &MakeKernel<SgdUpdateCpu<float, false>>);
  RegisterKernel({"sgd_update", Device::Kind::kCpu, DType::kF64}, &MakeKernel<SgdUpdateCpu<double, false>>);
  RegisterKernel({"momentum_update", Device::Kind::kCpu, DType::kF32}, &MakeKernel<SgdUpdateCpu<float, true>>);
  RegisterKernel({"momentum_update", Device::Kind::kCpu, DType::kF64}, &MakeKernel<SgdUpdateCpu<double, true>>);
}

}  // namespace
}  // namespace weir::internal
