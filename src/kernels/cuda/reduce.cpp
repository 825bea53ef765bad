// reduce_sum, reduce_mean, reduce_sum_to, reduce_max, reduce_min and reduce_extremum_grad on CUDA: the
// merged-axes plan of kernels/functors/reduce.hpp through block-per-output launchers (sums: several
// blocks per output where there are few long ones, ReduceSplit), accumulating and combining as the CPU does.
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "kernels/attrs/gradient_attrs.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

ReductionPlan Plan(const KernelSetup& setup, const std::vector<bool>& reduced) {
  ReductionPlan plan;
  if (!PlanReduction(setup.inputs[0].shape.Dims(), reduced, plan)) {
    throw std::invalid_argument(fmt::format("[{}] '{}': {} has more than {} axes that do not merge", setup.op_type,
                                            setup.op_name, setup.inputs[0].shape, ReductionPlan::kMaxRank));
  }
  return plan;
}

// The axes reduce_sum and reduce_mean sum: the listed ones, or all.
std::vector<bool> ReducedAxes(const Shape& x, const ReduceAttrs& attrs) {
  const int rank = x.Rank();
  std::vector<bool> reduced(static_cast<std::size_t>(rank), attrs.axes.empty());
  for (int axis : attrs.axes) reduced[static_cast<std::size_t>(axis < 0 ? axis + rank : axis)] = true;
  return reduced;
}

// The axes summing x down to `target` (which broadcasts to x) reduces: the leading ones and those
// where the target has a 1.
std::vector<bool> SummedAxes(const Shape& x, const Shape& target) {
  std::vector<bool> reduced(static_cast<std::size_t>(x.Rank()), false);
  const int offset = x.Rank() - target.Rank();
  for (int i = 0; i < x.Rank(); ++i) reduced[static_cast<std::size_t>(i)] = i < offset || (target[i - offset] == 1 && x[i] != 1);
  return reduced;
}

template <typename T> class ReduceExtremumCuda final : public Kernel {
 public:
  explicit ReduceExtremumCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), plan_(Plan(setup, ReducedAxes(setup.inputs[0].shape, setup.Get<ReduceAttrs>()))),
        grad_(setup.op_type == "reduce_extremum_grad"), max_(setup.op_type == "reduce_max"),
        outputs_(grad_ ? setup.inputs[1].shape.NumElements() : setup.outputs[0].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if constexpr (std::is_floating_point_v<T>) {
      if (grad_) {  // inputs (x, y, dy)
        cuda::ReduceExtremumGrad<T>(stream_, plan_, inputs[0].As<T>(), inputs[1].As<T>(), inputs[2].As<T>(), outputs[0].As<T>(),
                                    outputs_);
        return;
      }
    }
    cuda::ReduceExtremum<T>(stream_, plan_, max_, inputs[0].As<T>(), outputs[0].As<T>(), outputs_);
  }

 private:
  void* stream_;
  ReductionPlan plan_;
  bool grad_;
  bool max_;
  std::int64_t outputs_;
};

template <typename T> class ReduceCuda final : public Kernel {
 public:
  explicit ReduceCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)),
        plan_(Plan(setup, setup.op_type == "reduce_sum_to" ? SummedAxes(setup.inputs[0].shape, setup.outputs[0].shape)
                                                           : ReducedAxes(setup.inputs[0].shape, setup.Get<ReduceAttrs>()))),
        mean_(setup.op_type == "reduce_mean"), outputs_(setup.outputs[0].shape.NumElements()),
        split_(ReduceSplit::For(outputs_, plan_.reduced_count)) {
    if (split_.parts > 1) {
      partials_.emplace(setup.device.index, static_cast<std::size_t>(outputs_ * split_.parts) * sizeof(ReduceAcc<T>));
    }
  }
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::Reduce<T>(stream_, plan_, mean_, inputs[0].As<T>(), outputs[0].As<T>(), outputs_, split_,
                    partials_ ? partials_->template As<void>() : nullptr);
  }

 private:
  void* stream_;
  ReductionPlan plan_;
  bool mean_;
  std::int64_t outputs_;
  ReduceSplit split_;
  std::optional<DeviceScratch> partials_;  // each output's partial sums, where several blocks share one
};

WEIR_REGISTER_KERNELS {
  for (const char* op : {"reduce_sum", "reduce_sum_to"}) {
    RegisterKernel({op, Device::Kind::kCuda, DType::kF32}, &MakeKernel<ReduceCuda<float>>);
    RegisterKernel({op, Device::Kind::kCuda, DType::kF64}, &MakeKernel<ReduceCuda<double>>);
    RegisterKernel({op, Device::Kind::kCuda, DType::kI32}, &MakeKernel<ReduceCuda<std::int32_t>>);
    RegisterKernel({op, Device::Kind::kCuda, DType::kI64}, &MakeKernel<ReduceCuda<std::int64_t>>);
  }
  for (const char* op : {"reduce_max", "reduce_min"}) {
    RegisterKernel({op, Device::Kind::kCuda, DType::kF32}, &MakeKernel<ReduceExtremumCuda<float>>);
    RegisterKernel({op, Device::Kind::kCuda, DType::kF64}, &MakeKernel<ReduceExtremumCuda<double>>);
    RegisterKernel({op, Device::Kind::kCuda, DType::kI32}, &MakeKernel<ReduceExtremumCuda<std::int32_t>>);
    RegisterKernel({op, Device::Kind::kCuda, DType::kI64}, &MakeKernel<ReduceExtremumCuda<std::int64_t>>);
  }
  RegisterKernel({"reduce_extremum_grad", Device::Kind::kCuda, DType::kF32}, &MakeKernel<ReduceExtremumCuda<float>>);
  RegisterKernel({"reduce_extremum_grad", Device::Kind::kCuda, DType::kF64}, &MakeKernel<ReduceExtremumCuda<double>>);
  RegisterKernel({"reduce_mean", Device::Kind::kCuda, DType::kF32}, &MakeKernel<ReduceCuda<float>>);
  RegisterKernel({"reduce_mean", Device::Kind::kCuda, DType::kF64}, &MakeKernel<ReduceCuda<double>>);
}

}  // namespace
}  // namespace weir::internal
