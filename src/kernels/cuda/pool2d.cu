// max_pool2d, avg_pool2d and their gradients on CUDA: own kernels on the CPU reference's window
// arithmetic (kernels/functors/pool2d.hpp), since Weir's SAME and ceil-mode pads are asymmetric and
// cuDNN's pooling descriptors take one pad per dimension. Forward: a thread per output; the gradients:
// a thread per input element summing over the windows that cover it (no atomics: deterministic), max
// pooling's with each window's first largest element found once beforehand where windows overlap. Max
// picks the first largest of each window, as the CPU does.
#include <climits>
#include <cstdint>
#include <optional>

#include "kernels/attrs/pool_attrs.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.hpp"
#include "kernels/pool2d_geometry.hpp"

namespace weir::internal::cuda {

namespace {

// Coordinates of element i of an (n, c, h, w) tensor in g's layout.
__device__ void Coordinates(const Pool2DGeometry& g, std::int64_t i, std::int64_t h_extent, std::int64_t w_extent,
                            std::int64_t& b, std::int64_t& ch, std::int64_t& h, std::int64_t& w) {
  if (g.nchw) {
    w = i % w_extent;
    i /= w_extent;
    h = i % h_extent;
    i /= h_extent;
    ch = i % g.c;
    b = i / g.c;
  } else {
    ch = i % g.c;
    i /= g.c;
    w = i % w_extent;
    i /= w_extent;
    h = i % h_extent;
    b = i / h_extent;
  }
}

// The output rows (or columns) whose windows cover input row h: [first, last].
__device__ void Covering(std::int64_t h, std::int64_t pad, std::int64_t k, std::int64_t s, std::int64_t out,
                         std::int64_t& first, std::int64_t& last) {
  const std::int64_t p = h + pad;  // in padded coordinates; window oh spans [oh s, oh s + k)
  first = p - k + 1 <= 0 ? 0 : (p - k + 1 + s - 1) / s;
  last = p / s < out - 1 ? p / s : out - 1;
}

// Output element i's coordinates and its window clipped to x.
__device__ void OutputWindow(const Pool2DGeometry& g, std::int64_t i, std::int64_t& b, std::int64_t& ch,
                             std::int64_t& h_begin, std::int64_t& h_end, std::int64_t& w_begin, std::int64_t& w_end) {
  std::int64_t oh, ow;
  Coordinates(g, i, g.out_h, g.out_w, b, ch, oh, ow);
  g.RowWindow(oh, h_begin, h_end);
  g.ColumnWindow(ow, w_begin, w_end);
}

template <typename T> __global__ void MaxPoolKernel(Pool2DGeometry g, const T* x, T* y) {
  WEIR_FOR_EACH_ELEMENT(i, g.n * g.c * g.out_h * g.out_w) {
    std::int64_t b, ch, h_begin, h_end, w_begin, w_end;
    OutputWindow(g, i, b, ch, h_begin, h_end, w_begin, w_end);
    y[i] = x[WindowArgMax(g, x, b, ch, h_begin, h_end, w_begin, w_end)];
  }
}

template <typename T> __global__ void AvgPoolKernel(Pool2DGeometry g, const T* x, T* y) {
  WEIR_FOR_EACH_ELEMENT(i, g.n * g.c * g.out_h * g.out_w) {
    std::int64_t b, ch, h_begin, h_end, w_begin, w_end;
    OutputWindow(g, i, b, ch, h_begin, h_end, w_begin, w_end);
    T sum = 0;
    for (std::int64_t h = h_begin; h < h_end; ++h) {
      for (std::int64_t w = w_begin; w < w_end; ++w) sum += x[g.XIndex(b, ch, h, w)];
    }
    y[i] = sum / static_cast<T>((h_end - h_begin) * (w_end - w_begin));
  }
}

// Each window's first largest element (its index in x), once per output, for MaxPoolGrad's overlapping
// windows: otherwise each input element searched every window that covers it (ResNet-50's 3x3 stride-2
// pool: up to four windows of nine, 3.8 ms of an 83 ms step on an H100).
template <typename T> __global__ void MaxPoolArgKernel(Pool2DGeometry g, const T* x, std::int32_t* arg) {
  WEIR_FOR_EACH_ELEMENT(i, g.n * g.c * g.out_h * g.out_w) {
    std::int64_t b, ch, h_begin, h_end, w_begin, w_end;
    OutputWindow(g, i, b, ch, h_begin, h_end, w_begin, w_end);
    arg[i] = h_begin < h_end && w_begin < w_end
                 ? static_cast<std::int32_t>(WindowArgMax(g, x, b, ch, h_begin, h_end, w_begin, w_end))
                 : -1;
  }
}

// kMax: dy of every covering window whose first largest element is this one (from `arg` where given,
// else searched); else (avg) each covering window's dy over its pixel count. Windows in row-major
// order, as the CPU adds them.
template <typename T, bool kMax>
__global__ void PoolGradKernel(Pool2DGeometry g, const T* dy, const T* x, const std::int32_t* arg, T* dx) {
  WEIR_FOR_EACH_ELEMENT(i, g.n * g.c * g.in_h * g.in_w) {
    std::int64_t b, ch, h, w;
    Coordinates(g, i, g.in_h, g.in_w, b, ch, h, w);
    std::int64_t oh_first, oh_last, ow_first, ow_last;
    Covering(h, g.pad_top, g.k_h, g.s_h, g.out_h, oh_first, oh_last);
    Covering(w, g.pad_left, g.k_w, g.s_w, g.out_w, ow_first, ow_last);
    T sum = 0;
    for (std::int64_t oh = oh_first; oh <= oh_last; ++oh) {
      std::int64_t h_begin, h_end;
      g.RowWindow(oh, h_begin, h_end);
      for (std::int64_t ow = ow_first; ow <= ow_last; ++ow) {
        std::int64_t w_begin, w_end;
        g.ColumnWindow(ow, w_begin, w_end);
        const T grad = dy[g.YIndex(b, ch, oh, ow)];
        if constexpr (kMax) {
          const std::int64_t first_largest =
              arg != nullptr ? arg[g.YIndex(b, ch, oh, ow)] : WindowArgMax(g, x, b, ch, h_begin, h_end, w_begin, w_end);
          if (first_largest == i) sum += grad;
        } else {
          sum += grad / static_cast<T>((h_end - h_begin) * (w_end - w_begin));
        }
      }
    }
    dx[i] = sum;
  }
}

// Max pooling's gradient where windows do not overlap (stride >= window, as LeNet's 2x2 stride 2): each
// input element is in one window at most, so a thread per output puts its dy at its window's first
// largest element, in dx zeroed first. The same sums as PoolGradKernel's (one term or none each), at a
// quarter of the threads and without the search for covering windows (4x faster on LeNet's shapes).
template <typename T> __global__ void MaxPoolGradScatterKernel(Pool2DGeometry g, const T* dy, const T* x, T* dx) {
  WEIR_FOR_EACH_ELEMENT(i, g.n * g.c * g.out_h * g.out_w) {
    std::int64_t b, ch, h_begin, h_end, w_begin, w_end;
    OutputWindow(g, i, b, ch, h_begin, h_end, w_begin, w_end);
    if (h_begin < h_end && w_begin < w_end) dx[WindowArgMax(g, x, b, ch, h_begin, h_end, w_begin, w_end)] = dy[i];
  }
}

}  // namespace

template <typename T> void MaxPool2D(void* stream, const Pool2DGeometry& g, const T* x, T* y) {
  const std::int64_t count = g.n * g.c * g.out_h * g.out_w;
  if (count == 0) return;
  MaxPoolKernel<T><<<Blocks(count), kThreads, 0, Native(stream)>>>(g, x, y);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T> void AvgPool2D(void* stream, const Pool2DGeometry& g, const T* x, T* y) {
  const std::int64_t count = g.n * g.c * g.out_h * g.out_w;
  if (count == 0) return;
  AvgPoolKernel<T><<<Blocks(count), kThreads, 0, Native(stream)>>>(g, x, y);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

/// Whether max pooling's windows overlap (stride below the window along an axis).
inline bool WindowsOverlap(const Pool2DGeometry& g) { return g.s_h < g.k_h || g.s_w < g.k_w; }

/// `arg`: where windows overlap and x has fewer than 2^31 elements, scratch for an index per output
/// (else null: each input element searches its windows).
template <typename T>
void MaxPool2DGrad(void* stream, const Pool2DGeometry& g, const T* dy, const T* x, std::int32_t* arg, T* dx) {
  const std::int64_t count = g.n * g.c * g.in_h * g.in_w;
  if (count == 0) return;
  if (!WindowsOverlap(g)) {
    WEIR_CUDA_CHECK(cudaMemsetAsync(dx, 0, static_cast<std::size_t>(count) * sizeof(T), Native(stream)));
    const std::int64_t outputs = g.n * g.c * g.out_h * g.out_w;
    if (outputs == 0) return;
    MaxPoolGradScatterKernel<T><<<Blocks(outputs), kThreads, 0, Native(stream)>>>(g, dy, x, dx);
  } else {
    const std::int64_t outputs = g.n * g.c * g.out_h * g.out_w;
    if (arg != nullptr && outputs > 0) {
      MaxPoolArgKernel<T><<<Blocks(outputs), kThreads, 0, Native(stream)>>>(g, x, arg);
      WEIR_CUDA_CHECK(cudaGetLastError());
    }
    PoolGradKernel<T, true><<<Blocks(count), kThreads, 0, Native(stream)>>>(g, dy, x, arg, dx);
  }
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T> void AvgPool2DGrad(void* stream, const Pool2DGeometry& g, const T* dy, T* dx) {
  const std::int64_t count = g.n * g.c * g.in_h * g.in_w;
  if (count == 0) return;
  PoolGradKernel<T, false><<<Blocks(count), kThreads, 0, Native(stream)>>>(g, dy, nullptr, nullptr, dx);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

}  // namespace weir::internal::cuda

namespace weir::internal {
namespace {

enum class PoolOp : std::uint8_t { kMax, kMaxGrad, kAvg, kAvgGrad };

template <typename T, PoolOp kOp> class Pool2DCuda final : public Kernel {
 public:
  explicit Pool2DCuda(const KernelSetup& setup) : stream_(CudaStreamOf(setup)) {
    // The geometry of pooling x into y, from whichever shapes the op has.
    if constexpr (kOp == PoolOp::kMax || kOp == PoolOp::kAvg) {
      geometry_ = MakePool2DGeometry(setup.Get<Pool2DAttrs>(), setup.inputs[0].shape, setup.outputs[0].shape);
    } else if constexpr (kOp == PoolOp::kMaxGrad) {  // (dy, x) -> dx
      geometry_ = MakePool2DGeometry(setup.Get<Pool2DAttrs>(), setup.inputs[1].shape, setup.inputs[0].shape);
      const std::int64_t outputs = setup.inputs[0].shape.NumElements();
      if (cuda::WindowsOverlap(geometry_) && setup.inputs[1].shape.NumElements() <= INT32_MAX && outputs > 0) {
        argmax_.emplace(setup.device.index, sizeof(std::int32_t) * static_cast<std::size_t>(outputs));
      }
    } else {  // dy -> dx
      geometry_ = MakePool2DGeometry(setup.Get<Pool2DGradAttrs>().pool, setup.outputs[0].shape, setup.inputs[0].shape);
    }
  }
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if constexpr (kOp == PoolOp::kMax) {
      cuda::MaxPool2D<T>(stream_, geometry_, inputs[0].As<T>(), outputs[0].As<T>());
    } else if constexpr (kOp == PoolOp::kAvg) {
      cuda::AvgPool2D<T>(stream_, geometry_, inputs[0].As<T>(), outputs[0].As<T>());
    } else if constexpr (kOp == PoolOp::kMaxGrad) {
      cuda::MaxPool2DGrad<T>(stream_, geometry_, inputs[0].As<T>(), inputs[1].As<T>(),
                             argmax_ ? argmax_->As<std::int32_t>() : nullptr, outputs[0].As<T>());
    } else {
      cuda::AvgPool2DGrad<T>(stream_, geometry_, inputs[0].As<T>(), outputs[0].As<T>());
    }
  }

 private:
  void* stream_;
  Pool2DGeometry geometry_;
  std::optional<DeviceScratch> argmax_;  // max_pool2d_grad over overlapping windows: each window's first largest
};

template <PoolOp kOp> void RegisterPool(const char* op_type) {
  RegisterKernel({op_type, Device::Kind::kCuda, DType::kF32}, &MakeKernel<Pool2DCuda<float, kOp>>);
  RegisterKernel({op_type, Device::Kind::kCuda, DType::kF64}, &MakeKernel<Pool2DCuda<double, kOp>>);
}

WEIR_REGISTER_KERNELS {
  RegisterPool<PoolOp::kMax>("max_pool2d");
  RegisterPool<PoolOp::kMaxGrad>("max_pool2d_grad");
  RegisterPool<PoolOp::kAvg>("avg_pool2d");
  RegisterPool<PoolOp::kAvgGrad>("avg_pool2d_grad");
}

}  // namespace
}  // namespace weir::internal
