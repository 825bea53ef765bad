// batch_matmul on CUDA: one strided-batched cuBLAS GEMM over every batch index, on the device stream's
// handle. Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so B goes first (as blas.cu).
#include <cstdint>
#include <tuple>
#include <type_traits>

#include "common/cuda_handles.cuh"
#include "kernels/batch_product.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

int Dim(std::int64_t value, const char* what) { return cuda::LibraryDim(value, "batch_matmul", what); }

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

template <typename T> class BatchMatMulCuda final : public Kernel {
 public:
  explicit BatchMatMulCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), attrs_(setup.Get<MatMulAttrs>()),
        product_(BatchProductOf(setup.inputs[0].shape, setup.inputs[1].shape, attrs_)) {
    if constexpr (std::is_same_v<T, float>) UseTensorFloat32(cuda::Native(stream_), setup.tensor_float_32);
  }
  // c[i] = alpha · op(a[i]) · op(b[i]) for i < batches, row-major.
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const auto [batches, m, n, k] = std::tuple(product_.batches, product_.m, product_.n, product_.k);
    T* c = outputs[0].As<T>();
    if (batches == 0 || m == 0 || n == 0) return;
    if (k == 0) {  // an empty sum: cuBLAS takes no leading dimension of 0, so C is zeroed here
      cuda::Zero(stream_, c, static_cast<std::size_t>(batches * m * n) * sizeof(T));
      return;
    }
    cublasHandle_t handle = CublasHandleOf(cuda::Native(stream_));
    const int lda = Dim(attrs_.transpose_a ? m : k, "a's row length");
    const int ldb = Dim(attrs_.transpose_b ? k : n, "b's row length");
    const T scale = static_cast<T>(attrs_.alpha);
    const T zero = 0;
    WEIR_CUDA_CHECK(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST));
    WEIR_CUDA_CHECK(BatchGemmCall(handle, attrs_.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                  attrs_.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, Dim(n, "n"), Dim(m, "m"), Dim(k, "k"),
                                  &scale, inputs[1].As<T>(), ldb, k * n, inputs[0].As<T>(), lda, m * k, &zero, c,
                                  Dim(n, "n"), m * n, Dim(batches, "the batch count")));
  }

 private:
  void* stream_;
  MatMulAttrs attrs_;
  BatchProduct product_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"batch_matmul", Device::Kind::kCuda, DType::kF32}, &MakeKernel<BatchMatMulCuda<float>>);
  RegisterKernel({"batch_matmul", Device::Kind::kCuda, DType::kF64}, &MakeKernel<BatchMatMulCuda<double>>);
}

}  // namespace
}  // namespace weir::internal
