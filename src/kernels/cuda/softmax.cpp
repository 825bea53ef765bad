// softmax and softmax_grad on CUDA along any axis: a thread per column of x viewed as (outer, n, inner)
// running kernels/functors/softmax.hpp (the CPU kernels' math).
#include <cstdint>

#include "kernels/axis_split.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> class SoftmaxCuda final : public Kernel {
 public:
  explicit SoftmaxCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), grad_(setup.op_type == "softmax_grad"),
        split_(setup.inputs[0].shape, setup.Get<SoftmaxAttrs>().axis) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (grad_) {
      cuda::SoftmaxGrad<T>(stream_, inputs[0].As<T>(), inputs[1].As<T>(), outputs[0].As<T>(), split_.outer, split_.n,
                           split_.inner);
    } else {
      cuda::Softmax<T>(stream_, inputs[0].As<T>(), outputs[0].As<T>(), split_.outer, split_.n, split_.inner);
    }
  }

 private:
  void* stream_;
  bool grad_;
  AxisSplit split_;
};

WEIR_REGISTER_KERNELS {
  for (const char* op : {"softmax", "softmax_grad"}) {
    RegisterKernel({op, Device::Kind::kCuda, DType::kF32}, &MakeKernel<SoftmaxCuda<float>>);
    RegisterKernel({op, Device::Kind::kCuda, DType::kF64}, &MakeKernel<SoftmaxCuda<double>>);
  }
}

}  // namespace
}  // namespace weir::internal
