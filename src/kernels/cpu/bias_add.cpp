// bias_add on the CPU: x viewed as (outer, channels, inner), with bias[c] added to every
// inner element of channel c.
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> class BiasAddCpu final : public Kernel {
 public:
  explicit BiasAddCpu(const KernelSetup& setup) {
    const Shape& x = setup.inputs[0].shape;
    const int attr_axis = setup.Get<BiasAddAttrs>().axis;
    const int axis = attr_axis < 0 ? attr_axis + x.Rank() : attr_axis;
    channels_ = x[axis];
    for (int i = 0; i < axis; ++i) outer_ *= x[i];
    for (int i = axis + 1; i < x.Rank(); ++i) inner_ *= x[i];
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    const T* bias = inputs[1].As<T>();
    T* y = outputs[0].As<T>();
    if (inner_ == 1) {
      // The usual (batch, features) case: a vectorisable row add.
      for (std::int64_t o = 0; o < outer_; ++o) {
        const std::int64_t row = o * channels_;
        for (std::int64_t c = 0; c < channels_; ++c) y[row + c] = x[row + c] + bias[c];
      }
      return;
    }
    for (std::int64_t o = 0; o < outer_; ++o) {
      for (std::int64_t c = 0; c < channels_; ++c) {
        const T b = bias[c];
        const std::int64_t base = (o * channels_ + c) * inner_;
        for (std::int64_t i = 0; i < inner_; ++i) y[base + i] = x[base + i] + b;
      }
    }
  }

 private:
  std::int64_t outer_ = 1;
  std::int64_t channels_ = 1;
  std::int64_t inner_ = 1;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"bias_add", Device::Kind::kCpu, DType::kF32}, &MakeKernel<BiasAddCpu<float>>);
  RegisterKernel({"bias_add", Device::Kind::kCpu, DType::kF64}, &MakeKernel<BiasAddCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
