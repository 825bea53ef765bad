// reduce_sum_to on the CPU: the shared Reduction walk over x's leading axes and the axes where the
// target shape has a 1, so row sums and column sums run as tight loops.
#include <cstdint>
#include <cstring>

#include "kernels/cpu/reduce.hpp"
#include "kernels/attrs/gradient_attrs.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

/// The axes of x that summing down to `target` (which broadcasts to x) reduces.
ReduceAttrs SummedAxes(const Shape& x, const Shape& target) {
  ReduceAttrs attrs{.keep_dims = true};
  const int offset = x.Rank() - target.Rank();
  for (int i = 0; i < x.Rank(); ++i) {
    if (i < offset || (target[i - offset] == 1 && x[i] != 1)) attrs.axes.push_back(i);
  }
  return attrs;
}

template <typename T> class ReduceSumToCpu final : public Kernel {
 public:
  explicit ReduceSumToCpu(const KernelSetup& setup)
      : copy_(SummedAxes(setup.inputs[0].shape, setup.outputs[0].shape).axes.empty()),
        num_bytes_(setup.outputs[0].NumBytes()),
        reduction_(setup.inputs[0], setup.outputs[0], SummedAxes(setup.inputs[0].shape, setup.outputs[0].shape)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    // Nothing to sum (only 1s differ); Reduction reads empty axes as "all", so copy instead.
    if (copy_) {
      if (num_bytes_ != 0) std::memcpy(outputs[0].data, inputs[0].data, num_bytes_);
      return;
    }
    reduction_.Run(inputs[0].As<T>(), outputs[0].As<T>(), [](ReduceAcc<T> sum) { return static_cast<T>(sum); });
  }

 private:
  bool copy_;
  std::size_t num_bytes_;
  Reduction<T> reduction_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"reduce_sum_to", Device::Kind::kCpu, DType::kF32}, &MakeKernel<ReduceSumToCpu<float>>);
  RegisterKernel({"reduce_sum_to", Device::Kind::kCpu, DType::kF64}, &MakeKernel<ReduceSumToCpu<double>>);
  RegisterKernel({"reduce_sum_to", Device::Kind::kCpu, DType::kI32}, &MakeKernel<ReduceSumToCpu<std::int32_t>>);
  RegisterKernel({"reduce_sum_to", Device::Kind::kCpu, DType::kI64}, &MakeKernel<ReduceSumToCpu<std::int64_t>>);
  RegisterKernel({"reduce_sum_to", Device::Kind::kCpu, DType::kI8}, &MakeKernel<ReduceSumToCpu<std::int8_t>>);
}

}  // namespace
}  // namespace weir::internal
