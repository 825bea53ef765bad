// broadcast_to on the CPU: a strided copy with stride 0 along broadcast axes.
#include <cstdint>
#include <vector>

#include "kernels/cpu/strided_copy.hpp"
#include "kernels/attrs/gradient_attrs.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T> class BroadcastToCpu final : public Kernel {
 public:
  explicit BroadcastToCpu(const KernelSetup& setup)
      : copy_(setup.outputs[0].shape.Dims(), BroadcastStrides(setup.inputs[0].shape, setup.outputs[0].shape)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    copy_.Run(inputs[0].As<T>(), outputs[0].As<T>());
  }

 private:
  // x's contiguous strides, aligned with the output's axes; 0 where x is broadcast.
  static std::vector<std::int64_t> BroadcastStrides(const Shape& x, const Shape& out) {
    const int offset = out.Rank() - x.Rank();
    std::vector<std::int64_t> strides(static_cast<std::size_t>(out.Rank()), 0);
    std::int64_t stride = 1;
    for (int i = x.Rank() - 1; i >= 0; --i) {
      if (x[i] != 1) strides[static_cast<std::size_t>(offset + i)] = stride;
      stride *= x[i];
    }
    return strides;
  }

  StridedCopy<T> copy_;
};

WEIR_REGISTER_KERNELS {
  for (DType dtype : {DType::kF32, DType::kI32}) {
    RegisterKernel({"broadcast_to", Device::Kind::kCpu, dtype}, &MakeKernel<BroadcastToCpu<std::uint32_t>>);
  }
  for (DType dtype : {DType::kF64, DType::kI64}) {
    RegisterKernel({"broadcast_to", Device::Kind::kCpu, dtype}, &MakeKernel<BroadcastToCpu<std::uint64_t>>);
  }
}

}  // namespace
}  // namespace weir::internal
