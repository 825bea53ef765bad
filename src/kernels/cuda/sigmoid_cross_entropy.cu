// sigmoid_cross_entropy and its gradient on CUDA: kernels/functors/sigmoid_cross_entropy.hpp (the CPU
// kernels' math); inputs (labels z, logits x[, dy]), the gradient's outputs (dz, dx).
#include <cstdint>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/sigmoid_cross_entropy.hpp"

namespace weir::internal {
namespace {

template <typename T> __global__ void SigmoidCrossEntropyKernel(const T* z, const T* x, T* loss, std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) { loss[i] = SigmoidCrossEntropy(z[i], x[i]); }
}
template <typename T>
__global__ void SigmoidCrossEntropyGradKernel(const T* z, const T* x, const T* dy, T* dz, T* dx, std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) { SigmoidCrossEntropyGrad(z[i], x[i], dy[i], dz[i], dx[i]); }
}

template <typename T, bool kGrad> class SigmoidCrossEntropyCuda final : public Kernel {
 public:
  explicit SigmoidCrossEntropyCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), count_(setup.inputs[1].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if constexpr (kGrad) {
      cuda::LaunchOver(stream_, count_, &SigmoidCrossEntropyGradKernel<T>, inputs[0].As<T>(), inputs[1].As<T>(),
                       inputs[2].As<T>(), outputs[0].As<T>(), outputs[1].As<T>(), count_);
    } else {
      cuda::LaunchOver(stream_, count_, &SigmoidCrossEntropyKernel<T>, inputs[0].As<T>(), inputs[1].As<T>(),
                       outputs[0].As<T>(), count_);
    }
  }

 private:
  void* stream_;
  std::int64_t count_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"sigmoid_cross_entropy", Device::Kind::kCuda, DType::kF32},
                 &MakeKernel<SigmoidCrossEntropyCuda<float, false>>);
  RegisterKernel({"sigmoid_cross_entropy", Device::Kind::kCuda, DType::kF64},
                 &MakeKernel<SigmoidCrossEntropyCuda<double, false>>);
  RegisterKernel({"sigmoid_cross_entropy_grad", Device::Kind::kCuda, DType::kF32},
                 &MakeKernel<SigmoidCrossEntropyCuda<float, true>>);
  RegisterKernel({"sigmoid_cross_entropy_grad", Device::Kind::kCuda, DType::kF64},
                 &MakeKernel<SigmoidCrossEntropyCuda<double, true>>);
}

}  // namespace
}  // namespace weir::internal
