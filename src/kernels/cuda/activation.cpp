// relu, sigmoid and tanh and their gradients on CUDA: the functors of kernels/functors/activation.hpp,
// which the CPU kernels run, through the elementwise launcher.
#include <cstdint>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"

namespace weir::internal {
namespace {

template <typename T, cuda::Activation kKind> class ActivationCuda final : public Kernel {
 public:
  explicit ActivationCuda(const KernelSetup& setup) : stream_(CudaStreamOf(setup)), count_(setup.inputs[0].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::ActivationForward<T>(stream_, kKind, inputs[0].As<T>(), outputs[0].As<T>(), count_);
  }

 private:
  void* stream_;
  std::int64_t count_;
};

// Inputs (dy, y).
template <typename T, cuda::Activation kKind> class ActivationGradCuda final : public Kernel {
 public:
  explicit ActivationGradCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), count_(setup.inputs[0].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::ActivationGrad<T>(stream_, kKind, inputs[0].As<T>(), inputs[1].As<T>(), outputs[0].As<T>(), count_);
  }

 private:
  void* stream_;
  std::int64_t count_;
};

template <cuda::Activation kKind> void Register(const char* forward, const char* grad) {
  RegisterKernel({forward, Device::Kind::kCuda, DType::kF32}, &MakeKernel<ActivationCuda<float, kKind>>);
  RegisterKernel({forward, Device::Kind::kCuda, DType::kF64}, &MakeKernel<ActivationCuda<double, kKind>>);
  RegisterKernel({grad, Device::Kind::kCuda, DType::kF32}, &MakeKernel<ActivationGradCuda<float, kKind>>);
  RegisterKernel({grad, Device::Kind::kCuda, DType::kF64}, &MakeKernel<ActivationGradCuda<double, kKind>>);
}

WEIR_REGISTER_KERNELS {
  Register<cuda::Activation::kRelu>("relu", "relu_grad");
  Register<cuda::Activation::kSigmoid>("sigmoid", "sigmoid_grad");
  Register<cuda::Activation::kTanh>("tanh", "tanh_grad");
}

}  // namespace
}  // namespace weir::internal
