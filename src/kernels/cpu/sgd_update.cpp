// sgd_update and momentum_update on the CPU (the math: kernels/functors/update.hpp). The variable (and momentum slot) inputs are written in
// place: the planner made every other reader of this call act first.
#include <cmath>

#include "kernels/cpu/elementwise.hpp"
#include "kernels/attrs/update_params.hpp"
#include "kernels/kernel.hpp"
#include "kernels/attrs/update_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> class SgdUpdateCpu final : public Kernel {
 public:
  explicit SgdUpdateCpu(const KernelSetup& setup)
      : attrs_(setup.Get<UpdateAttrs>()), count_(setup.inputs[0].shape.NumElements()),
        momentum_(setup.op_type == "momentum_update") {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    T* p = const_cast<T*>(inputs[0].As<T>());
    const T* g = inputs[1].As<T>();
    const T lr = static_cast<T>(inputs[2].As<float>()[0]);
    const RegularizedGradient<T> regularized = MakeRegularizedGradient<T>(attrs_);
    if (!momentum_) {
      ForEachRange(count_, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) SgdStep(p[i], g[i], lr, regularized);
      });
      return;
    }
    T* v = const_cast<T*>(inputs[3].As<T>());
    const T beta = static_cast<T>(attrs_.optimizer.momentum);
    ForEachRange(count_, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) MomentumStep(p[i], v[i], g[i], lr, beta, regularized);
    });
  }

 private:
  UpdateAttrs attrs_;
  std::int64_t count_;
  bool momentum_;
};

WEIR_REGISTER_KERNELS {
  for (const char* op : {"sgd_update", "momentum_update"}) {
    RegisterKernel({op, Device::Kind::kCpu, DType::kF32}, &MakeKernel<SgdUpdateCpu<float>>);
    RegisterKernel({op, Device::Kind::kCpu, DType::kF64}, &MakeKernel<SgdUpdateCpu<double>>);
  }
}

}  // namespace
}  // namespace weir::internal
