// clip_by_value and its gradient on CUDA: kernels/functors/clip.hpp with the CPU kernels' bounds.
#include <cstdint>
#include <utility>

#include "kernels/attrs/clip_bounds.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/clip.hpp"

namespace weir::internal {
namespace {

template <typename T> __global__ void ClipKernel(const T* x, T* y, T lo, T hi, std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) { y[i] = Clip(x[i], lo, hi); }
}
template <typename T>
__global__ void ClipGradKernel(const T* dy, const T* x, T* dx, T lo, T hi, bool open, std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) { dx[i] = ClipGrad(dy[i], x[i], lo, hi, open); }
}

// kGrad: clip_by_value_grad, inputs (dy, x).
template <typename T, bool kGrad> class ClipByValueCuda final : public Kernel {
 public:
  explicit ClipByValueCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), bounds_(ClipBounds<T>(setup.Get<ClipAttrs>())),
        open_(setup.Get<ClipAttrs>().open_gradient), count_(setup.inputs[0].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const auto [lo, hi] = bounds_;
    if constexpr (kGrad) {
      cuda::LaunchOver(stream_, count_, &ClipGradKernel<T>, inputs[0].As<T>(), inputs[1].As<T>(), outputs[0].As<T>(), lo,
                       hi, open_, count_);
    } else {
      cuda::LaunchOver(stream_, count_, &ClipKernel<T>, inputs[0].As<T>(), outputs[0].As<T>(), lo, hi, count_);
    }
  }

 private:
  void* stream_;
  std::pair<T, T> bounds_;
  bool open_;
  std::int64_t count_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"clip_by_value", Device::Kind::kCuda, DType::kF32}, &MakeKernel<ClipByValueCuda<float, false>>);
  RegisterKernel({"clip_by_value", Device::Kind::kCuda, DType::kF64}, &MakeKernel<ClipByValueCuda<double, false>>);
  RegisterKernel({"clip_by_value", Device::Kind::kCuda, DType::kI32}, &MakeKernel<ClipByValueCuda<std::int32_t, false>>);
  RegisterKernel({"clip_by_value", Device::Kind::kCuda, DType::kI64}, &MakeKernel<ClipByValueCuda<std::int64_t, false>>);
  RegisterKernel({"clip_by_value_grad", Device::Kind::kCuda, DType::kF32}, &MakeKernel<ClipByValueCuda<float, true>>);
  RegisterKernel({"clip_by_value_grad", Device::Kind::kCuda, DType::kF64}, &MakeKernel<ClipByValueCuda<double, true>>);
}

}  // namespace
}  // namespace weir::internal
