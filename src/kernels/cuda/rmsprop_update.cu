// rmsprop_update on CUDA: a thread per element runs the CPU kernel's step (kernels/functors/update.hpp)
// in place, the learning rate read on the device. Inputs as on the CPU: (p, g, lr, mean square[, mean
// gradient when centered][, skip flag]).
#include <cstdint>

#include "kernels/attrs/update_params.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"

namespace weir::internal {
namespace {

// mean_gradient null: not centered.
template <typename T>
__global__ void RmsPropKernel(T* p, T* mean_square, T* mean_gradient, const T* g, const float* lr, T decay,
                              T one_minus_decay, T epsilon, RegularizedGradient<T> regularized, const float* skip,
                              std::int64_t count) {
  if (SkipsStep(skip)) return;  // dynamic loss scaling's non-finite step (every thread alike)
  const T rate = static_cast<T>(*lr);
  WEIR_FOR_EACH_ELEMENT(i, count) {
    RmsPropStep(p[i], mean_square[i], mean_gradient != nullptr ? &mean_gradient[i] : nullptr, g[i], rate, decay,
                one_minus_decay, epsilon, regularized);
  }
}

template <typename T> class RmsPropUpdateCuda final : public Kernel {
 public:
  explicit RmsPropUpdateCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), attrs_(setup.Get<UpdateAttrs>()),
        regularized_(MakeRegularizedGradient<T>(attrs_)), count_(setup.inputs[0].shape.NumElements()),
        centered_(attrs_.optimizer.centered) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    const double decay = attrs_.optimizer.decay_rate;
    cuda::LaunchOver(stream_, count_, &RmsPropKernel<T>, MutableOf<T>(inputs[0]), MutableOf<T>(inputs[3]),
                     centered_ ? MutableOf<T>(inputs[4]) : nullptr, inputs[1].As<T>(), inputs[2].As<float>(),
                     static_cast<T>(decay), static_cast<T>(1 - decay), static_cast<T>(attrs_.optimizer.epsilon),
                     regularized_, SkipFlagOf(attrs_, inputs), count_);
  }

 private:
  void* stream_;
  UpdateAttrs attrs_;
  RegularizedGradient<T> regularized_;
  std::int64_t count_;
  bool centered_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"rmsprop_update", Device::Kind::kCuda, DType::kF32}, &MakeKernel<RmsPropUpdateCuda<float>>);
  RegisterKernel({"rmsprop_update", Device::Kind::kCuda, DType::kF64}, &MakeKernel<RmsPropUpdateCuda<double>>);
}

}  // namespace
}  // namespace weir::internal
