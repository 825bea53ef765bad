// reduce_max, reduce_min (and reduce_prod: ProdOp) and reduce_extremum_grad on CUDA: the merged-axes plan of
// kernels/functors/reduce.hpp, a block per output whose threads stride over its reduced elements and
// combine in shared memory, a NaN winning as on the CPU (MaxOp, MinOp). The gradient spreads dy[o]
// evenly over the elements equal to y[o] (the ties), as the CPU does.
#include <cstdint>

#include "kernels/attrs/reduce_axes.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/reduce.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T, typename Op>
__global__ void ExtremumKernel(ReductionPlan plan, const T* x, T* y, std::int64_t outputs) {
  for (std::int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    T acc = Op::template Identity<T>();
    for (std::int64_t r = threadIdx.x; r < plan.reduced_count; r += blockDim.x) acc = Op::Combine(acc, x[plan.Offset(o, r)]);
    acc = cuda::BlockCombine(acc, [](T a, T b) { return Op::Combine(a, b); });
    if (threadIdx.x == 0) y[o] = acc;
  }
}

// A block per output: count the elements equal to y[o] (the ties), then spread dy[o] over them.
template <typename T>
__global__ void ExtremumGradKernel(ReductionPlan plan, const T* x, const T* y, const T* dy, T* dx, std::int64_t outputs) {
  for (std::int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    std::int64_t count = 0;
    for (std::int64_t r = threadIdx.x; r < plan.reduced_count; r += blockDim.x) count += x[plan.Offset(o, r)] == y[o];
    const std::int64_t ties = cuda::BlockSum(count);
    const T share = ties > 0 ? dy[o] / static_cast<T>(ties) : T(0);
    for (std::int64_t r = threadIdx.x; r < plan.reduced_count; r += blockDim.x) {
      const std::int64_t at = plan.Offset(o, r);
      dx[at] = x[at] == y[o] ? share : T(0);
    }
  }
}

// Op: MaxOp (reduce_max), MinOp (reduce_min) or ProdOp (reduce_prod).
template <typename T, typename Op> class ReduceExtremumCuda final : public Kernel {
 public:
  explicit ReduceExtremumCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)),
        plan_(ReductionPlanOf(setup.inputs[0].shape, ReducedAxesOf(setup.inputs[0].shape, setup.Get<ReduceAttrs>()),
                              setup.op_type, setup.op_name)),
        outputs_(setup.outputs[0].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::LaunchPerItem(stream_, outputs_, &ExtremumKernel<T, Op>, plan_, inputs[0].As<T>(), outputs[0].As<T>(), outputs_);
  }

 private:
  void* stream_;
  ReductionPlan plan_;
  std::int64_t outputs_;
};

// Inputs (x, y, dy).
template <typename T> class ReduceExtremumGradCuda final : public Kernel {
 public:
  explicit ReduceExtremumGradCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)),
        plan_(ReductionPlanOf(setup.inputs[0].shape, ReducedAxesOf(setup.inputs[0].shape, setup.Get<ReduceAttrs>()),
                              setup.op_type, setup.op_name)),
        outputs_(setup.inputs[1].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::LaunchPerItem(stream_, outputs_, &ExtremumGradKernel<T>, plan_, inputs[0].As<T>(), inputs[1].As<T>(),
                        inputs[2].As<T>(), outputs[0].As<T>(), outputs_);
  }

 private:
  void* stream_;
  ReductionPlan plan_;
  std::int64_t outputs_;
};

template <typename Op> void RegisterExtremum(const char* op_type) {
  RegisterKernel({op_type, Device::Kind::kCuda, DType::kF32}, &MakeKernel<ReduceExtremumCuda<float, Op>>);
  RegisterKernel({op_type, Device::Kind::kCuda, DType::kF64}, &MakeKernel<ReduceExtremumCuda<double, Op>>);
  RegisterKernel({op_type, Device::Kind::kCuda, DType::kI32}, &MakeKernel<ReduceExtremumCuda<std::int32_t, Op>>);
  RegisterKernel({op_type, Device::Kind::kCuda, DType::kI64}, &MakeKernel<ReduceExtremumCuda<std::int64_t, Op>>);
}

WEIR_REGISTER_KERNELS {
  RegisterExtremum<MaxOp>("reduce_max");
  RegisterExtremum<MinOp>("reduce_min");
  RegisterExtremum<ProdOp>("reduce_prod");  // the same walk, multiplying (graph/ops/reduce_prod.cpp)
  RegisterKernel({"reduce_extremum_grad", Device::Kind::kCuda, DType::kF32}, &MakeKernel<ReduceExtremumGradCuda<float>>);
  RegisterKernel({"reduce_extremum_grad", Device::Kind::kCuda, DType::kF64}, &MakeKernel<ReduceExtremumGradCuda<double>>);
}

}  // namespace
}  // namespace weir::internal
