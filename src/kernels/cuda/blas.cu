// cuBLAS launchers. Weir's tensors are row-major and cuBLAS is column-major: a row-major C = op(A) op(B)
// is the column-major C^T = op(B)^T op(A)^T, so B goes first and the shapes are read transposed.
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "common/cuda_check.cuh"
#include "common/cuda_handles.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.hpp"

namespace weir::internal::cuda {

namespace {

int Dim(std::int64_t value, const char* what) { return LibraryDim(value, "matmul", what); }

cublasStatus_t GemmCall(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                        const float* alpha, const float* a, int lda, const float* b, int ldb, const float* beta, float* c,
                        int ldc) {
  return cublasSgemm(handle, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
cublasStatus_t GemmCall(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                        const double* alpha, const double* a, int lda, const double* b, int ldb, const double* beta,
                        double* c, int ldc) {
  return cublasDgemm(handle, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// alpha = factor · *lr, beta = 1, on the device.
template <typename T> __global__ void AccumulateScalarsKernel(const float* lr, double factor, T* scalars) {
  scalars[0] = static_cast<T>(factor * static_cast<double>(*lr));
  scalars[1] = T(1);
}

}  // namespace

template <typename T>
void GemmAccumulate(void* stream, bool transpose_a, bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k,
                    const float* lr, double factor, const T* a, const T* b, T* c, T* scalars) {
  if (m == 0 || n == 0 || k == 0) return;  // nothing to add
  cudaStream_t native = static_cast<cudaStream_t>(stream);
  AccumulateScalarsKernel<T><<<1, 1, 0, native>>>(lr, factor, scalars);
  WEIR_CUDA_CHECK(cudaGetLastError());
  cublasHandle_t handle = CublasHandleOf(native);
  const int lda = Dim(transpose_a ? m : k, "a's row length");
  const int ldb = Dim(transpose_b ? k : n, "b's row length");
  WEIR_CUDA_CHECK(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_DEVICE));
  const cublasStatus_t status = GemmCall(handle, transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                         Dim(n, "n"), Dim(m, "m"), Dim(k, "k"), scalars, b, ldb, a, lda, scalars + 1, c,
                                         Dim(n, "n"));
  WEIR_CUDA_CHECK(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST));  // what Gemm expects
  WEIR_CUDA_CHECK(status);
}

template void GemmAccumulate<float>(void*, bool, bool, std::int64_t, std::int64_t, std::int64_t, const float*, double,
                                    const float*, const float*, float*, float*);

template <typename T>
void Gemm(void* stream, bool transpose_a, bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
          const T* a, const T* b, T* c) {
  if (m == 0 || n == 0) return;
  cublasHandle_t handle = CublasHandleOf(static_cast<cudaStream_t>(stream));
  // Row-major leading dimensions: A is (m x k) or (k x m), B is (k x n) or (n x k).
  const int lda = Dim(transpose_a ? m : k, "a's row length");
  const int ldb = Dim(transpose_b ? k : n, "b's row length");
  const T scale = static_cast<T>(alpha);
  const T zero = 0;  // with k == 0, C = 0 (an empty sum)
  WEIR_CUDA_CHECK(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST));
  WEIR_CUDA_CHECK(GemmCall(handle, transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                           Dim(n, "n"), Dim(m, "m"), Dim(k, "k"), &scale, b, ldb, a, lda, &zero, c, Dim(n, "n")));
}

template void Gemm<float>(void*, bool, bool, std::int64_t, std::int64_t, std::int64_t, double, const float*, const float*, float*);
template void Gemm<double>(void*, bool, bool, std::int64_t, std::int64_t, std::int64_t, double, const double*, const double*,
                           double*);

}  // namespace weir::internal::cuda
