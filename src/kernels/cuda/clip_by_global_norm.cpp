// clip_by_global_norm on CUDA: every gradient's squares added into one double on the device, then
// each gradient scaled by clip_norm / max(global_norm, clip_norm), as the CPU kernel does.
#include <cstdint>

#include "kernels/attrs/update_attrs.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"

namespace weir::internal {
namespace {

class ClipByGlobalNormCuda final : public Kernel {
 public:
  explicit ClipByGlobalNormCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), attrs_(setup.Get<ClipByGlobalNormAttrs>()), scratch_(setup.device.index, sizeof(double)) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    double* square_sum = scratch_.As<double>();
    cuda::Zero(stream_, square_sum, sizeof(double));
    for (const ConstTensorView& x : inputs) {
      if (x.GetDType() == DType::kF32) cuda::AddSquares<float>(stream_, x.As<float>(), x.NumElements(), square_sum);
      else cuda::AddSquares<double>(stream_, x.As<double>(), x.NumElements(), square_sum);
    }
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const std::int64_t count = inputs[i].NumElements();
      if (inputs[i].GetDType() == DType::kF32) {
        cuda::ScaleByGlobalNorm<float>(stream_, inputs[i].As<float>(), outputs[i].As<float>(), count, square_sum,
                                       attrs_.gradient_scale, attrs_.clip_norm);
      } else {
        cuda::ScaleByGlobalNorm<double>(stream_, inputs[i].As<double>(), outputs[i].As<double>(), count, square_sum,
                                        attrs_.gradient_scale, attrs_.clip_norm);
      }
    }
  }

 private:
  void* stream_;
  ClipByGlobalNormAttrs attrs_;
  DeviceScratch scratch_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"clip_by_global_norm", Device::Kind::kCuda, DType::kF32}, &MakeKernel<ClipByGlobalNormCuda>);
  RegisterKernel({"clip_by_global_norm", Device::Kind::kCuda, DType::kF64}, &MakeKernel<ClipByGlobalNormCuda>);
}

}  // namespace
}  // namespace weir::internal
