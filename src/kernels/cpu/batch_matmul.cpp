// batch_matmul on the CPU: one BLAS GEMM (OpenBLAS, row-major, the transposes as flags) per batch
// index, the batches split over the intra-op pool.
#include <algorithm>
#include <cstdint>
#include <memory>

#include <cblas.h>

#include "common/intra_op_pool.hpp"
#include "kernels/batch_product.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

void Gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha, const float* a, int lda,
          const float* b, int ldb, float* c) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, static_cast<float>(alpha), a, lda, b, ldb, 0.f, c, n);
}
void Gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha, const double* a, int lda,
          const double* b, int ldb, double* c) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, 0.0, c, n);
}

template <typename T> class BatchMatMulCpu final : public Kernel {
 public:
  explicit BatchMatMulCpu(const KernelSetup& setup)
      : attrs_(setup.Get<MatMulAttrs>()), product_(BatchProductOf(setup.inputs[0].shape, setup.inputs[1].shape, attrs_)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* a = inputs[0].As<T>();
    const T* b = inputs[1].As<T>();
    T* c = outputs[0].As<T>();
    const std::int64_t batches = product_.batches, m = product_.m, n = product_.n, k = product_.k;
    if (batches * m * n == 0) return;
    if (k == 0) {  // an empty sum is 0 (BLAS takes no leading dimension of 0)
      std::fill(c, c + batches * m * n, T{0});
      return;
    }
    const int lda = static_cast<int>(attrs_.transpose_a ? m : k);
    const int ldb = static_cast<int>(attrs_.transpose_b ? k : n);
    const CBLAS_TRANSPOSE ta = attrs_.transpose_a ? CblasTrans : CblasNoTrans;
    const CBLAS_TRANSPOSE tb = attrs_.transpose_b ? CblasTrans : CblasNoTrans;
    // A chunk of batch indices per intra-op thread.
    const int chunks = static_cast<int>(std::min<std::int64_t>(batches, IntraOpThreads()));
    ParallelFor(chunks, [&](int chunk) {
      for (std::int64_t i = batches * chunk / chunks; i < batches * (chunk + 1) / chunks; ++i) {
        Gemm(ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), attrs_.alpha, a + i * m * k, lda,
             b + i * k * n, ldb, c + i * m * n);
      }
    });
  }

 private:
  MatMulAttrs attrs_;
  BatchProduct product_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"batch_matmul", Device::Kind::kCpu, DType::kF32}, &MakeKernel<BatchMatMulCpu<float>>);
  RegisterKernel({"batch_matmul", Device::Kind::kCpu, DType::kF64}, &MakeKernel<BatchMatMulCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
