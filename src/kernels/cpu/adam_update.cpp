// adam_update on the CPU (Adam and AdamW; the formulas are in graph/ops/adam_update.cpp, the math in
// kernels/functors/update.hpp). The variable
// and its m, v slots are written in place: the planner made every other reader of this call act first.
#include <cmath>
#include <type_traits>

#include "kernels/cpu/elementwise.hpp"
#include "kernels/cpu/vector/adam_f32.hpp"
#include "kernels/kernel.hpp"
#include "kernels/attrs/update_params.hpp"
#include "kernels/attrs/update_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> class AdamUpdateCpu final : public Kernel {
 public:
  explicit AdamUpdateCpu(const KernelSetup& setup)
      : attrs_(setup.Get<UpdateAttrs>()), count_(setup.inputs[0].shape.NumElements()) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    if (SkipsStep(SkipFlagOf(attrs_, inputs))) return;  // dynamic loss scaling's non-finite step
    const Optimizer& optimizer = attrs_.optimizer;
    T* p = const_cast<T*>(inputs[0].As<T>());
    const T* g = inputs[1].As<T>();
    T* m = const_cast<T*>(inputs[3].As<T>());
    T* v = const_cast<T*>(inputs[4].As<T>());
    double learning_rate = inputs[2].As<float>()[0];
    if (optimizer.do_bias_correction) {
      learning_rate = AdamBiasCorrectedRate(learning_rate, optimizer.beta1, optimizer.beta2, inputs[5].As<std::int64_t>()[0]);
    }
    const T lr = static_cast<T>(learning_rate);
    const RegularizedGradient<T> regularized = MakeRegularizedGradient<T>(attrs_);
    const AdamConstants<T> constants = MakeAdamConstants<T>(optimizer);
    // Memory-bound (seven floats an element): large variables split over the intra-op pool.
    ForEachRange(count_, [&](std::int64_t begin, std::int64_t end) {
      if constexpr (std::is_same_v<T, float>) {
        AdamStepsF32(p + begin, m + begin, v + begin, g + begin, end - begin, lr, constants, regularized);
      } else {
        for (std::int64_t i = begin; i < end; ++i) AdamStep(p[i], m[i], v[i], g[i], lr, constants, regularized);
      }
    });
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
