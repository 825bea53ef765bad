// clip_by_global_norm on the CPU: the squares are summed in double over every gradient (f32 and f64
// alike), then each gradient is written scaled by clip_norm / max(global_norm, clip_norm).
#include <algorithm>
#include <cmath>

#include "kernels/kernel.hpp"
#include "kernels/attrs/update_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> double SquareSum(const ConstTensorView& x) {
  const T* data = x.As<T>();
  double sum = 0;
  for (std::int64_t i = 0; i < x.NumElements(); ++i) sum += static_cast<double>(data[i]) * data[i];
  return sum;
}

template <typename T> void Scale(const ConstTensorView& x, const TensorView& y, double factor) {
  const T* in = x.As<T>();
  T* out = y.As<T>();
  const T f = static_cast<T>(factor);
  for (std::int64_t i = 0; i < x.NumElements(); ++i) out[i] = in[i] * f;
}

class ClipByGlobalNormCpu final : public Kernel {
 public:
  explicit ClipByGlobalNormCpu(const KernelSetup& setup) : attrs_(setup.Get<ClipByGlobalNormAttrs>()) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    double square_sum = 0;
    for (const ConstTensorView& x : inputs) {
      square_sum += x.GetDType() == DType::kF32 ? SquareSum<float>(x) : SquareSum<double>(x);
    }
    const double global_norm = attrs_.gradient_scale * std::sqrt(square_sum);
    const double factor = attrs_.clip_norm / std::max(global_norm, attrs_.clip_norm);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].GetDType() == DType::kF32) Scale<float>(inputs[i], outputs[i], factor);
      else Scale<double>(inputs[i], outputs[i], factor);
    }
  }

 private:
  ClipByGlobalNormAttrs attrs_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"clip_by_global_norm", Device::Kind::kCpu, DType::kF32}, &MakeKernel<ClipByGlobalNormCpu>);
  RegisterKernel({"clip_by_global_norm", Device::Kind::kCpu, DType::kF64}, &MakeKernel<ClipByGlobalNormCpu>);
}

}  // namespace
}  // namespace weir::internal
