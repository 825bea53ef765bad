// slice on CUDA: a strided gather from the first element taken, through the copy launcher's plan
// (kernels/functors/binary.hpp's PlanGather), moving the elements' bytes.
#include <cstdint>

#include "kernels/attrs/slice_attrs.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"

namespace weir::internal {
namespace {

template <typename T> class SliceCuda final : public Kernel {
 public:
  explicit SliceCuda(const KernelSetup& setup) : stream_(CudaStreamOf(setup)), count_(setup.outputs[0].shape.NumElements()) {
    view_ = SliceViewOf(setup.inputs[0].shape, setup.Get<SliceAttrs>());
    if (!PlanGather(view_.dims, view_.strides, plan_)) {
      throw std::invalid_argument(fmt::format("[slice] '{}': {} has too many axes", setup.op_name, setup.inputs[0].shape));
    }
  }
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (count_ == 0) return;
    cuda::BroadcastCopy<T>(stream_, plan_, inputs[0].As<T>() + view_.offset, outputs[0].As<T>(), count_);
  }

 private:
  void* stream_;
  SliceView view_;
  BroadcastPlan plan_;
  std::int64_t count_;
};

WEIR_REGISTER_KERNELS {
  for (DType dtype : kByteDTypes) RegisterKernel({"slice", Device::Kind::kCuda, dtype}, &MakeKernel<SliceCuda<std::uint8_t>>);
  for (DType dtype : {DType::kF32, DType::kI32}) RegisterKernel({"slice", Device::Kind::kCuda, dtype}, &MakeKernel<SliceCuda<std::uint32_t>>);
  for (DType dtype : {DType::kF64, DType::kI64}) RegisterKernel({"slice", Device::Kind::kCuda, dtype}, &MakeKernel<SliceCuda<std::uint64_t>>);
}

}  // namespace
}  // namespace weir::internal
