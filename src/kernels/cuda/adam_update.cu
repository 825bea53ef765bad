// adam_update on CUDA: a thread per element runs the CPU kernel's step (kernels/functors/update.hpp) in
// place, the learning rate and (with bias correction) the train step read on the device. Inputs as on
// the CPU: (p, g, lr, m, v[, train step][, skip flag]).
#include <cstdint>

#include "kernels/attrs/update_params.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"

namespace weir::internal {
namespace {

// train_step null: no bias correction.
template <typename T>
__global__ void AdamKernel(T* p, T* m, T* v, const T* g, const float* lr, const std::int64_t* train_step, double beta1,
                           double beta2, AdamConstants<T> constants, RegularizedGradient<T> regularized,
                           const float* skip, std::int64_t count) {
  if (SkipsStep(skip)) return;  // dynamic loss scaling's non-finite step (every thread alike)
  // Every thread derives the same rate from the two scalars (cheaper than another launch).
  const double corrected = train_step == nullptr ? *lr : AdamBiasCorrectedRate(*lr, beta1, beta2, *train_step);
  const T rate = static_cast<T>(corrected);
  WEIR_FOR_EACH_ELEMENT(i, count) { AdamStep(p[i], m[i], v[i], g[i], rate, constants, regularized); }
}

template <typename T> class AdamUpdateCuda final : public Kernel {
 public:
  explicit AdamUpdateCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), attrs_(setup.Get<UpdateAttrs>()), optimizer_(attrs_.optimizer),
        regularized_(MakeRegularizedGradient<T>(setup.Get<UpdateAttrs>())), constants_(MakeAdamConstants<T>(optimizer_)),
        count_(setup.inputs[0].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    const std::int64_t* step = optimizer_.do_bias_correction ? inputs[5].As<std::int64_t>() : nullptr;
    cuda::LaunchOver(stream_, count_, &AdamKernel<T>, MutableOf<T>(inputs[0]), MutableOf<T>(inputs[3]),
                     MutableOf<T>(inputs[4]), inputs[1].As<T>(), inputs[2].As<float>(), step, optimizer_.beta1,
                     optimizer_.beta2, constants_, regularized_, SkipFlagOf(attrs_, inputs), count_);
  }

 private:
  void* stream_;
  UpdateAttrs attrs_;
  Optimizer optimizer_;
  RegularizedGradient<T> regularized_;
  AdamConstants<T> constants_;
  std::int64_t count_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"adam_update", Device::Kind::kCuda, DType::kF32}, &MakeKernel<AdamUpdateCuda<float>>);
  RegisterKernel({"adam_update", Device::Kind::kCuda, DType::kF64}, &MakeKernel<AdamUpdateCuda<double>>);
}

}  // namespace
}  // namespace weir::internal
