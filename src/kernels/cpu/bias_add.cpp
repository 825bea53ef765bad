// bias_add on the CPU: x viewed as (outer, channels, inner), with bias[c] added to every
// inner element of channel c. A bf16 x (mixed precision) takes an f32 or bf16 bias: the sum is made
// in f32 on widened blocks and rounded once.
#include <algorithm>
#include <vector>

#include "common/intra_op_pool.hpp"
#include "kernels/cpu/vector/bfloat16_f32.hpp"
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

class BiasAddBFloat16Cpu final : public Kernel {
 public:
  explicit BiasAddBFloat16Cpu(const KernelSetup& setup) : wide_bias_bf16_(setup.inputs[1].dtype == DType::kBF16) {
    const Shape& x = setup.inputs[0].shape;
    const int attr_axis = setup.Get<BiasAddAttrs>().axis;
    const int axis = attr_axis < 0 ? attr_axis + x.Rank() : attr_axis;
    channels_ = x[axis];
    for (int i = 0; i < axis; ++i) outer_ *= x[i];
    for (int i = axis + 1; i < x.Rank(); ++i) inner_ *= x[i];
    if (wide_bias_bf16_) bias_.resize(static_cast<std::size_t>(channels_));
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const bfloat16* x = inputs[0].As<bfloat16>();
    bfloat16* y = outputs[0].As<bfloat16>();
    const float* bias = inputs[1].As<float>();
    if (wide_bias_bf16_) {
      WidenBFloat16(inputs[1].As<bfloat16>(), bias_.data(), channels_);
      bias = bias_.data();
    }
    // Rows of x: (outer, channels) with a bias per element when inner is 1, else (outer · channels,
    // inner) with one bias per row.
    const std::int64_t rows = inner_ == 1 ? outer_ : outer_ * channels_;
    const std::int64_t length = inner_ == 1 ? channels_ : inner_;
    const int chunks = static_cast<int>(std::clamp<std::int64_t>(rows * length / (1 << 15), 1, IntraOpThreads()));
    ParallelFor(chunks, [&](int chunk) {
      float wide[kBlock];
      for (std::int64_t row = rows * chunk / chunks; row < rows * (chunk + 1) / chunks; ++row) {
        for (std::int64_t at = 0; at < length; at += kBlock) {
          const std::int64_t count = std::min(kBlock, length - at);
          const std::int64_t offset = row * length + at;
          WidenBFloat16(x + offset, wide, count);
          if (inner_ == 1) {
            for (std::int64_t i = 0; i < count; ++i) wide[i] += bias[at + i];
          } else {
            const float b = bias[row % channels_];
            for (std::int64_t i = 0; i < count; ++i) wide[i] += b;
          }
          NarrowToBFloat16(wide, y + offset, count);
        }
      }
    });
  }

 private:
  static constexpr std::int64_t kBlock = 1024;
  bool wide_bias_bf16_;
  std::vector<float> bias_;  // a bf16 bias, widened at each call
  std::int64_t outer_ = 1;
  std::int64_t channels_ = 1;
  std::int64_t inner_ = 1;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"bias_add", Device::Kind::kCpu, DType::kBF16}, &MakeKernel<BiasAddBFloat16Cpu>);
  RegisterKernel({"bias_add", Device::Kind::kCpu, DType::kF32}, &MakeKernel<BiasAddCpu<float>>);
  RegisterKernel({"bias_add", Device::Kind::kCpu, DType::kF64}, &MakeKernel<BiasAddCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
