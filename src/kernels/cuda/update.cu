// The optimizer updates' launchers: one thread per element running the functor of
// kernels/functors/update.hpp (the CPU kernels'), the learning rate and train step read on the device.
#include <cstdint>

#include "common/cuda_check.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.hpp"

namespace weir::internal::cuda {

namespace {




template <typename T>
__global__ void SgdKernel(T* p, const T* g, const float* lr, RegularizedGradient<T> regularized, std::int64_t count) {
  const T rate = static_cast<T>(*lr);
  WEIR_FOR_EACH_ELEMENT(i, count) { SgdStep(p[i], g[i], rate, regularized); }
}

template <typename T>
__global__ void MomentumKernel(T* p, T* v, const T* g, const float* lr, T beta, RegularizedGradient<T> regularized,
                               std::int64_t count) {
  const T rate = static_cast<T>(*lr);
  WEIR_FOR_EACH_ELEMENT(i, count) { MomentumStep(p[i], v[i], g[i], rate, beta, regularized); }
}

template <typename T>
__global__ void AdamKernel(T* p, T* m, T* v, const T* g, const float* lr, const std::int64_t* train_step, double beta1,
                           double beta2, AdamConstants<T> constants, RegularizedGradient<T> regularized, std::int64_t count) {
  // Every thread derives the same rate from the two scalars (cheaper than another launch).
  const double corrected = train_step == nullptr ? *lr : AdamBiasCorrectedRate(*lr, beta1, beta2, *train_step);
  const T rate = static_cast<T>(corrected);
  WEIR_FOR_EACH_ELEMENT(i, count) { AdamStep(p[i], m[i], v[i], g[i], rate, constants, regularized); }
}

template <typename T>
__global__ void LambDirectionKernel(const T* p, T* m, T* v, const T* g, const std::int64_t* train_step, double beta1,
                                    double beta2, AdamConstants<T> constants, RegularizedGradient<T> regularized, T* u,
                                    double* square_sums, std::int64_t count) {
  const double t = static_cast<double>(*train_step + 1);
  const T correction1 = static_cast<T>(1 - pow(beta1, t));
  const T correction2 = static_cast<T>(1 - pow(beta2, t));
  double p_squares = 0, u_squares = 0;
  WEIR_FOR_EACH_ELEMENT(i, count) {
    u[i] = LambDirection(p[i], m[i], v[i], g[i], constants, correction1, correction2, regularized);
    p_squares += static_cast<double>(p[i]) * p[i];
    u_squares += static_cast<double>(u[i]) * u[i];
  }
  p_squares = BlockSum(p_squares);
  u_squares = BlockSum(u_squares);
  if (threadIdx.x == 0) {
    atomicAdd(&square_sums[0], p_squares);
    atomicAdd(&square_sums[1], u_squares);
  }
}

template <typename T>
__global__ void LambApplyKernel(T* p, const T* u, const float* lr, const double* square_sums, T weight_decay,
                                std::int64_t count) {
  const T rate = static_cast<T>(*lr * LambTrustRatio(square_sums[0], square_sums[1]));
  WEIR_FOR_EACH_ELEMENT(i, count) { p[i] -= rate * (u[i] + weight_decay * p[i]); }
}

template <typename T>
__global__ void RmsPropKernel(T* p, T* mean_square, T* mean_gradient, const T* g, const float* lr, T decay,
                              T one_minus_decay, T epsilon, RegularizedGradient<T> regularized, std::int64_t count) {
  const T rate = static_cast<T>(*lr);
  WEIR_FOR_EACH_ELEMENT(i, count) {
    RmsPropStep(p[i], mean_square[i], mean_gradient != nullptr ? &mean_gradient[i] : nullptr, g[i], rate, decay,
                one_minus_decay, epsilon, regularized);
  }
}



// Up to kTensorsPerUpdateLaunch tensors by value in the launch's arguments (about 1.6 KiB for double),
// with where each begins in their concatenation.
template <typename T> struct UpdateBatch {
  UpdateTensor<T> tensor[kTensorsPerUpdateLaunch];
  std::int64_t begin[kTensorsPerUpdateLaunch + 1];
  int count;
};

template <typename T> __global__ void MultiTensorUpdateKernel(SharedUpdate<T> shared, UpdateBatch<T> batch) {
  // Each tensor's rate as the one-tensor kernels derive it, once per block.
  __shared__ T rates[kTensorsPerUpdateLaunch];
  if (static_cast<int>(threadIdx.x) < batch.count) {
    const UpdateTensor<T>& x = batch.tensor[threadIdx.x];
    const double corrected = shared.kind == UpdateKind::kAdam && x.train_step != nullptr
                                 ? AdamBiasCorrectedRate(*x.lr, shared.beta1, shared.beta2, *x.train_step)
                                 : static_cast<double>(*x.lr);
    rates[threadIdx.x] = static_cast<T>(corrected);
  }
  __syncthreads();
  WEIR_FOR_EACH_ELEMENT(i, batch.begin[batch.count]) {
    // The last tensor that begins at or before i (an empty tensor begins where the next one does).
    int lo = 0, hi = batch.count - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (batch.begin[mid] <= i) lo = mid;
      else hi = mid - 1;
    }
    const UpdateTensor<T>& x = batch.tensor[lo];
    const std::int64_t j = i - batch.begin[lo];
    const T rate = rates[lo];
    switch (shared.kind) {
      case UpdateKind::kSgd: SgdStep(x.p[j], x.g[j], rate, x.regularized); break;
      case UpdateKind::kMomentum: MomentumStep(x.p[j], x.slot1[j], x.g[j], rate, shared.momentum, x.regularized); break;
      case UpdateKind::kAdam: AdamStep(x.p[j], x.slot1[j], x.slot2[j], x.g[j], rate, shared.adam, x.regularized); break;
      case UpdateKind::kRmsProp:
        RmsPropStep(x.p[j], x.slot1[j], x.slot2 != nullptr ? &x.slot2[j] : nullptr, x.g[j], rate, shared.decay,
                    shared.one_minus_decay, shared.epsilon, x.regularized);
        break;
    }
  }
}

}  // namespace

