// batch_norm, batch_norm_grad and batch_norm_moving_update on CUDA (kernels/cuda/batch_norm.cu): the
// CPU reference's two-pass statistics in double, a block per channel, on any channel axis.
#include <cstdint>

#include "kernels/attrs/batch_norm_attrs.hpp"
#include "kernels/axis_split.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

ChannelLayout LayoutAround(const Shape& x, int axis) {
  const AxisSplit split(x, axis);
  return {split.outer, split.n, split.inner};
}

// Forward inputs (x, gamma, beta, moving_mean, moving_variance), outputs (y[, mean, variance]); the
// gradient's inputs (dy, x, gamma, mean, variance), outputs (dx, dgamma, dbeta).
template <typename T> class BatchNormCuda final : public Kernel {
 public:
  explicit BatchNormCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), attrs_(setup.Get<BatchNormAttrs>()), grad_(setup.op_type == "batch_norm_grad"),
        layout_(LayoutAround(setup.inputs[grad_ ? 1 : 0].shape, attrs_.axis)) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (grad_) {
      cuda::BatchNormGrad<T>(stream_, layout_, attrs_.training, attrs_.epsilon, inputs[0].As<T>(), inputs[1].As<T>(),
                             inputs[2].As<T>(), inputs[3].As<T>(), inputs[4].As<T>(), outputs[0].As<T>(),
                             outputs[1].As<T>(), outputs[2].As<T>());
      return;
    }
    cuda::BatchNorm<T>(stream_, layout_, attrs_.training, attrs_.epsilon, inputs[0].As<T>(), inputs[1].As<T>(),
                       inputs[2].As<T>(), inputs[3].As<T>(), inputs[4].As<T>(), outputs[0].As<T>(),
                       attrs_.training ? outputs[1].As<T>() : nullptr, attrs_.training ? outputs[2].As<T>() : nullptr);
  }

 private:
  void* stream_;
  BatchNormAttrs attrs_;
  bool grad_;
  ChannelLayout layout_;
};

// (moving_mean, moving_variance, batch mean, batch biased variance), the first two in place.
template <typename T> class BatchNormMovingUpdateCuda final : public Kernel {
 public:
  explicit BatchNormMovingUpdateCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), attrs_(setup.Get<BatchNormMovingUpdateAttrs>()),
        channels_(setup.inputs[0].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    // Bessel's correction; a single element per channel has no unbiased variance, so it stays biased.
    const double unbias = attrs_.count > 1 ? static_cast<double>(attrs_.count) / static_cast<double>(attrs_.count - 1) : 1.0;
    cuda::BatchNormMovingUpdate<T>(stream_, const_cast<T*>(inputs[0].As<T>()), const_cast<T*>(inputs[1].As<T>()),
                                   inputs[2].As<T>(), inputs[3].As<T>(), channels_, attrs_.momentum, unbias);
  }

 private:
  void* stream_;
  BatchNormMovingUpdateAttrs attrs_;
  std::int64_t channels_;
};

WEIR_REGISTER_KERNELS {
  for (const char* op : {"batch_norm", "batch_norm_grad"}) {
    RegisterKernel({op, Device::Kind::kCuda, DType::kF32}, &MakeKernel<BatchNormCuda<float>>);
    RegisterKernel({op, Device::Kind::kCuda, DType::kF64}, &MakeKernel<BatchNormCuda<double>>);
  }
  RegisterKernel({"batch_norm_moving_update", Device::Kind::kCuda, DType::kF32}, &MakeKernel<BatchNormMovingUpdateCuda<float>>);
  RegisterKernel({"batch_norm_moving_update", Device::Kind::kCuda, DType::kF64}, &MakeKernel<BatchNormMovingUpdateCuda<double>>);
}

}  // namespace
}  // namespace weir::internal
