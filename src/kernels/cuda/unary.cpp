// unary and unary_grad on CUDA: the functors of kernels/functors/unary.hpp, which the CPU kernels
// run, through the elementwise launcher.
#include <cstdint>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> class UnaryCuda final : public Kernel {
 public:
  explicit UnaryCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), kind_(setup.Get<UnaryAttrs>().kind), count_(setup.inputs[0].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::Unary<T>(stream_, kind_, inputs[0].As<T>(), outputs[0].As<T>(), count_);
  }

 private:
  void* stream_;
  UnaryOpKind kind_;
  std::int64_t count_;
};

template <typename T> class UnaryGradCuda final : public Kernel {
 public:
  explicit UnaryGradCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), kind_(setup.Get<UnaryAttrs>().kind), count_(setup.inputs[0].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::UnaryGrad<T>(stream_, kind_, inputs[0].As<T>(), inputs[1].As<T>(), outputs[0].As<T>(), count_);
  }

 private:
  void* stream_;
  UnaryOpKind kind_;
  std::int64_t count_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"unary", Device::Kind::kCuda, DType::kF32}, &MakeKernel<UnaryCuda<float>>);
  RegisterKernel({"unary", Device::Kind::kCuda, DType::kF64}, &MakeKernel<UnaryCuda<double>>);
  RegisterKernel({"unary", Device::Kind::kCuda, DType::kI32}, &MakeKernel<UnaryCuda<std::int32_t>>);
  RegisterKernel({"unary", Device::Kind::kCuda, DType::kI64}, &MakeKernel<UnaryCuda<std::int64_t>>);
  RegisterKernel({"unary_grad", Device::Kind::kCuda, DType::kF32}, &MakeKernel<UnaryGradCuda<float>>);
  RegisterKernel({"unary_grad", Device::Kind::kCuda, DType::kF64}, &MakeKernel<UnaryGradCuda<double>>);
}

}  // namespace
}  // namespace weir::internal
