// matmul on CUDA through cuBLAS (kernels/cuda/blas.cu), on the device stream's handle.
#include <cstdint>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"
#include "weir/ops.hpp"

namespace weir::internal {
namespace {

template <typename T> class MatMulCuda final : public Kernel {
 public:
  explicit MatMulCuda(const KernelSetup& setup) : stream_(CudaStreamOf(setup)), attrs_(setup.Get<MatMulAttrs>()) {
    const Shape& a = setup.inputs[0].shape;
    const Shape& b = setup.inputs[1].shape;
    m_ = attrs_.transpose_a ? a[1] : a[0];
    k_ = attrs_.transpose_a ? a[0] : a[1];
    n_ = attrs_.transpose_b ? b[0] : b[1];
  }
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::Gemm<T>(stream_, attrs_.transpose_a, attrs_.transpose_b, m_, n_, k_, attrs_.alpha, inputs[0].As<T>(),
                  inputs[1].As<T>(), outputs[0].As<T>());
  }

 private:
  void* stream_;
  MatMulAttrs attrs_;
  std::int64_t m_ = 0, n_ = 0, k_ = 0;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"matmul", Device::Kind::kCuda, DType::kF32}, &MakeKernel<MatMulCuda<float>>);
  RegisterKernel({"matmul", Device::Kind::kCuda, DType::kF64}, &MakeKernel<MatMulCuda<double>>);
}

}  // namespace
}  // namespace weir::internal
