// lamb_update on CUDA, in place: m, v and the direction u (kernels/functors/update.hpp, the CPU
// kernel's math) with the squared norms of p and u summed into two doubles on the device, then
// p -= lr ‖p‖/‖u‖ (u + wd p) in a second launch. Inputs as on the CPU: (p, g, lr, m, v, train step[, skip flag]);
// the direction and the two sums live in scratch memory.
#include <cstdint>

#include "kernels/attrs/update_params.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"

namespace weir::internal {
namespace {

template <typename T>
__global__ void LambDirectionKernel(const T* p, T* m, T* v, const T* g, const std::int64_t* train_step, double beta1,
                                    double beta2, AdamConstants<T> constants, RegularizedGradient<T> regularized, T* u,
                                    double* square_sums, const float* skip, std::int64_t count) {
  if (SkipsStep(skip)) return;  // dynamic loss scaling's non-finite step (every thread alike)
  const double t = static_cast<double>(*train_step + 1);
  const T correction1 = static_cast<T>(1 - pow(beta1, t));
  const T correction2 = static_cast<T>(1 - pow(beta2, t));
  double p_squares = 0, u_squares = 0;
  WEIR_FOR_EACH_ELEMENT(i, count) {
    u[i] = LambDirection(p[i], m[i], v[i], g[i], constants, correction1, correction2, regularized);
    p_squares += static_cast<double>(p[i]) * p[i];
    u_squares += static_cast<double>(u[i]) * u[i];
  }
  p_squares = cuda::BlockSum(p_squares);
  u_squares = cuda::BlockSum(u_squares);
  if (threadIdx.x == 0) {
    atomicAdd(&square_sums[0], p_squares);
    atomicAdd(&square_sums[1], u_squares);
  }
}

template <typename T>
__global__ void LambApplyKernel(T* p, const T* u, const float* lr, const double* square_sums, T weight_decay,
                                const float* skip, std::int64_t count) {
  if (SkipsStep(skip)) return;  // dynamic loss scaling's non-finite step (every thread alike)
  const T rate = static_cast<T>(*lr * LambTrustRatio(square_sums[0], square_sums[1]));
  WEIR_FOR_EACH_ELEMENT(i, count) { p[i] -= rate * (u[i] + weight_decay * p[i]); }
}

template <typename T> class LambUpdateCuda final : public Kernel {
 public:
  explicit LambUpdateCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), attrs_(setup.Get<UpdateAttrs>()), regularized_(MakeRegularizedGradient<T>(attrs_)),
        constants_(MakeAdamConstants<T>(attrs_.optimizer)), count_(setup.inputs[0].shape.NumElements()),
        scratch_(setup.device.index, 2 * sizeof(double) + static_cast<std::size_t>(count_) * sizeof(T)) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    const Optimizer& optimizer = attrs_.optimizer;
    const float* skip = SkipFlagOf(attrs_, inputs);
    T* p = MutableOf<T>(inputs[0]);
    T* direction = scratch_.As<T>(2 * sizeof(double));
    double* square_sums = scratch_.As<double>();
    cuda::Zero(stream_, square_sums, 2 * sizeof(double));
    cuda::LaunchOver(stream_, count_, &LambDirectionKernel<T>, p, MutableOf<T>(inputs[3]), MutableOf<T>(inputs[4]),
                     inputs[1].As<T>(), inputs[5].As<std::int64_t>(), optimizer.beta1, optimizer.beta2, constants_,
                     regularized_, direction, square_sums, skip, count_);
    cuda::LaunchOver(stream_, count_, &LambApplyKernel<T>, p, direction, inputs[2].As<float>(), square_sums,
                     static_cast<T>(optimizer.weight_decay), skip, count_);
  }

 private:
  void* stream_;
  UpdateAttrs attrs_;
  RegularizedGradient<T> regularized_;
  AdamConstants<T> constants_;
  std::int64_t count_;
  DeviceScratch scratch_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"lamb_update", Device::Kind::kCuda, DType::kF32}, &MakeKernel<LambUpdateCuda<float>>);
  RegisterKernel({"lamb_update", Device::Kind::kCuda, DType::kF64}, &MakeKernel<LambUpdateCuda<double>>);
}

}  // namespace
}  // namespace weir::internal
