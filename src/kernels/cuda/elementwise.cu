// The elementwise launchers: one grid-stride loop template over a functor of kernels/functors/ (the
// CPU kernels' math), instantiated per kind and dtype.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/cuda_check.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.hpp"
#include "kernels/functors/activation.hpp"
#include "kernels/functors/binary.hpp"
#include "kernels/functors/clip.hpp"
#include "kernels/functors/sigmoid_cross_entropy.hpp"
#include "kernels/functors/scalar.hpp"
#include "kernels/functors/unary.hpp"

namespace weir::internal::cuda {

namespace {



template <typename T, typename Fn> __global__ void ForwardKernel(const T* x, T* y, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x) {
    y[i] = Fn::template Fwd<T>(x[i]);
  }
}

// Unary gradients take (v, dy), activation gradients (dy, y): kDyFirst says which.
template <typename T, typename Fn, bool kDyFirst>
__global__ void GradKernel(const T* dy, const T* v, T* dx, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x) {
    if constexpr (kDyFirst) {
      dx[i] = Fn::template Grad<T>(dy[i], v[i]);
    } else {
      dx[i] = Fn::template Grad<T>(v[i], dy[i]);
    }
  }
}

template <typename T, typename Fn> void LaunchForward(void* stream, const T* x, T* y, std::int64_t count) {
  if (count == 0) return;
  ForwardKernel<T, Fn><<<Blocks(count), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, y, count);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T, typename Fn, bool kDyFirst>
void LaunchGrad(void* stream, const T* dy, const T* v, T* dx, std::int64_t count) {
  if (count == 0) return;
  GradKernel<T, Fn, kDyFirst><<<Blocks(count), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(dy, v, dx, count);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T> struct UnaryLaunch {
  void* stream;
  const T* x;
  T* y;
  std::int64_t count;
  template <typename Fn> void operator()() {
    // Shape inference admits integers only for the kinds that take them.
    if constexpr (std::is_integral_v<T> && !Fn::kTakesIntegers) {
      throw std::invalid_argument("[unary] this kind has no integer kernel");
    } else {
      LaunchForward<T, Fn>(stream, x, y, count);
    }
  }
};

template <typename T> struct UnaryGradLaunch {
  void* stream;
  const T* dy;
  const T* v;
  T* dx;
  std::int64_t count;
  template <typename Fn> void operator()() { LaunchGrad<T, Fn, false>(stream, dy, v, dx, count); }
};

template <typename T> __global__ void ScalarKernel(ScalarOpKind kind, T value, const T* x, T* y, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x) {
    y[i] = ApplyScalar(kind, x[i], value);
  }
}

template <typename T, typename Op>
__global__ void BinaryKernel(BroadcastPlan plan, const T* a, const T* b, T* out, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x) {
    std::int64_t ia = i, ib = i;  // rank 0: both operands have the output's layout
    if (plan.rank > 0) plan.Offsets(i, ia, ib);
    out[i] = Op::template Apply<T>(a[ia], b[ib]);
  }
}


template <typename T> __global__ void ClipKernel(const T* x, T* y, T lo, T hi, std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) { y[i] = Clip(x[i], lo, hi); }
}
template <typename T> __global__ void ClipGradKernel(const T* dy, const T* x, T* dx, T lo, T hi, std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) { dx[i] = ClipGrad(dy[i], x[i], lo, hi); }
}
template <typename T> __global__ void SigmoidCrossEntropyKernel(const T* z, const T* x, T* loss, std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) { loss[i] = internal::SigmoidCrossEntropy(z[i], x[i]); }
}
template <typename T>
__global__ void SigmoidCrossEntropyGradKernel(const T* z, const T* x, const T* dy, T* dz, T* dx, std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) { internal::SigmoidCrossEntropyGrad(z[i], x[i], dy[i], dz[i], dx[i]); }
}
template <typename T>
__global__ void ScalarGradKernel(ScalarOpKind kind, T value, const T* dy, const T* x, T* dx, std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) { dx[i] = internal::ScalarGrad(kind, dy[i], x[i], value); }
}


