// slice on the CPU: a strided copy from the first element taken (kernels/cpu/strided_copy.hpp).
#include <cstdint>

#include "kernels/attrs/slice_attrs.hpp"
#include "kernels/cpu/strided_copy.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T> class SliceCpu final : public Kernel {
 public:
  explicit SliceCpu(const KernelSetup& setup) : view_(SliceViewOf(setup.inputs[0].shape, setup.Get<SliceAttrs>())), copy_(view_.dims, view_.strides) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (outputs[0].NumElements() == 0) return;
    copy_.Run(inputs[0].As<T>() + view_.offset, outputs[0].As<T>());
  }

 private:
  SliceView view_;
  StridedCopy<T> copy_;
};

WEIR_REGISTER_KERNELS {
  for (DType dtype : kByteDTypes) RegisterKernel({"slice", Device::Kind::kCpu, dtype}, &MakeKernel<SliceCpu<std::uint8_t>>);
  for (DType dtype : {DType::kF32, DType::kI32}) RegisterKernel({"slice", Device::Kind::kCpu, dtype}, &MakeKernel<SliceCpu<std::uint32_t>>);
  for (DType dtype : {DType::kF64, DType::kI64}) RegisterKernel({"slice", Device::Kind::kCpu, dtype}, &MakeKernel<SliceCpu<std::uint64_t>>);
}

}  // namespace
}  // namespace weir::internal
