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

// x as (outer, channels, inner), the channels along the bias axis.
struct BiasAddGeometry {
  explicit BiasAddGeometry(const KernelSetup& setup) {
    const Shape& x = setup.inputs[0].shape;
    const int attr_axis = setup.Get<BiasAddAttrs>().axis;
    const int axis = attr_axis < 0 ? attr_axis + x.Rank() : attr_axis;
    channels = x[axis];
    for (int i = 0; i < axis; ++i) outer *= x[i];
    for (int i = axis + 1; i < x.Rank(); ++i) inner *= x[i];
  }
  std::int64_t outer = 1;
  std::int64_t channels = 1;
  std::int64_t inner = 1;
};

template <typename T> class BiasAddCpu final : public Kernel {
 public:
  explicit BiasAddCpu(const KernelSetup& setup) : g_(setup) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    const T* bias = inputs[1].As<T>();
    T* y = outputs[0].As<T>();
    if (g_.inner == 1) {
      // The usual (batch, features) case: a vectorisable row add.
      for (std::int64_t o = 0; o < g_.outer; ++o) {
        const std::int64_t row = o * g_.channels;
        for (std::int64_t c = 0; c < g_.channels; ++c) y[row + c] = x[row + c] + bias[c];
      }
      return;
    }
    for (std::int64_t o = 0; o < g_.outer; ++o) {
      for (std::int64_t c = 0; c < g_.channels; ++c) {
        const T b = bias[c];
        const std::int64_t base = (o * g_.channels + c) * g_.inner;
        for (std::int64_t i = 0; i < g_.inner; ++i) y[base + i] = x[base + i] + b;
      }
    }
  }

 private:
  BiasAddGeometry g_;
};

class BiasAddBFloat16Cpu final : public Kernel {
 public:
  explicit BiasAddBFloat16Cpu(const KernelSetup& setup) : g_(setup), wide_bias_bf16_(setup.inputs[1].dtype == DType::kBF16) {
    if (wide_bias_bf16_) bias_.resize(static_cast<std::size_t>(g_.channels));
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const bfloat16* x = inputs[0].As<bfloat16>();
    bfloat16* y = outputs[0].As<bfloat16>();
    const float* bias = inputs[1].As<float>();
    if (wide_bias_bf16_) {
      WidenBFloat16(inputs[1].As<bfloat16>(), bias_.data(), g_.channels);
      bias = bias_.data();
    }
    // Rows of x: (outer, channels) with a bias per element when inner is 1, else (outer · channels,
    // inner) with one bias per row.
    const std::int64_t rows = g_.inner == 1 ? g_.outer : g_.outer * g_.channels;
    const std::int64_t length = g_.inner == 1 ? g_.channels : g_.inner;
    const int chunks = static_cast<int>(std::clamp<std::int64_t>(rows * length / (1 << 15), 1, IntraOpThreads()));
    ParallelFor(chunks, [&](int chunk) {
      float wide[kBlock];
      for (std::int64_t row = rows * chunk / chunks; row < rows * (chunk + 1) / chunks; ++row) {
        for (std::int64_t at = 0; at < length; at += kBlock) {
          const std::int64_t count = std::min(kBlock, length - at);
          const std::int64_t offset = row * length + at;
          WidenBFloat16(x + offset, wide, count);
          if (g_.inner == 1) {
            for (std::int64_t i = 0; i < count; ++i) wide[i] += bias[at + i];
          } else {
            const float b = bias[row % g_.channels];
            for (std::int64_t i = 0; i < count; ++i) wide[i] += b;
          }
          NarrowToBFloat16(wide, y + offset, count);
        }
      }
    });
  }

 private:
  static constexpr std::int64_t kBlock = 1024;
  BiasAddGeometry g_;
  bool wide_bias_bf16_;
  std::vector<float> bias_;  // a bf16 bias, widened at each call
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"bias_add", Device::Kind::kCpu, DType::kBF16}, &MakeKernel<BiasAddBFloat16Cpu>);
  RegisterKernel({"bias_add", Device::Kind::kCpu, DType::kF32}, &MakeKernel<BiasAddCpu<float>>);
  RegisterKernel({"bias_add", Device::Kind::kCpu, DType::kF64}, &MakeKernel<BiasAddCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
