// broadcast_to on CUDA: x's bytes read through the broadcast plan of kernels/functors/binary.hpp.
#include <cstdint>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"

namespace weir::internal {
namespace {

template <typename T> class BroadcastToCuda final : public Kernel {
 public:
  explicit BroadcastToCuda(const KernelSetup& setup) : stream_(CudaStreamOf(setup)), count_(setup.outputs[0].shape.NumElements()) {
    const Shape& x = setup.inputs[0].shape;
    const Shape& out = setup.outputs[0].shape;
    if (x != out && !PlanBroadcast(x.Dims(), x.Dims(), out.Dims(), plan_)) {
      throw std::invalid_argument(fmt::format("[broadcast_to] '{}': {} to {} has too many axes", setup.op_name, x, out));
    }
  }
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::BroadcastCopy<T>(stream_, plan_, inputs[0].As<T>(), outputs[0].As<T>(), count_);
  }

 private:
  void* stream_;
  BroadcastPlan plan_;  // rank 0 when x has the output's shape
  std::int64_t count_;
};

WEIR_REGISTER_KERNELS {
  for (DType dtype : {DType::kF32, DType::kI32}) {
    RegisterKernel({"broadcast_to", Device::Kind::kCuda, dtype}, &MakeKernel<BroadcastToCuda<std::uint32_t>>);
  }
  for (DType dtype : {DType::kF64, DType::kI64}) {
    RegisterKernel({"broadcast_to", Device::Kind::kCuda, dtype}, &MakeKernel<BroadcastToCuda<std::uint64_t>>);
  }
}

}  // namespace
}  // namespace weir::internal
