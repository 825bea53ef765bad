// softmax_cross_entropy (dense labels) and its gradient on CUDA: the CPU kernels' row math
// (kernels/functors/softmax.hpp), a thread per row of the last axis.
#include <cstdint>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"

namespace weir::internal {
namespace {

template <typename T> class SoftmaxCrossEntropyCuda final : public Kernel {
 public:
  explicit SoftmaxCrossEntropyCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), grad_(setup.op_type == "softmax_cross_entropy_grad"),
        rows_(grad_ ? setup.inputs[2].shape.NumElements() : setup.outputs[0].shape.NumElements()),
        classes_(setup.inputs[1].shape[setup.inputs[1].shape.Rank() - 1]) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (grad_) {  // (labels, logits, dy) -> (dlabels, dlogits)
      cuda::SoftmaxCrossEntropyGrad<T>(stream_, inputs[0].As<T>(), inputs[1].As<T>(), inputs[2].As<T>(), outputs[0].As<T>(),
                                       outputs[1].As<T>(), rows_, classes_);
    } else {
      cuda::SoftmaxCrossEntropy<T>(stream_, inputs[0].As<T>(), inputs[1].As<T>(), outputs[0].As<T>(), rows_, classes_);
    }
  }

 private:
  void* stream_;
  bool grad_;
  std::int64_t rows_;
  std::int64_t classes_;
};

WEIR_REGISTER_KERNELS {
  for (const char* op : {"softmax_cross_entropy", "softmax_cross_entropy_grad"}) {
    RegisterKernel({op, Device::Kind::kCuda, DType::kF32}, &MakeKernel<SoftmaxCrossEntropyCuda<float>>);
    RegisterKernel({op, Device::Kind::kCuda, DType::kF64}, &MakeKernel<SoftmaxCrossEntropyCuda<double>>);
  }
}

}  // namespace
}  // namespace weir::internal
