// The softmax launchers: a thread per column (softmax along an axis) or per row (the sparse softmax
// cross entropy) running the functions of kernels/functors/softmax.hpp (the CPU kernels'). A label
// out of range is reported through the kernel's DeviceReports slot, lowest row first.
#include <cstdint>

#include "common/cuda_check.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.hpp"
#include "kernels/functors/softmax.hpp"

namespace weir::internal::cuda {

namespace {




template <typename Label, typename T>
__global__ void CrossEntropyKernel(const Label* labels, const T* logits, T* loss, std::int64_t rows, std::int64_t classes,
                                   ReportRing reports) {
  for (std::int64_t r = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<std::int64_t>(blockDim.x) * gridDim.x) {
    const std::int64_t label = labels[r];
    if (CheckIndex(r, label, classes, reports)) loss[r] = SparseCrossEntropyRow(logits + r * classes, classes, label);
  }
}

template <typename Label, typename T>
__global__ void CrossEntropyGradKernel(const Label* labels, const T* logits, const T* dy, T* dlogits, std::int64_t rows,
                                       std::int64_t classes, ReportRing reports) {
  for (std::int64_t r = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<std::int64_t>(blockDim.x) * gridDim.x) {
    const std::int64_t label = labels[r];
    if (CheckIndex(r, label, classes, reports)) {
      SparseCrossEntropyGradRow(logits + r * classes, classes, label, dy[r], dlogits + r * classes);
    }
  }
}

template <typename T>
__global__ void SoftmaxKernel(const T* x, T* y, std::int64_t outer, std::int64_t n, std::int64_t inner) {
  for (std::int64_t c = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; c < outer * inner;
       c += static_cast<std::int64_t>(blockDim.x) * gridDim.x) {
    const std::int64_t base = (c / inner) * n * inner + c % inner;
    SoftmaxAlong(x + base, y + base, n, inner);
  }
}

template <typename T>
__global__ void SoftmaxGradKernel(const T* dy, const T* y, T* dx, std::int64_t outer, std::int64_t n, std::int64_t inner) {
  for (std::int64_t c = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; c < outer * inner;
       c += static_cast<std::int64_t>(blockDim.x) * gridDim.x) {
    const std::int64_t base = (c / inner) * n * inner + c % inner;
    SoftmaxGradAlong(dy + base, y + base, dx + base, n, inner);
  }
}

template <typename T>
__global__ void DenseCrossEntropyKernel(const T* z, const T* x, T* loss, std::int64_t rows, std::int64_t classes) {
  WEIR_FOR_EACH_ELEMENT(r, rows) { loss[r] = SoftmaxCrossEntropyRow(z + r * classes, x + r * classes, classes); }
}

template <typename T>
__global__ void DenseCrossEntropyGradKernel(const T* z, const T* x, const T* dy, T* dz, T* dx, std::int64_t rows,
                                            std::int64_t classes) {
  WEIR_FOR_EACH_ELEMENT(r, rows) {
    const std::int64_t at = r * classes;
    SoftmaxCrossEntropyGradRow(z + at, x + at, dy[r], dz + at, dx + at, classes);
  }
}

}  // namespace

template <typename T>
void SoftmaxCrossEntropy(void* stream, const T* z, const T* x, T* loss, std::int64_t rows, std::int64_t classes) {
  if (rows == 0 || classes == 0) return;
  DenseCrossEntropyKernel<T><<<Blocks(rows), kThreads, 0, Native(stream)>>>(z, x, loss, rows, classes);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void SoftmaxCrossEntropyGrad(void* stream, const T* z, const T* x, const T* dy, T* dz, T* dx, std::int64_t rows,
                             std::int64_t classes) {
  if (rows == 0 || classes == 0) return;
  DenseCrossEntropyGradKernel<T><<<Blocks(rows), kThreads, 0, Native(stream)>>>(z, x, dy, dz, dx, rows, classes);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template void SoftmaxCrossEntropy<float>(void*, const float*, const float*, float*, std::int64_t, std::int64_t);
template void SoftmaxCrossEntropy<double>(void*, const double*, const double*, double*, std::int64_t, std::int64_t);
template void SoftmaxCrossEntropyGrad<float>(void*, const float*, const float*, const float*, float*, float*, std::int64_t,
                                             std::int64_t);
template void SoftmaxCrossEntropyGrad<double>(void*, const double*, const double*, const double*, double*, double*,
                                              std::int64_t, std::int64_t);

template <typename T> void Softmax(void* stream, const T* x, T* y, std::int64_t outer, std::int64_t n, std::int64_t inner) {
  if (outer * inner == 0 || n == 0) return;
  SoftmaxKernel<T><<<Blocks(outer * inner), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, y, outer, n, inner);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void SoftmaxGrad(void* stream, const T* dy, const T* y, T* dx, std::int64_t outer, std::int64_t n, std::int64_t inner) {
  if (outer * inner == 0 || n == 0) return;
  SoftmaxGradKernel<T><<<Blocks(outer * inner), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(dy, y, dx, outer, n,
                                                                                                   inner);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template void Softmax<float>(void*, const float*, float*, std::int64_t, std::int64_t, std::int64_t);
template void Softmax<double>(void*, const double*, double*, std::int64_t, std::int64_t, std::int64_t);
template void SoftmaxGrad<float>(void*, const float*, const float*, float*, std::int64_t, std::int64_t, std::int64_t);
template void SoftmaxGrad<double>(void*, const double*, const double*, double*, std::int64_t, std::int64_t, std::int64_t);

template <typename Label, typename T>
void SparseCrossEntropy(void* stream, const Label* labels, const T* logits, T* loss, std::int64_t rows,
                        std::int64_t classes, ReportRing reports) {
  if (rows == 0) return;
  CrossEntropyKernel<Label, T><<<Blocks(rows), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(labels, logits, loss, rows,
                                                                                                   classes, reports);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template <typename Label, typename T>
void SparseCrossEntropyGrad(void* stream, const Label* labels, const T* logits, const T* dy, T* dlogits,
                            std::int64_t rows, std::int64_t classes, ReportRing reports) {
  if (rows == 0) return;
  CrossEntropyGradKernel<Label, T><<<Blocks(rows), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      labels, logits, dy, dlogits, rows, classes, reports);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

#define WEIR_INSTANTIATE(Label, T)                                                                                \
  template void SparseCrossEntropy<Label, T>(void*, const Label*, const T*, T*, std::int64_t, std::int64_t,      \
                                             ReportRing);                                                        \
  template void SparseCrossEntropyGrad<Label, T>(void*, const Label*, const T*, const T*, T*, std::int64_t,       \
                                                 std::int64_t, ReportRing);
WEIR_INSTANTIATE(std::int32_t, float)
WEIR_INSTANTIATE(std::int32_t, double)
WEIR_INSTANTIATE(std::int64_t, float)
WEIR_INSTANTIATE(std::int64_t, double)
#undef WEIR_INSTANTIATE

}  // namespace weir::internal::cuda