template <typename T, typename Op>
void LaunchBinary(void* stream, const BroadcastPlan& plan, const T* a, const T* b, T* out, std::int64_t count) {
  BinaryKernel<T, Op><<<Blocks(count), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(plan, a, b, out, count);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

template <typename T> void Scalar(void* stream, ScalarOpKind kind, T value, const T* x, T* y, std::int64_t count) {
  if (std::is_integral_v<T> && (kind == ScalarOpKind::kDiv || kind == ScalarOpKind::kRDiv)) {
    throw std::invalid_argument("[scalar] integer division has no CUDA kernel (a zero divisor must fail the call)");
  }
  if (count == 0) return;
  ScalarKernel<T><<<Blocks(count), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(kind, value, x, y, count);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void BroadcastBinary(void* stream, Binary kind, const BroadcastPlan& plan, const T* a, const T* b, T* out,
                     std::int64_t count) {
  if (count == 0) return;
  switch (kind) {
    case Binary::kAdd: return LaunchBinary<T, AddOp>(stream, plan, a, b, out, count);
    case Binary::kSub: return LaunchBinary<T, SubOp>(stream, plan, a, b, out, count);
    case Binary::kMul: return LaunchBinary<T, MulOp>(stream, plan, a, b, out, count);
    case Binary::kDiv:
      if constexpr (std::is_integral_v<T>) {
        throw std::invalid_argument("[div] integer division has no CUDA kernel (a zero divisor must fail the call)");
      } else {
        return LaunchBinary<T, FloatDivOp>(stream, plan, a, b, out, count);
      }
    case Binary::kMod:
      if constexpr (std::is_integral_v<T>) {
        throw std::invalid_argument("[mod] integer modulo has no CUDA kernel (a zero divisor must fail the call)");
      } else {
        return LaunchBinary<T, FloatFloorModOp>(stream, plan, a, b, out, count);
      }
    case Binary::kMaximum: return LaunchBinary<T, MaximumOp>(stream, plan, a, b, out, count);
    case Binary::kMinimum: return LaunchBinary<T, MinimumOp>(stream, plan, a, b, out, count);
  }
}

template <typename T> void ClipByValue(void* stream, const T* x, T* y, T lo, T hi, std::int64_t count) {
  if (count == 0) return;
  ClipKernel<T><<<Blocks(count), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, y, lo, hi, count);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T> void ClipByValueGrad(void* stream, const T* dy, const T* x, T* dx, T lo, T hi, std::int64_t count) {
  if (count == 0) return;
  ClipGradKernel<T><<<Blocks(count), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(dy, x, dx, lo, hi, count);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T> void SigmoidCrossEntropy(void* stream, const T* z, const T* x, T* loss, std::int64_t count) {
  if (count == 0) return;
  SigmoidCrossEntropyKernel<T><<<Blocks(count), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(z, x, loss, count);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void SigmoidCrossEntropyGrad(void* stream, const T* z, const T* x, const T* dy, T* dz, T* dx, std::int64_t count) {
  if (count == 0) return;
  SigmoidCrossEntropyGradKernel<T><<<Blocks(count), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(z, x, dy, dz, dx,
                                                                                                      count);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void ScalarGrad(void* stream, ScalarOpKind kind, T value, const T* dy, const T* x, T* dx, std::int64_t count) {
  if (count == 0) return;
  ScalarGradKernel<T><<<Blocks(count), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(kind, value, dy, x, dx, count);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T> void Unary(void* stream, UnaryOpKind kind, const T* x, T* y, std::int64_t count) {
  VisitUnaryKind(kind, UnaryLaunch<T>{stream, x, y, count});
}

template <typename T> void UnaryGrad(void* stream, UnaryOpKind kind, const T* dy, const T* v, T* dx, std::int64_t count) {
  VisitUnaryKind(kind, UnaryGradLaunch<T>{stream, dy, v, dx, count});
}

template <typename T> void ActivationForward(void* stream, Activation kind, const T* x, T* y, std::int64_t count) {
  switch (kind) {
    case Activation::kRelu: return LaunchForward<T, ReluFn>(stream, x, y, count);
    case Activation::kSigmoid: return LaunchForward<T, SigmoidFn>(stream, x, y, count);
    case Activation::kTanh: return LaunchForward<T, TanhFn>(stream, x, y, count);
  }
}

template <typename T> void ActivationGrad(void* stream, Activation kind, const T* dy, const T* y, T* dx, std::int64_t count) {
  switch (kind) {
    case Activation::kRelu: return LaunchGrad<T, ReluFn, true>(stream, dy, y, dx, count);
    case Activation::kSigmoid: return LaunchGrad<T, SigmoidFn, true>(stream, dy, y, dx, count);
    case Activation::kTanh: return LaunchGrad<T, TanhFn, true>(stream, dy, y, dx, count);
  }
}

template void Unary<float>(void*, UnaryOpKind, const float*, float*, std::int64_t);
template void Unary<double>(void*, UnaryOpKind, const double*, double*, std::int64_t);
template void Unary<std::int32_t>(void*, UnaryOpKind, const std::int32_t*, std::int32_t*, std::int64_t);
template void Unary<std::int64_t>(void*, UnaryOpKind, const std::int64_t*, std::int64_t*, std::int64_t);
template void UnaryGrad<float>(void*, UnaryOpKind, const float*, const float*, float*, std::int64_t);
template void UnaryGrad<double>(void*, UnaryOpKind, const double*, const double*, double*, std::int64_t);
template void ActivationForward<float>(void*, Activation, const float*, float*, std::int64_t);
template void ActivationForward<double>(void*, Activation, const double*, double*, std::int64_t);
template void ActivationGrad<float>(void*, Activation, const float*, const float*, float*, std::int64_t);
#define WEIR_INSTANTIATE(T)                                                                             \
  template void Scalar<T>(void*, ScalarOpKind, T, const T*, T*, std::int64_t);                          \
  template void BroadcastBinary<T>(void*, Binary, const BroadcastPlan&, const T*, const T*, T*, std::int64_t); \
  template void ClipByValue<T>(void*, const T*, T*, T, T, std::int64_t);
WEIR_INSTANTIATE(float)
WEIR_INSTANTIATE(double)
WEIR_INSTANTIATE(std::int32_t)
WEIR_INSTANTIATE(std::int64_t)
#undef WEIR_INSTANTIATE
#define WEIR_INSTANTIATE(T)                                                                             \
  template void ClipByValueGrad<T>(void*, const T*, const T*, T*, T, T, std::int64_t);                  \
  template void SigmoidCrossEntropy<T>(void*, const T*, const T*, T*, std::int64_t);                     \
  template void SigmoidCrossEntropyGrad<T>(void*, const T*, const T*, const T*, T*, T*, std::int64_t);   \
  template void ScalarGrad<T>(void*, ScalarOpKind, T, const T*, const T*, T*, std::int64_t);
WEIR_INSTANTIATE(float)
WEIR_INSTANTIATE(double)
#undef WEIR_INSTANTIATE
template void ActivationGrad<double>(void*, Activation, const double*, const double*, double*, std::int64_t);

}  // namespace weir::internal::cuda
