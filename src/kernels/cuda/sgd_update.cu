// sgd_update and momentum_update on CUDA: a thread per element runs the CPU kernels' step
// (kernels/functors/update.hpp) in place, the learning rate read on the device. Inputs as on the CPU:
// (p, g, lr[, v][, skip flag]).
#include <cstdint>

#include "kernels/attrs/update_params.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"

namespace weir::internal {
namespace {

template <typename T>
__global__ void SgdKernel(T* p, const T* g, const float* lr, RegularizedGradient<T> regularized, const float* skip,
                          std::int64_t count) {
  if (SkipsStep(skip)) return;  // dynamic loss scaling's non-finite step (every thread alike)
  const T rate = static_cast<T>(*lr);
  WEIR_FOR_EACH_ELEMENT(i, count) { SgdStep(p[i], g[i], rate, regularized); }
}

template <typename T>
__global__ void MomentumKernel(T* p, T* v, const T* g, const float* lr, T beta, RegularizedGradient<T> regularized,
                               const float* skip, std::int64_t count) {
  if (SkipsStep(skip)) return;  // dynamic loss scaling's non-finite step (every thread alike)
  const T rate = static_cast<T>(*lr);
  WEIR_FOR_EACH_ELEMENT(i, count) { MomentumStep(p[i], v[i], g[i], rate, beta, regularized); }
}

// kMomentum: momentum_update, with the slot v as input 3.
template <typename T, bool kMomentum> class SgdUpdateCuda final : public Kernel {
 public:
  explicit SgdUpdateCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), attrs_(setup.Get<UpdateAttrs>()), regularized_(MakeRegularizedGradient<T>(attrs_)),
        beta_(static_cast<T>(setup.Get<UpdateAttrs>().optimizer.momentum)), count_(setup.inputs[0].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    const float* lr = inputs[2].As<float>();
    const float* skip = SkipFlagOf(attrs_, inputs);
    if constexpr (kMomentum) {
      cuda::LaunchOver(stream_, count_, &MomentumKernel<T>, MutableOf<T>(inputs[0]), MutableOf<T>(inputs[3]),
                       inputs[1].As<T>(), lr, beta_, regularized_, skip, count_);
    } else {
      cuda::LaunchOver(stream_, count_, &SgdKernel<T>, MutableOf<T>(inputs[0]), inputs[1].As<T>(), lr, regularized_, skip,
                       count_);
    }
  }

 private:
  void* stream_;
  UpdateAttrs attrs_;
  RegularizedGradient<T> regularized_;
  T beta_;
  std::int64_t count_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"sgd_update", Device::Kind::kCuda, DType::kF32}, &MakeKernel<SgdUpdateCuda<float, false>>);
  RegisterKernel({"sgd_update", Device::Kind::kCuda, DType::kF64}, &MakeKernel<SgdUpdateCuda<double, false>>);
  RegisterKernel({"momentum_update", Device::Kind::kCuda, DType::kF32}, &MakeKernel<SgdUpdateCuda<float, true>>);
  RegisterKernel({"momentum_update", Device::Kind::kCuda, DType::kF64}, &MakeKernel<SgdUpdateCuda<double, true>>);
}

}  // namespace
}  // namespace weir::internal
