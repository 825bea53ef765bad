// compare on CUDA: a grid-stride loop per comparison kind over the broadcast plan of
// kernels/functors/binary.hpp, the math of kernels/functors/compare.hpp.
#include <cstdint>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/binary.hpp"
#include "kernels/functors/compare.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T, typename Op>
__global__ void CompareKernel(BroadcastPlan plan, const T* a, const T* b, std::int8_t* out, std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) {
    std::int64_t at_a = i, at_b = i;
    if (plan.rank > 0) plan.Offsets(i, at_a, at_b);
    out[i] = Op::Apply(a[at_a], b[at_b]);
  }
}

template <typename T> class CompareCuda final : public Kernel {
 public:
  explicit CompareCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), kind_(setup.Get<CompareAttrs>().kind), count_(setup.outputs[0].shape.NumElements()),
        plan_(BinaryPlanOf(setup)) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    WithCompareOp(kind_, [&](auto op) {
      cuda::LaunchOver(stream_, count_, &CompareKernel<T, decltype(op)>, plan_, inputs[0].As<T>(), inputs[1].As<T>(),
                       outputs[0].As<std::int8_t>(), count_);
    });
  }

 private:
  void* stream_;
  CompareOpKind kind_;
  std::int64_t count_;
  BroadcastPlan plan_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"compare", Device::Kind::kCuda, DType::kF32}, &MakeKernel<CompareCuda<float>>);
  RegisterKernel({"compare", Device::Kind::kCuda, DType::kF64}, &MakeKernel<CompareCuda<double>>);
  RegisterKernel({"compare", Device::Kind::kCuda, DType::kI32}, &MakeKernel<CompareCuda<std::int32_t>>);
  RegisterKernel({"compare", Device::Kind::kCuda, DType::kI64}, &MakeKernel<CompareCuda<std::int64_t>>);
  RegisterKernel({"compare", Device::Kind::kCuda, DType::kU8}, &MakeKernel<CompareCuda<std::uint8_t>>);
  RegisterKernel({"compare", Device::Kind::kCuda, DType::kI8}, &MakeKernel<CompareCuda<std::int8_t>>);
}

}  // namespace
}  // namespace weir::internal
