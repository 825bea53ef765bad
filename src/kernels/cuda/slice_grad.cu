// slice_grad on CUDA: dx zeroed, then each element of dy written to dx at its place in the slice's
// strided view, whose walk is a gather plan (kernels/functors/binary.hpp).
#include <cstdint>

#include "kernels/attrs/slice_attrs.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/binary.hpp"

namespace weir::internal {
namespace {

template <typename T> __global__ void SliceScatterKernel(BroadcastPlan plan, const T* dy, T* dx, std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) {
    std::int64_t to = i, unused = 0;
    if (plan.rank > 0) plan.Offsets(i, to, unused);
    dx[to] = dy[i];
  }
}

template <typename T> class SliceGradCuda final : public Kernel {
 public:
  explicit SliceGradCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), count_(setup.inputs[0].shape.NumElements()),
        dx_bytes_(static_cast<std::size_t>(setup.outputs[0].NumBytes())) {
    const auto& attrs = setup.Get<SliceGradAttrs>();
    view_ = SliceViewOf(attrs.x_shape, attrs.slice);
    if (!PlanGather(view_.dims, view_.strides, plan_)) {
      throw std::invalid_argument(fmt::format("[slice_grad] '{}': {} has too many axes", setup.op_name, attrs.x_shape));
    }
  }
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::Zero(stream_, outputs[0].data, dx_bytes_);
    cuda::LaunchOver(stream_, count_, &SliceScatterKernel<T>, plan_, inputs[0].As<T>(), outputs[0].As<T>() + view_.offset,
                     count_);
  }

 private:
  void* stream_;
  std::int64_t count_;
  std::size_t dx_bytes_;
  SliceView view_;
  BroadcastPlan plan_;
};

WEIR_REGISTER_KERNELS {
  for (DType dtype : {DType::kF32, DType::kI32}) {
    RegisterKernel({"slice_grad", Device::Kind::kCuda, dtype}, &MakeKernel<SliceGradCuda<std::uint32_t>>);
  }
  for (DType dtype : {DType::kF64, DType::kI64}) {
    RegisterKernel({"slice_grad", Device::Kind::kCuda, dtype}, &MakeKernel<SliceGradCuda<std::uint64_t>>);
  }
}

}  // namespace
}  // namespace weir::internal
