// batch_matmul on CUDA: one strided-batched cuBLAS GEMM over every batch index (the launcher in
// batch_matmul.cu), on the device stream's handle.
#include <cstdint>

#include "kernels/batch_product.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {

namespace cuda {
/// c[i] = alpha · op(a[i]) · op(b[i]) for i < batches, row-major (batch_matmul.cu).
template <typename T>
void BatchGemm(void* stream, bool transpose_a, bool transpose_b, std::int64_t batches, std::int64_t m, std::int64_t n,
               std::int64_t k, double alpha, const T* a, const T* b, T* c);
}  // namespace cuda

namespace {

template <typename T> class BatchMatMulCuda final : public Kernel {
 public:
  explicit BatchMatMulCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), attrs_(setup.Get<MatMulAttrs>()),
        product_(BatchProductOf(setup.inputs[0].shape, setup.inputs[1].shape, attrs_)) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::BatchGemm<T>(stream_, attrs_.transpose_a, attrs_.transpose_b, product_.batches, product_.m, product_.n, product_.k,
                       attrs_.alpha, inputs[0].As<T>(), inputs[1].As<T>(), outputs[0].As<T>());
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
