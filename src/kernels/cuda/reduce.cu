// reduce_sum, reduce_mean and reduce_sum_to on CUDA, over the merged-axes plan of
// kernels/functors/reduce.hpp: one block per output element (grid-striding over outputs), or, for a
// few long sums, several blocks per output whose partials a second launch adds (ReduceSplit); the
// threads stride over the reduced elements, accumulate in ReduceAcc (double for floats, wrapping
// uint64 for integers, as the CPU does) and combine in shared memory.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "kernels/attrs/reduce_axes.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal::cuda {

namespace {

// An output from its accumulated sum: the mean divides by the reduced count (floats only).
template <typename T> __device__ T Finished(ReduceAcc<T> total, bool mean, std::int64_t reduced_count) {
  if constexpr (std::is_floating_point_v<T>) return static_cast<T>(mean ? total / static_cast<double>(reduced_count) : total);
  return static_cast<T>(total);
}

template <typename T>
__global__ void ReduceKernel(ReductionPlan plan, bool mean, const T* x, T* y, std::int64_t outputs) {
  using Acc = ReduceAcc<T>;
  for (std::int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    Acc sum = 0;
    for (std::int64_t r = threadIdx.x; r < plan.reduced_count; r += blockDim.x) sum += static_cast<Acc>(x[plan.Offset(o, r)]);
    const Acc total = BlockSum(sum);
    if (threadIdx.x == 0) y[o] = Finished<T>(total, mean, plan.reduced_count);
  }
}

// Block b sums part b % parts of output b / parts into partials[b].
template <typename T>
__global__ void ReducePartsKernel(ReductionPlan plan, ReduceSplit split, const T* x, ReduceAcc<T>* partials, std::int64_t blocks) {
  using Acc = ReduceAcc<T>;
  for (std::int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    const std::int64_t o = b / split.parts, begin = (b % split.parts) * split.chunk;
    const std::int64_t end = begin + split.chunk < plan.reduced_count ? begin + split.chunk : plan.reduced_count;
    Acc sum = 0;
    for (std::int64_t r = begin + threadIdx.x; r < end; r += blockDim.x) sum += static_cast<Acc>(x[plan.Offset(o, r)]);
    const Acc total = BlockSum(sum);
    if (threadIdx.x == 0) partials[b] = total;
  }
}

// A block per output adds its partials.
template <typename T>
__global__ void CombinePartsKernel(ReduceSplit split, std::int64_t reduced_count, bool mean, const ReduceAcc<T>* partials,
                                   T* y, std::int64_t outputs) {
  using Acc = ReduceAcc<T>;
  for (std::int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    Acc sum = 0;
    for (std::int64_t p = threadIdx.x; p < split.parts; p += blockDim.x) sum += partials[o * split.parts + p];
    const Acc total = BlockSum(sum);
    if (threadIdx.x == 0) y[o] = Finished<T>(total, mean, reduced_count);
  }
}

/// y[o] = the sum (mean: / reduced count) of x's elements of output o along `plan`; with split.parts
/// > 1 (ReduceSplit::For), `partials` holds outputs * parts ReduceAcc<T> of device memory.
template <typename T>
void Reduce(void* stream, const ReductionPlan& plan, bool mean, const T* x, T* y, std::int64_t outputs,
            const ReduceSplit& split, void* partials) {
  if (split.parts <= 1) {
    LaunchPerItem(stream, outputs, &ReduceKernel<T>, plan, mean, x, y, outputs);
    return;
  }
  auto* sums = static_cast<ReduceAcc<T>*>(partials);
  const std::int64_t blocks = outputs * split.parts;
  LaunchPerItem(stream, blocks, &ReducePartsKernel<T>, plan, split, x, sums, blocks);
  LaunchPerItem(stream, outputs, &CombinePartsKernel<T>, split, plan.reduced_count, mean, sums, y, outputs);
}

}  // namespace
}  // namespace weir::internal::cuda

namespace weir::internal {
namespace {

ReductionPlan Plan(const KernelSetup& setup, const std::vector<bool>& reduced) {
  return ReductionPlanOf(setup.inputs[0].shape, reduced, setup.op_type, setup.op_name);
}

// kSumTo: reduce_sum_to, which sums x down to its output's shape; kMean: reduce_mean.
template <typename T, bool kSumTo, bool kMean> class ReduceCuda final : public Kernel {
 public:
  explicit ReduceCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)),
        plan_(Plan(setup, kSumTo ? SummedAxesOf(setup.inputs[0].shape, setup.outputs[0].shape)
                                 : ReducedAxesOf(setup.inputs[0].shape, setup.Get<ReduceAttrs>()))),
        outputs_(setup.outputs[0].shape.NumElements()),
        split_(ReduceSplit::For(outputs_, plan_.reduced_count)) {
    if (split_.parts > 1) {
      partials_.emplace(setup.device.index, static_cast<std::size_t>(outputs_ * split_.parts) * sizeof(ReduceAcc<T>));
    }
  }
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::Reduce<T>(stream_, plan_, kMean, inputs[0].As<T>(), outputs[0].As<T>(), outputs_, split_,
                    partials_ ? partials_->template As<void>() : nullptr);
  }

 private:
  void* stream_;
  ReductionPlan plan_;
  std::int64_t outputs_;
  ReduceSplit split_;
  std::optional<DeviceScratch> partials_;  // each output's partial sums, where several blocks share one
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"reduce_sum", Device::Kind::kCuda, DType::kF32}, &MakeKernel<ReduceCuda<float, false, false>>);
  RegisterKernel({"reduce_sum", Device::Kind::kCuda, DType::kF64}, &MakeKernel<ReduceCuda<double, false, false>>);
  RegisterKernel({"reduce_sum", Device::Kind::kCuda, DType::kI32}, &MakeKernel<ReduceCuda<std::int32_t, false, false>>);
  RegisterKernel({"reduce_sum", Device::Kind::kCuda, DType::kI64}, &MakeKernel<ReduceCuda<std::int64_t, false, false>>);
  RegisterKernel({"reduce_sum_to", Device::Kind::kCuda, DType::kF32}, &MakeKernel<ReduceCuda<float, true, false>>);
  RegisterKernel({"reduce_sum_to", Device::Kind::kCuda, DType::kF64}, &MakeKernel<ReduceCuda<double, true, false>>);
  RegisterKernel({"reduce_sum_to", Device::Kind::kCuda, DType::kI32}, &MakeKernel<ReduceCuda<std::int32_t, true, false>>);
  RegisterKernel({"reduce_sum_to", Device::Kind::kCuda, DType::kI64}, &MakeKernel<ReduceCuda<std::int64_t, true, false>>);
  RegisterKernel({"reduce_sum_to", Device::Kind::kCuda, DType::kI8}, &MakeKernel<ReduceCuda<std::int8_t, true, false>>);
  RegisterKernel({"reduce_mean", Device::Kind::kCuda, DType::kF32}, &MakeKernel<ReduceCuda<float, false, true>>);
  RegisterKernel({"reduce_mean", Device::Kind::kCuda, DType::kF64}, &MakeKernel<ReduceCuda<double, false, true>>);
}

}  // namespace
}  // namespace weir::internal
