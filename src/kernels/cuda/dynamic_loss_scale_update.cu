// dynamic_loss_scale_update on CUDA: one thread runs the CPU kernel's step (kernels/functors/update.hpp)
// on the device, in place, so that a captured step replays it.
#include <cstdint>

#include "common/cuda_check.cuh"

#include "kernels/attrs/update_attrs.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/update.hpp"

namespace weir::internal {
namespace {

__global__ void DynamicLossScaleKernel(float* scale, std::int64_t* good_steps, std::int64_t* skipped_steps,
                                       const float* flag, std::int64_t increment_period, double multiplier) {
  DynamicLossScaleStep(*flag, *scale, *good_steps, *skipped_steps, increment_period, multiplier);
}

class DynamicLossScaleUpdateCuda final : public Kernel {
 public:
  explicit DynamicLossScaleUpdateCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), attrs_(setup.Get<DynamicLossScaleAttrs>()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    DynamicLossScaleKernel<<<1, 1, 0, cuda::Native(stream_)>>>(MutableOf<float>(inputs[0]), MutableOf<std::int64_t>(inputs[1]),
                                                                MutableOf<std::int64_t>(inputs[2]), inputs[3].As<float>(),
                                                                attrs_.increment_period, attrs_.multiplier);
    WEIR_CUDA_CHECK(cudaGetLastError());
  }

 private:
  void* stream_;
  DynamicLossScaleAttrs attrs_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"dynamic_loss_scale_update", Device::Kind::kCuda, DType::kF32},
                 &MakeKernel<DynamicLossScaleUpdateCuda>);
}

}  // namespace
}  // namespace weir::internal
