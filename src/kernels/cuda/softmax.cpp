// softmax and softmax_grad on CUDA along any axis: a thread per column of x viewed as (outer, n, inner)
// running kernels/functors/softmax.hpp (the CPU kernels' math).
#include <cstdint>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"
#include "weir/ops.hpp"

namespace weir::internal {
namespace {

template <typename T> class SoftmaxCuda final : public Kernel {
 public:
  explicit SoftmaxCuda(const KernelSetup& setup) : stream_(CudaStreamOf(setup)), grad_(setup.op_type == "softmax_grad") {
    const Shape& x = setup.inputs[0].shape;
    const int attr_axis = setup.Get<SoftmaxAttrs>().axis;
    const int axis = attr_axis < 0 ? attr_axis + x.Rank() : attr_axis;
    n_ = x[axis];
    for (int i = 0; i < axis; ++i) outer_ *= x[i];
    for (int i = axis + 1; i < x.Rank(); ++i) inner_ *= x[i];
  }
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (grad_) {
      cuda::SoftmaxGrad<T>(stream_, inputs[0].As<T>(), inputs[1].As<T>(), outputs[0].As<T>(), outer_, n_, inner_);
    } else {
      cuda::Softmax<T>(stream_, inputs[0].As<T>(), outputs[0].As<T>(), outer_, n_, inner_);
    }
  }

 private:
  void* stream_;
  bool grad_;
  std::int64_t outer_ = 1, n_ = 1, inner_ = 1;
};

WEIR_REGISTER_KERNELS {
  for (const char* op : {"softmax", "softmax_grad"}) {
    RegisterKernel({op, Device::Kind::kCuda, DType::kF32}, &MakeKernel<SoftmaxCuda<float>>);
    RegisterKernel({op, Device::Kind::kCuda, DType::kF64}, &MakeKernel<SoftmaxCuda<double>>);
  }
}

}  // namespace
}  // namespace weir::internal
