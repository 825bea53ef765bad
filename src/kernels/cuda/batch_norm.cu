// batch_norm, batch_norm_grad and batch_norm_moving_update on CUDA: the CPU reference's two-pass
// statistics in double (kernels/functors/batch_norm.hpp's layout and formulas), on any channel axis.
// Each channel's elements are split over several blocks (a grid of channels x splits, enough blocks to
// fill the GPU however few the channels: ResNet's stem has 64 channels of 800k elements each); each block
// writes its partial sums into the kernel's scratch, and the next pass combines a channel's partials in
// a fixed order (deterministic) in every block that needs them. Forward while training: sums -> mean;
// squared deviations -> variance; normalize. Gradient: Σdy and Σdy·x̂ -> dx. Indices are 32-bit where
// the tensor allows (the index arithmetic is a good part of these memory-bound passes).
#include <algorithm>
#include <cstdint>
#include <optional>

#include "kernels/attrs/batch_norm_attrs.hpp"
#include "kernels/axis_split.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/batch_norm.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal::cuda {

namespace {

// The index in x of element j of channel c (ChannelLayout::Index) in the index type I.
template <typename I> __device__ I ElementIndex(const ChannelLayout& layout, I c, I j) {
  const auto inner = static_cast<I>(layout.inner);
  return ((j / inner) * static_cast<I>(layout.channels) + c) * inner + j % inner;
}

// This block's part of its channel (blockIdx.x) when each channel is split over gridDim.y blocks of
// `chunk` elements.
template <typename I> struct ChannelChunk {
  I channel, begin, end;
  __device__ ChannelChunk(const ChannelLayout& layout, I chunk)
      : channel(blockIdx.x), begin(static_cast<I>(blockIdx.y) * chunk),
        end(begin + chunk < static_cast<I>(layout.PerChannel()) ? begin + chunk : static_cast<I>(layout.PerChannel())) {}
};

// The sum of a channel's partials (`splits` of them, in order); every thread of the block computes it.
__device__ double ChannelTotal(const double* partials, std::int64_t channel, unsigned splits, unsigned stride = 1,
                               unsigned offset = 0) {
  double total = 0;
  for (unsigned s = 0; s < splits; ++s) total += partials[(channel * splits + s) * stride + offset];
  return total;
}

// Partials of Σx (sums), or, with `sums` given, of Σ(x − mean)² (squares) for each channel's chunks.
template <typename T, typename I>
__global__ void ChannelMomentKernel(ChannelLayout layout, I chunk, const T* x, const double* sums, double* out) {
  const ChannelChunk<I> part(layout, chunk);
  const double count = static_cast<double>(layout.PerChannel());
  const double mean = sums != nullptr ? ChannelTotal(sums, part.channel, gridDim.y) / count : 0.0;
  double value = 0;
  for (I j = part.begin + threadIdx.x; j < part.end; j += blockDim.x) {
    const double d = static_cast<double>(x[ElementIndex<I>(layout, part.channel, j)]) - mean;
    value += sums != nullptr ? d * d : d;
  }
  value = BlockSum(value);
  if (threadIdx.x == 0) out[part.channel * gridDim.y + blockIdx.y] = value;
}

// y = (x − mean)·γ/√(variance + ε) + β over each block's chunk; the statistics from the partials while
// training (the first block of a channel writes them out), else the moving ones.
template <typename T, typename I>
__global__ void BatchNormKernel(ChannelLayout layout, I chunk, bool training, double epsilon, const T* x,
                                const T* gamma, const T* beta, const T* moving_mean, const T* moving_variance,
                                const double* sums, const double* squares, T* y, T* batch_mean, T* batch_variance) {
  const ChannelChunk<I> part(layout, chunk);
  const I c = part.channel;
  double mean = 0, variance = 0;
  if (training) {
    const double count = static_cast<double>(layout.PerChannel());
    mean = ChannelTotal(sums, c, gridDim.y) / count;
    variance = ChannelTotal(squares, c, gridDim.y) / count;  // biased, for normalizing
    if (blockIdx.y == 0 && threadIdx.x == 0) {
      batch_mean[c] = static_cast<T>(mean);
      batch_variance[c] = static_cast<T>(variance);
    }
  } else {
    mean = moving_mean[c];
    variance = moving_variance[c];
  }
  const double scale = gamma[c] / sqrt(variance + epsilon);
  const double shift = beta[c];
  for (I j = part.begin + threadIdx.x; j < part.end; j += blockDim.x) {
    const I i = ElementIndex<I>(layout, c, j);
    y[i] = static_cast<T>((x[i] - mean) * scale + shift);
  }
}

// Partials of Σdy and Σdy·x̂ (interleaved, two a block) over each block's chunk.
template <typename T, typename I>
__global__ void BatchNormGradSumsKernel(ChannelLayout layout, I chunk, double epsilon, const T* dy, const T* x,
                                        const T* batch_mean, const T* batch_variance, double* partials) {
  const ChannelChunk<I> part(layout, chunk);
  const I c = part.channel;
  const double mean = batch_mean[c];
  const double inv_std = 1.0 / sqrt(static_cast<double>(batch_variance[c]) + epsilon);
  double dbeta = 0, dgamma = 0;
  for (I j = part.begin + threadIdx.x; j < part.end; j += blockDim.x) {
    const I i = ElementIndex<I>(layout, c, j);
    dbeta += dy[i];
    dgamma += dy[i] * (x[i] - mean) * inv_std;
  }
  dbeta = BlockSum(dbeta);
  dgamma = BlockSum(dgamma);
  if (threadIdx.x == 0) {
    double* out = partials + (static_cast<std::int64_t>(c) * gridDim.y + blockIdx.y) * 2;
    out[0] = dbeta;
    out[1] = dgamma;
  }
}

// dx over each block's chunk from the combined sums (the first block of a channel writes dγ and dβ).
template <typename T, typename I>
__global__ void BatchNormGradKernel(ChannelLayout layout, I chunk, bool training, double epsilon, const T* dy,
                                    const T* x, const T* gamma, const T* batch_mean, const T* batch_variance,
                                    const double* partials, T* dx, T* dgamma_out, T* dbeta_out) {
  const ChannelChunk<I> part(layout, chunk);
  const I c = part.channel;
  const double dbeta = ChannelTotal(partials, c, gridDim.y, 2, 0);
  const double dgamma = ChannelTotal(partials, c, gridDim.y, 2, 1);
  if (blockIdx.y == 0 && threadIdx.x == 0) {
    dgamma_out[c] = static_cast<T>(dgamma);
    dbeta_out[c] = static_cast<T>(dbeta);
  }
  const double mean = batch_mean[c];
  const double inv_std = 1.0 / sqrt(static_cast<double>(batch_variance[c]) + epsilon);
  const double scale = gamma[c] * inv_std;
  const double count = static_cast<double>(layout.PerChannel());
  for (I j = part.begin + threadIdx.x; j < part.end; j += blockDim.x) {
    const I i = ElementIndex<I>(layout, c, j);
    dx[i] = static_cast<T>(training ? BatchNormTrainingDx(scale, dy[i], (x[i] - mean) * inv_std, dbeta, dgamma, count)
                                    : scale * dy[i]);
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

// How many blocks share each channel: enough for ~kTargetBlocks blocks in all, but no block with fewer
// than kThreads·kElementsPerThread elements (a grid's y extent: at most 65535).
std::int64_t SplitsOf(const ChannelLayout& layout) {
  constexpr std::int64_t kTargetBlocks = 1024, kElementsPerThread = 8, kMaxSplits = 65535;
  const std::int64_t per_block = cuda::kThreads * kElementsPerThread;
  const std::int64_t by_size = (layout.PerChannel() + per_block - 1) / per_block;
  const std::int64_t by_grid = (kTargetBlocks + layout.channels - 1) / std::max<std::int64_t>(layout.channels, 1);
  return std::clamp<std::int64_t>(std::min(by_size, by_grid), 1, kMaxSplits);
}

// Forward inputs (x, gamma, beta, moving_mean, moving_variance), outputs (y[, mean, variance]); the
// gradient's (kGrad) inputs (dy, x, gamma, mean, variance), outputs (dx, dgamma, dbeta).
template <typename T, bool kGrad> class BatchNormCuda final : public Kernel {
 public:
  explicit BatchNormCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), attrs_(setup.Get<BatchNormAttrs>()),
        layout_(LayoutAround(setup.inputs[kGrad ? 1 : 0].shape, attrs_.axis)), splits_(SplitsOf(layout_)),
        chunk_((layout_.PerChannel() + splits_ - 1) / splits_),
        small_index_(layout_.PerChannel() * layout_.channels <= std::int64_t{0x7fffffff}) {
    // Two doubles of partials a block: Σx and Σ(x − mean)², or Σdy and Σdy·x̂.
    if (kGrad || attrs_.training) partials_.emplace(setup.device.index, sizeof(double) * 2 * Blocks());
  }
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (layout_.channels == 0) return;
    if (small_index_) Launch<std::uint32_t>(inputs, outputs);
    else Launch<std::int64_t>(inputs, outputs);
  }

 private:
  std::int64_t Blocks() const { return layout_.channels * splits_; }

  template <typename I> void Launch(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) {
    const dim3 grid(static_cast<unsigned>(layout_.channels), static_cast<unsigned>(splits_));
    const cudaStream_t stream = cuda::Native(stream_);
    const auto chunk = static_cast<I>(chunk_);
    double* first = partials_ ? partials_->As<double>() : nullptr;
    double* second = partials_ ? first + Blocks() : nullptr;
    if constexpr (kGrad) {
      cuda::BatchNormGradSumsKernel<T, I><<<grid, cuda::kThreads, 0, stream>>>(
          layout_, chunk, attrs_.epsilon, inputs[0].As<T>(), inputs[1].As<T>(), inputs[3].As<T>(), inputs[4].As<T>(),
          first);
      WEIR_CUDA_CHECK(cudaGetLastError());
      cuda::BatchNormGradKernel<T, I><<<grid, cuda::kThreads, 0, stream>>>(
          layout_, chunk, attrs_.training, attrs_.epsilon, inputs[0].As<T>(), inputs[1].As<T>(), inputs[2].As<T>(),
          inputs[3].As<T>(), inputs[4].As<T>(), first, outputs[0].As<T>(), outputs[1].As<T>(), outputs[2].As<T>());
    } else {
      const T* x = inputs[0].As<T>();
      if (attrs_.training) {
        cuda::ChannelMomentKernel<T, I><<<grid, cuda::kThreads, 0, stream>>>(layout_, chunk, x, nullptr, first);
        WEIR_CUDA_CHECK(cudaGetLastError());
        cuda::ChannelMomentKernel<T, I><<<grid, cuda::kThreads, 0, stream>>>(layout_, chunk, x, first, second);
        WEIR_CUDA_CHECK(cudaGetLastError());
      }
      cuda::BatchNormKernel<T, I><<<grid, cuda::kThreads, 0, stream>>>(
          layout_, chunk, attrs_.training, attrs_.epsilon, x, inputs[1].As<T>(), inputs[2].As<T>(), inputs[3].As<T>(),
          inputs[4].As<T>(), first, second, outputs[0].As<T>(), attrs_.training ? outputs[1].As<T>() : nullptr,
          attrs_.training ? outputs[2].As<T>() : nullptr);
    }
    WEIR_CUDA_CHECK(cudaGetLastError());
  }

  void* stream_;
  BatchNormAttrs attrs_;
  ChannelLayout layout_;
  std::int64_t splits_;
  std::int64_t chunk_;  // elements of a channel per block
  bool small_index_;    // every index of x (and a chunk's end) fits 31 bits
  std::optional<DeviceScratch> partials_;
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
  RegisterKernel({"batch_norm_moving_update", Device::Kind::kCuda, DType::kF16}, &MakeKernel<BatchNormMovingUpdateCuda<float16>>);
  RegisterKernel({"batch_norm_moving_update", Device::Kind::kCuda, DType::kBF16},
                 &MakeKernel<BatchNormMovingUpdateCuda<bfloat16>>);
}

}  // namespace
}  // namespace weir::internal