template <typename T>
void MultiTensorUpdate(void* stream, const SharedUpdate<T>& shared, const UpdateTensor<T>* tensors, int count) {
  for (int first = 0; first < count; first += kTensorsPerUpdateLaunch) {
    UpdateBatch<T> batch{};
    batch.count = count - first < kTensorsPerUpdateLaunch ? count - first : kTensorsPerUpdateLaunch;
    for (int t = 0; t < batch.count; ++t) {
      batch.tensor[t] = tensors[first + t];
      batch.begin[t + 1] = batch.begin[t] + tensors[first + t].count;
    }
    const std::int64_t elements = batch.begin[batch.count];
    if (elements == 0) continue;
    MultiTensorUpdateKernel<T><<<Blocks(elements), kThreads, 0, Native(stream)>>>(shared, batch);
    WEIR_CUDA_CHECK(cudaGetLastError());
  }
}

template <typename T>
void SgdUpdate(void* stream, T* p, const T* g, const float* lr, const RegularizedGradient<T>& regularized, std::int64_t count) {
  if (count == 0) return;
  SgdKernel<T><<<Blocks(count), kThreads, 0, Native(stream)>>>(p, g, lr, regularized, count);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void MomentumUpdate(void* stream, T* p, T* v, const T* g, const float* lr, T beta, const RegularizedGradient<T>& regularized,
                    std::int64_t count) {
  if (count == 0) return;
  MomentumKernel<T><<<Blocks(count), kThreads, 0, Native(stream)>>>(p, v, g, lr, beta, regularized, count);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void AdamUpdate(void* stream, T* p, T* m, T* v, const T* g, const float* lr, const std::int64_t* train_step, double beta1,
                double beta2, const AdamConstants<T>& constants, const RegularizedGradient<T>& regularized,
                std::int64_t count) {
  if (count == 0) return;
  AdamKernel<T><<<Blocks(count), kThreads, 0, Native(stream)>>>(p, m, v, g, lr, train_step, beta1, beta2, constants,
                                                                regularized, count);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void RmsPropUpdate(void* stream, T* p, T* mean_square, T* mean_gradient, const T* g, const float* lr, T decay,
                   T one_minus_decay, T epsilon, const RegularizedGradient<T>& regularized, std::int64_t count) {
  if (count == 0) return;
  RmsPropKernel<T><<<Blocks(count), kThreads, 0, Native(stream)>>>(p, mean_square, mean_gradient, g, lr, decay,
                                                                   one_minus_decay, epsilon, regularized, count);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void LambUpdate(void* stream, T* p, T* m, T* v, const T* g, const float* lr, const std::int64_t* train_step, double beta1,
                double beta2, const AdamConstants<T>& constants, const RegularizedGradient<T>& regularized,
                double weight_decay, T* direction, double* square_sums, std::int64_t count) {
  WEIR_CUDA_CHECK(cudaMemsetAsync(square_sums, 0, 2 * sizeof(double), Native(stream)));
  if (count == 0) return;
  LambDirectionKernel<T><<<Blocks(count), kThreads, 0, Native(stream)>>>(p, m, v, g, train_step, beta1, beta2, constants,
                                                                          regularized, direction, square_sums, count);
  WEIR_CUDA_CHECK(cudaGetLastError());
  LambApplyKernel<T><<<Blocks(count), kThreads, 0, Native(stream)>>>(p, direction, lr, square_sums,
                                                                      static_cast<T>(weight_decay), count);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

#define WEIR_INSTANTIATE(T)                                                                                         \
  template void MultiTensorUpdate<T>(void*, const SharedUpdate<T>&, const UpdateTensor<T>*, int);                   \
  template void LambUpdate<T>(void*, T*, T*, T*, const T*, const float*, const std::int64_t*, double, double,        \
                              const AdamConstants<T>&, const RegularizedGradient<T>&, double, T*, double*,           \
                              std::int64_t);                                                                         \
  template void SgdUpdate<T>(void*, T*, const T*, const float*, const RegularizedGradient<T>&, std::int64_t);       \
  template void MomentumUpdate<T>(void*, T*, T*, const T*, const float*, T, const RegularizedGradient<T>&,           \
                                  std::int64_t);                                                                     \
  template void AdamUpdate<T>(void*, T*, T*, T*, const T*, const float*, const std::int64_t*, double, double,        \
                              const AdamConstants<T>&, const RegularizedGradient<T>&, std::int64_t);                 \
  template void RmsPropUpdate<T>(void*, T*, T*, T*, const T*, const float*, T, T, T, const RegularizedGradient<T>&,  \
                                 std::int64_t);
WEIR_INSTANTIATE(float)
WEIR_INSTANTIATE(double)
#undef WEIR_INSTANTIATE

}  // namespace weir::internal::cuda
