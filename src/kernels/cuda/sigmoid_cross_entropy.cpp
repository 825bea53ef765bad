// sigmoid_cross_entropy and its gradient on CUDA: kernels/functors/sigmoid_cross_entropy.hpp (the CPU
// kernels' math); inputs (labels z, logits x[, dy]), the gradient's outputs (dz, dx).
#include <cstdint>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"

namespace weir::internal {
namespace {

template <typename T> class SigmoidCrossEntropyCuda final : public Kernel {
 public:
  explicit SigmoidCrossEntropyCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), grad_(setup.op_type == "sigmoid_cross_entropy_grad"),
        count_(setup.inputs[1].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (grad_) {
      cuda::SigmoidCrossEntropyGrad<T>(stream_, inputs[0].As<T>(), inputs[1].As<T>(), inputs[2].As<T>(), outputs[0].As<T>(),
                                       outputs[1].As<T>(), count_);
    } else {
      cuda::SigmoidCrossEntropy<T>(stream_, inputs[0].As<T>(), inputs[1].As<T>(), outputs[0].As<T>(), count_);
    }
  }

 private:
  void* stream_;
  bool grad_;
  std::int64_t count_;
};

WEIR_REGISTER_KERNELS {
  for (const char* op : {"sigmoid_cross_entropy", "sigmoid_cross_entropy_grad"}) {
    RegisterKernel({op, Device::Kind::kCuda, DType::kF32}, &MakeKernel<SigmoidCrossEntropyCuda<float>>);
    RegisterKernel({op, Device::Kind::kCuda, DType::kF64}, &MakeKernel<SigmoidCrossEntropyCuda<double>>);
  }
}

}  // namespace
}  // namespace weir::internal
