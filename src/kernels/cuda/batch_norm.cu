// Batch normalization's launchers: a block per channel, its threads striding over the channel's
// elements (kernels/functors/batch_norm.hpp's layout and formulas, the CPU reference's), the
// per-channel sums combined with BlockSum.
#include <cstdint>

#include "common/cuda_check.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.hpp"

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

template <typename T>
void BatchNorm(void* stream, const ChannelLayout& layout, bool training, double epsilon, const T* x, const T* gamma,
               const T* beta, const T* moving_mean, const T* moving_variance, T* y, T* mean, T* variance) {
  if (layout.channels == 0) return;
  BatchNormKernel<T><<<BlockPerItem(layout.channels), kThreads, 0, Native(stream)>>>(
      layout, training, epsilon, x, gamma, beta, moving_mean, moving_variance, y, mean, variance);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void BatchNormGrad(void* stream, const ChannelLayout& layout, bool training, double epsilon, const T* dy, const T* x,
                   const T* gamma, const T* mean, const T* variance, T* dx, T* dgamma, T* dbeta) {
  if (layout.channels == 0) return;
  BatchNormGradKernel<T><<<BlockPerItem(layout.channels), kThreads, 0, Native(stream)>>>(
      layout, training, epsilon, dy, x, gamma, mean, variance, dx, dgamma, dbeta);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void BatchNormMovingUpdate(void* stream, T* moving_mean, T* moving_variance, const T* mean, const T* variance,
                           std::int64_t channels, double momentum, double unbias) {
  if (channels == 0) return;
  MovingUpdateKernel<T><<<Blocks(channels), kThreads, 0, Native(stream)>>>(moving_mean, moving_variance, mean, variance,
                                                                            channels, momentum, unbias);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

#define WEIR_INSTANTIATE(T)                                                                                   \
  template void BatchNorm<T>(void*, const ChannelLayout&, bool, double, const T*, const T*, const T*, const T*, \
                             const T*, T*, T*, T*);                                                           \
  template void BatchNormGrad<T>(void*, const ChannelLayout&, bool, double, const T*, const T*, const T*,      \
                                 const T*, const T*, T*, T*, T*);                                             \
  template void BatchNormMovingUpdate<T>(void*, T*, T*, const T*, const T*, std::int64_t, double, double);
WEIR_INSTANTIATE(float)
WEIR_INSTANTIATE(double)
#undef WEIR_INSTANTIATE

}  // namespace weir::internal::cuda
