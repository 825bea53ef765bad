// clip_by_value and clip_by_value_grad on the CPU. A missing bound becomes ±inf (or the integer
// type's limit) when the task is created, so Run is one branch-free-able loop for every case.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/attrs/clip_bounds.hpp"
#include "kernels/functors/clip.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

/// The bounds of `attrs` in T: missing ones are the type's extremes; integer bounds are rounded
/// inward (an integer x >= 0.5 means x >= 1) and saturated to T's range.
template <typename T> class ClipByValueCpu final : public Kernel {
 public:
  explicit ClipByValueCpu(const KernelSetup& setup)
      : count_(setup.inputs[0].shape.NumElements()), bounds_(ClipBounds<T>(setup.Get<ClipAttrs>())) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    T* y = outputs[0].As<T>();
    const auto [lo, hi] = bounds_;
    for (std::int64_t i = 0; i < count_; ++i) y[i] = Clip(x[i], lo, hi);
  }

 private:
  std::int64_t count_;
  std::pair<T, T> bounds_;
};

template <typename T> class ClipByValueGradCpu final : public Kernel {
 public:
  explicit ClipByValueGradCpu(const KernelSetup& setup)
      : count_(setup.inputs[0].shape.NumElements()), bounds_(ClipBounds<T>(setup.Get<ClipAttrs>())),
        open_(setup.Get<ClipAttrs>().open_gradient) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* dy = inputs[0].As<T>();
    const T* x = inputs[1].As<T>();
    T* dx = outputs[0].As<T>();
    const auto [lo, hi] = bounds_;
    for (std::int64_t i = 0; i < count_; ++i) dx[i] = ClipGrad(dy[i], x[i], lo, hi, open_);
  }

 private:
  std::int64_t count_;
  std::pair<T, T> bounds_;
  bool open_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"clip_by_value", Device::Kind::kCpu, DType::kF32}, &MakeKernel<ClipByValueCpu<float>>);
  RegisterKernel({"clip_by_value", Device::Kind::kCpu, DType::kF64}, &MakeKernel<ClipByValueCpu<double>>);
  RegisterKernel({"clip_by_value", Device::Kind::kCpu, DType::kI32}, &MakeKernel<ClipByValueCpu<std::int32_t>>);
  RegisterKernel({"clip_by_value", Device::Kind::kCpu, DType::kI64}, &MakeKernel<ClipByValueCpu<std::int64_t>>);
  RegisterKernel({"clip_by_value_grad", Device::Kind::kCpu, DType::kF32}, &MakeKernel<ClipByValueGradCpu<float>>);
  RegisterKernel({"clip_by_value_grad", Device::Kind::kCpu, DType::kF64}, &MakeKernel<ClipByValueGradCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
