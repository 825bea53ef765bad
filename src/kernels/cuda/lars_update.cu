// lars_update on CUDA, in place: the sums of squares of the variable and of its regularized gradient
// summed into two doubles on the device, then the rate (the CPU kernel's LarsRate) and the momentum
// step (LarsStep, kernels/functors/update.hpp) in a second launch. Inputs as on the CPU: (p, g, lr,
// momentum[, skip flag]).
#include <cstdint>

#include "kernels/attrs/update_params.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"

namespace weir::internal {
namespace {

template <typename T>
__global__ void LarsSquareSumsKernel(const T* p, const T* g, RegularizedGradient<T> regularized, double* square_sums,
                                     const float* skip, std::int64_t count) {
  if (SkipsStep(skip)) return;  // dynamic loss scaling's non-finite step (every thread alike)
  double p_squares = 0, g_squares = 0;
  WEIR_FOR_EACH_ELEMENT(i, count) {
    const double gradient = regularized(g[i], p[i]);
    p_squares += static_cast<double>(p[i]) * p[i];
    g_squares += gradient * gradient;
  }
  p_squares = cuda::BlockSum(p_squares);
  g_squares = cuda::BlockSum(g_squares);
  if (threadIdx.x == 0) {
    atomicAdd(&square_sums[0], p_squares);
    atomicAdd(&square_sums[1], g_squares);
  }
}

template <typename T>
__global__ void LarsApplyKernel(T* p, T* v, const T* g, const float* lr, const double* square_sums, double coefficient,
                                double epsilon, T beta, RegularizedGradient<T> regularized, const float* skip,
                                std::int64_t count) {
  if (SkipsStep(skip)) return;
  const T rate = static_cast<T>(LarsRate(*lr, coefficient, epsilon, square_sums[0], square_sums[1]));
  WEIR_FOR_EACH_ELEMENT(i, count) { LarsStep(p[i], v[i], g[i], rate, beta, regularized); }
}

template <typename T> class LarsUpdateCuda final : public Kernel {
 public:
  explicit LarsUpdateCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), attrs_(setup.Get<UpdateAttrs>()), regularized_(MakeRegularizedGradient<T>(attrs_)),
        count_(setup.inputs[0].shape.NumElements()), scratch_(setup.device.index, 2 * sizeof(double)) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    const Optimizer& optimizer = attrs_.optimizer;
    const float* skip = SkipFlagOf(attrs_, inputs);
    T* p = MutableOf<T>(inputs[0]);
    double* square_sums = scratch_.As<double>();
    cuda::Zero(stream_, square_sums, 2 * sizeof(double));
    cuda::LaunchOver(stream_, count_, &LarsSquareSumsKernel<T>, p, inputs[1].As<T>(), regularized_, square_sums, skip,
                     count_);
    cuda::LaunchOver(stream_, count_, &LarsApplyKernel<T>, p, MutableOf<T>(inputs[3]), inputs[1].As<T>(),
                     inputs[2].As<float>(), square_sums, optimizer.lars_coefficient, optimizer.epsilon,
                     static_cast<T>(optimizer.momentum), regularized_, skip, count_);
  }

 private:
  void* stream_;
  UpdateAttrs attrs_;
  RegularizedGradient<T> regularized_;
  std::int64_t count_;
  DeviceScratch scratch_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"lars_update", Device::Kind::kCuda, DType::kF32}, &MakeKernel<LarsUpdateCuda<float>>);
  RegisterKernel({"lars_update", Device::Kind::kCuda, DType::kF64}, &MakeKernel<LarsUpdateCuda<double>>);
}

}  // namespace
}  // namespace weir::internal
