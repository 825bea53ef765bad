// layer_norm and layer_norm_grad on the CPU: each row through kernels/functors/layer_norm.hpp's row
// math (the CUDA kernels' too), rows split over the intra-op pool when there is enough work.
#include <cstdint>

#include "common/intra_op_pool.hpp"
#include "kernels/attrs/layer_norm_attrs.hpp"
#include "kernels/axis_split.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "kernels/functors/layer_norm.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

/// x as rows of n: the axes before begin_norm_axis, and those from it on.
struct Rows {
  std::int64_t rows = 0, n = 0;
  Rows(const Shape& x, int begin_norm_axis) {
    const AxisSplit split(x, begin_norm_axis);
    rows = split.outer;
    n = split.n * split.inner;
  }
  /// Calls fn(row) for every row, rows split over the pool when they hold enough elements.
  template <typename Fn> void ForEach(Fn&& fn) const {
    const int chunks = rows * n >= kParallelElements ? IntraOpThreads() : 1;
    const auto range = [&](int i) {
      for (std::int64_t r = ChunkBegin(rows, chunks, i); r < ChunkBegin(rows, chunks, i + 1); ++r) fn(r);
    };
    if (chunks == 1) {
      range(0);
    } else {
      ParallelFor(chunks, range);
    }
  }
};

template <typename T> class LayerNormCpu final : public Kernel {
 public:
  explicit LayerNormCpu(const KernelSetup& setup)
      : attrs_(setup.Get<LayerNormAttrs>()), rows_(setup.inputs[0].shape, attrs_.begin_norm_axis) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    T* y = outputs[0].As<T>();
    T* mean = outputs[1].As<T>();
    T* inv = outputs[2].As<T>();
    const std::int64_t n = rows_.n;
    rows_.ForEach([&](std::int64_t r) { LayerNormRow(x + r * n, y + r * n, mean + r, inv + r, n, attrs_.epsilon); });
  }

 private:
  LayerNormAttrs attrs_;
  Rows rows_;
};

// Inputs: dy, x, mean, inv_variance.
template <typename T> class LayerNormGradCpu final : public Kernel {
 public:
  explicit LayerNormGradCpu(const KernelSetup& setup)
      : rows_(setup.inputs[1].shape, setup.Get<LayerNormAttrs>().begin_norm_axis) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* dy = inputs[0].As<T>();
    const T* x = inputs[1].As<T>();
    const T* mean = inputs[2].As<T>();
    const T* inv = inputs[3].As<T>();
    T* dx = outputs[0].As<T>();
    const std::int64_t n = rows_.n;
    rows_.ForEach([&](std::int64_t r) { LayerNormGradRow(dy + r * n, x + r * n, mean[r], inv[r], dx + r * n, n); });
  }

 private:
  Rows rows_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"layer_norm", Device::Kind::kCpu, DType::kF32}, &MakeKernel<LayerNormCpu<float>>);
  RegisterKernel({"layer_norm", Device::Kind::kCpu, DType::kF64}, &MakeKernel<LayerNormCpu<double>>);
  RegisterKernel({"layer_norm_grad", Device::Kind::kCpu, DType::kF32}, &MakeKernel<LayerNormGradCpu<float>>);
  RegisterKernel({"layer_norm_grad", Device::Kind::kCpu, DType::kF64}, &MakeKernel<LayerNormGradCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
