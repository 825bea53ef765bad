// clip_by_value and its gradient on CUDA: kernels/functors/clip.hpp with the CPU kernels' bounds.
#include <cstdint>
#include <utility>

#include "kernels/attrs/clip_bounds.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"

namespace weir::internal {
namespace {

template <typename T> class ClipByValueCuda final : public Kernel {
 public:
  explicit ClipByValueCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), grad_(setup.op_type == "clip_by_value_grad"),
        bounds_(ClipBounds<T>(setup.Get<ClipAttrs>())), count_(setup.inputs[0].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const auto [lo, hi] = bounds_;
    if constexpr (std::is_floating_point_v<T>) {
      if (grad_) {
        cuda::ClipByValueGrad<T>(stream_, inputs[0].As<T>(), inputs[1].As<T>(), outputs[0].As<T>(), lo, hi, count_);
        return;
      }
    }
    cuda::ClipByValue<T>(stream_, inputs[0].As<T>(), outputs[0].As<T>(), lo, hi, count_);
  }

 private:
  void* stream_;
  bool grad_;
  std::pair<T, T> bounds_;
  std::int64_t count_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"clip_by_value", Device::Kind::kCuda, DType::kF32}, &MakeKernel<ClipByValueCuda<float>>);
  RegisterKernel({"clip_by_value", Device::Kind::kCuda, DType::kF64}, &MakeKernel<ClipByValueCuda<double>>);
  RegisterKernel({"clip_by_value", Device::Kind::kCuda, DType::kI32}, &MakeKernel<ClipByValueCuda<std::int32_t>>);
  RegisterKernel({"clip_by_value", Device::Kind::kCuda, DType::kI64}, &MakeKernel<ClipByValueCuda<std::int64_t>>);
  RegisterKernel({"clip_by_value_grad", Device::Kind::kCuda, DType::kF32}, &MakeKernel<ClipByValueCuda<float>>);
  RegisterKernel({"clip_by_value_grad", Device::Kind::kCuda, DType::kF64}, &MakeKernel<ClipByValueCuda<double>>);
}

}  // namespace
}  // namespace weir::internal
