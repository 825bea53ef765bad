// softmax_grad on the CPU: dx = y · (dy − sum(dy · y)) along the softmax axis, with the tensors
// viewed as (outer, n, inner). For inner > 1 the sums of one outer block are kept in a row of
// accumulators (allocated once per task), so every pass reads memory contiguously.
#include <algorithm>
#include <vector>

#include "kernels/cpu/byte_copy.hpp"
#include "kernels/functors/softmax.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> class SoftmaxGradCpu final : public Kernel {
 public:
  explicit SoftmaxGradCpu(const KernelSetup& setup)
      : split_(setup.inputs[0].shape, setup.Get<SoftmaxAttrs>().axis),
        sums_(static_cast<std::size_t>(split_.inner > 1 ? split_.inner : 0)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* dy = inputs[0].As<T>();
    const T* y = inputs[1].As<T>();
    T* dx = outputs[0].As<T>();
    const std::int64_t n = split_.n;
    const std::int64_t inner = split_.inner;
    for (std::int64_t o = 0; o < split_.outer; ++o) {
      const std::int64_t base = o * n * inner;
      const T* dy_block = dy + base;
      const T* y_block = y + base;
      T* dx_block = dx + base;
      if (inner == 1) {
        SoftmaxGradAlong(dy_block, y_block, dx_block, n, 1);
        continue;
      }
      // Along a strided axis, the CUDA kernel's SoftmaxGradAlong per column; here the sums of every
      // column at once, row after row, which reads memory in order.
      std::fill(sums_.begin(), sums_.end(), 0.0);
      for (std::int64_t j = 0; j < n; ++j) {
        const std::int64_t row = j * inner;
        for (std::int64_t i = 0; i < inner; ++i) {
          sums_[static_cast<std::size_t>(i)] += static_cast<double>(dy_block[row + i]) * y_block[row + i];
        }
      }
      for (std::int64_t j = 0; j < n; ++j) {
        const std::int64_t row = j * inner;
        for (std::int64_t i = 0; i < inner; ++i) {
          dx_block[row + i] =
              y_block[row + i] * (dy_block[row + i] - static_cast<T>(sums_[static_cast<std::size_t>(i)]));
        }
      }
    }
  }

 private:
  AxisSplit split_;
  std::vector<double> sums_;  // one per inner position, for inner > 1
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"softmax_grad", Device::Kind::kCpu, DType::kF32}, &MakeKernel<SoftmaxGradCpu<float>>);
  RegisterKernel({"softmax_grad", Device::Kind::kCpu, DType::kF64}, &MakeKernel<SoftmaxGradCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
