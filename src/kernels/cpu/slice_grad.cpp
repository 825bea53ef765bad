// slice_grad on the CPU: dx zeroed, then each element of dy written where the slice read it.
#include <cstdint>
#include <cstring>

#include "kernels/attrs/slice_attrs.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T> class SliceGradCpu final : public Kernel {
 public:
  explicit SliceGradCpu(const KernelSetup& setup)
      : view_(SliceViewOf(setup.Get<SliceGradAttrs>().x_shape, setup.Get<SliceGradAttrs>().slice)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    T* dx = outputs[0].As<T>();
    std::memset(dx, 0, static_cast<std::size_t>(outputs[0].NumElements()) * sizeof(T));
    const std::int64_t count = inputs[0].NumElements();
    if (count == 0) return;
    const T* dy = inputs[0].As<T>();
    const std::size_t rank = view_.dims.size();
    std::vector<std::int64_t> coordinate(rank, 0);
    std::int64_t offset = view_.offset;
    for (std::int64_t i = 0; i < count; ++i) {
      dx[offset] = dy[i];
      // The next element of dy in row-major order: carry along the axes from the last.
      for (std::size_t axis = rank; axis-- > 0;) {
        offset += view_.strides[axis];
        if (++coordinate[axis] < view_.dims[axis]) break;
        offset -= view_.strides[axis] * view_.dims[axis];
        coordinate[axis] = 0;
      }
    }
  }

 private:
  SliceView view_;
};

WEIR_REGISTER_KERNELS {
  for (DType dtype : {DType::kF32, DType::kI32}) {
    RegisterKernel({"slice_grad", Device::Kind::kCpu, dtype}, &MakeKernel<SliceGradCpu<std::uint32_t>>);
  }
  for (DType dtype : {DType::kF64, DType::kI64}) {
    RegisterKernel({"slice_grad", Device::Kind::kCpu, dtype}, &MakeKernel<SliceGradCpu<std::uint64_t>>);
  }
}

}  // namespace
}  // namespace weir::internal
