// batch_matmul's launcher (kernels/cuda/batch_matmul.cpp declares it): cuBLAS's strided-batched GEMM.
// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so B goes first (as blas.cu).
#include <cstdint>

#include "common/cuda_check.cuh"
#include "common/cuda_handles.cuh"
#include "kernels/cuda/grid.cuh"

namespace weir::internal::cuda {

namespace {

int Dim(std::int64_t value, const char* what) { return LibraryDim(value, "batch_matmul", what); }

cublasStatus_t BatchGemmCall(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                             const float* alpha, const float* a, int lda, long long stride_a, const float* b, int ldb,
                             long long stride_b, const float* beta, float* c, int ldc, long long stride_c, int batches) {
  return cublasSgemmStridedBatched(handle, ta, tb, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc,
                                   stride_c, batches);
}
cublasStatus_t BatchGemmCall(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                             const double* alpha, const double* a, int lda, long long stride_a, const double* b, int ldb,
                             long long stride_b, const double* beta, double* c, int ldc, long long stride_c, int batches) {
  return cublasDgemmStridedBatched(handle, ta, tb, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc,
                                   stride_c, batches);
}

}  // namespace

template <typename T>
void BatchGemm(void* stream, bool transpose_a, bool transpose_b, std::int64_t batches, std::int64_t m, std::int64_t n,
               std::int64_t k, double alpha, const T* a, const T* b, T* c) {
  if (batches == 0 || m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: cuBLAS takes no leading dimension of 0, so C is zeroed here
    WEIR_CUDA_CHECK(cudaMemsetAsync(c, 0, static_cast<std::size_t>(batches * m * n) * sizeof(T), Native(stream)));
    return;
  }
  cublasHandle_t handle = CublasHandleOf(Native(stream));
  const int lda = Dim(transpose_a ? m : k, "a's row length");
  const int ldb = Dim(transpose_b ? k : n, "b's row length");
  const T scale = static_cast<T>(alpha);
  const T zero = 0;
  WEIR_CUDA_CHECK(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST));
  WEIR_CUDA_CHECK(BatchGemmCall(handle, transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                Dim(n, "n"), Dim(m, "m"), Dim(k, "k"), &scale, b, ldb, k * n, a, lda, m * k, &zero, c,
                                Dim(n, "n"), m * n, Dim(batches, "the batch count")));
}

template void BatchGemm<float>(void*, bool, bool, std::int64_t, std::int64_t, std::int64_t, std::int64_t, double,
                               const float*, const float*, float*);
template void BatchGemm<double>(void*, bool, bool, std::int64_t, std::int64_t, std::int64_t, std::int64_t, double,
                                const double*, const double*, double*);

}  // namespace weir::internal::cuda
