// batch_norm, batch_norm_grad and batch_norm_moving_update on CUDA: the CPU reference's two-pass
// statistics in double (kernels/functors/batch_norm.hpp's layout and formulas), a block per channel,
// its threads striding over the channel's elements, the per-channel sums combined with BlockSum; on
// any channel axis.
#include <cstdint>

#include "kernels/attrs/batch_norm_attrs.hpp"
#include "kernels/axis_split.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/batch_norm.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal::cuda {

namespace {

template <typename T>
__global__ void BatchNormKernel(ChannelLayout layout, bool training, double epsilon, const T* x, const T* gamma,
                                const T* beta, const T* moving_mean, const T* moving_variance, T* y, T* batch_mean,
                                T* batch_variance) {
  const std::int64_t count = layout.PerChannel();
  for (std::int64_t c = blockIdx.x; c < layout.channels; c += gridDim.x) {
    double mean = 0, variance = 0;
    if (training) {
      double sum = 0;
      for (std::int64_t j = threadIdx.x; j < count; j += blockDim.x) sum += x[layout.Index(c, j)];
      mean = BlockSum(sum) / static_cast<double>(count);
      double squares = 0;
      for (std::int64_t j = threadIdx.x; j < count; j += blockDim.x) {
        const double d = x[layout.Index(c, j)] - mean;
        squares += d * d;
      }
      variance = BlockSum(squares) / static_cast<double>(count);  // biased, for normalizing
      if (threadIdx.x == 0) {
        batch_mean[c] = static_cast<T>(mean);
        batch_variance[c] = static_cast<T>(variance);
      }
    } else {
      mean = moving_mean[c];
      variance = moving_variance[c];
    }
    const double scale = gamma[c] / sqrt(variance + epsilon);
    for (std::int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const std::int64_t i = layout.Index(c, j);
      y[i] = static_cast<T>((x[i] - mean) * scale + beta[c]);
    }
  }
}

template <typename T>
__global__ void BatchNormGradKernel(ChannelLayout layout, bool training, double epsilon, const T* dy, const T* x,
                                    const T* gamma, const T* batch_mean, const T* batch_variance, T* dx, T* dgamma_out,
                                    T* dbeta_out) {
  const std::int64_t count = layout.PerChannel();
  for (std::int64_t c = blockIdx.x; c < layout.channels; c += gridDim.x) {
    const double mean = batch_mean[c];
    const double inv_std = 1.0 / sqrt(static_cast<double>(batch_variance[c]) + epsilon);
    double dbeta = 0, dgamma = 0;
    for (std::int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const std::int64_t i = layout.Index(c, j);
      dbeta += dy[i];
      dgamma += dy[i] * (x[i] - mean) * inv_std;
    }
    dbeta = BlockSum(dbeta);
    dgamma = BlockSum(dgamma);
    if (threadIdx.x == 0) {
      dgamma_out[c] = static_cast<T>(dgamma);
      dbeta_out[c] = static_cast<T>(dbeta);
    }
    const double scale = gamma[c] * inv_std;
    for (std::int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const std::int64_t i = layout.Index(c, j);
      dx[i] = static_cast<T>(training ? BatchNormTrainingDx(scale, dy[i], (x[i] - mean) * inv_std, dbeta, dgamma,
                                                             static_cast<double>(count))
                                      : scale * dy[i]);
    }
  }
}

template <typename T>
__global__ void MovingUpdateKernel(T* moving_mean, T* moving_variance, const T* mean, const T* variance,
                                   std::int64_t channels, double momentum, double unbias) {
  WEIR_FOR_EACH_ELEMENT(c, channels) {
    MovingStatistics(moving_mean[c], moving_variance[c], mean[c], variance[c], momentum, unbias);
  }
}

}  // namespace
}  // namespace weir::internal::cuda

namespace weir::internal {
namespace {

ChannelLayout LayoutAround(const Shape& x, int axis) {
  const AxisSplit split(x, axis);
  return {split.outer, split.n, split.inner};
}

// Forward inputs (x, gamma, beta, moving_mean, moving_variance), outputs (y[, mean, variance]); the
// gradient's (kGrad) inputs (dy, x, gamma, mean, variance), outputs (dx, dgamma, dbeta).
template <typename T, bool kGrad> class BatchNormCuda final : public Kernel {
 public:
  explicit BatchNormCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), attrs_(setup.Get<BatchNormAttrs>()),
        layout_(LayoutAround(setup.inputs[kGrad ? 1 : 0].shape, attrs_.axis)) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if constexpr (kGrad) {
      cuda::LaunchPerItem(stream_, layout_.channels, &cuda::BatchNormGradKernel<T>, layout_, attrs_.training,
                          attrs_.epsilon, inputs[0].As<T>(), inputs[1].As<T>(), inputs[2].As<T>(), inputs[3].As<T>(),
                          inputs[4].As<T>(), outputs[0].As<T>(), outputs[1].As<T>(), outputs[2].As<T>());
    } else {
      cuda::LaunchPerItem(stream_, layout_.channels, &cuda::BatchNormKernel<T>, layout_, attrs_.training, attrs_.epsilon,
                          inputs[0].As<T>(), inputs[1].As<T>(), inputs[2].As<T>(), inputs[3].As<T>(), inputs[4].As<T>(),
                          outputs[0].As<T>(), attrs_.training ? outputs[1].As<T>() : nullptr,
                          attrs_.training ? outputs[2].As<T>() : nullptr);
    }
  }

 private:
  void* stream_;
  BatchNormAttrs attrs_;
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
    cuda::LaunchOver(stream_, channels_, &cuda::MovingUpdateKernel<T>, MutableOf<T>(inputs[0]), MutableOf<T>(inputs[1]),
                     inputs[2].As<T>(), inputs[3].As<T>(), channels_, attrs_.momentum, unbias);
  }

 private:
  void* stream_;
  BatchNormMovingUpdateAttrs attrs_;
  std::int64_t channels_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"batch_norm", Device::Kind::kCuda, DType::kF32}, &MakeKernel<BatchNormCuda<float, false>>);
  RegisterKernel({"batch_norm", Device::Kind::kCuda, DType::kF64}, &MakeKernel<BatchNormCuda<double, false>>);
  RegisterKernel({"batch_norm_grad", Device::Kind::kCuda, DType::kF32}, &MakeKernel<BatchNormCuda<float, true>>);
  RegisterKernel({"batch_norm_grad", Device::Kind::kCuda, DType::kF64}, &MakeKernel<BatchNormCuda<double, true>>);
  RegisterKernel({"batch_norm_moving_update", Device::Kind::kCuda, DType::kF32}, &MakeKernel<BatchNormMovingUpdateCuda<float>>);
  RegisterKernel({"batch_norm_moving_update", Device::Kind::kCuda, DType::kF64}, &MakeKernel<BatchNormMovingUpdateCuda<double>>);
}

}  // namespace
}  // namespace weir::internal
