// matmul on CUDA through cuBLAS (kernels/cuda/blas.cu), on the device stream's handle; and the
// planner-fused matmul_bias_act in one cuBLASLt matmul whose epilogue adds the bias and applies the
// relu (FusedGemm), or, where cuBLASLt offers no algorithm for the shapes, the GEMM and then the bias
// and the relu in place (two more elementwise launches).
#include <cstdint>
#include <optional>
#include <type_traits>

#include "kernels/attrs/fused_attrs.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> class MatMulCuda final : public Kernel {
 public:
  explicit MatMulCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), fused_(setup.op_type == "matmul_bias_act"),
        attrs_(fused_ ? setup.Get<FusedMatMulAttrs>().matmul : setup.Get<MatMulAttrs>()),
        relu_(fused_ && setup.Get<FusedMatMulAttrs>().activation == FusedActivation::kRelu) {
    const Shape& a = setup.inputs[0].shape;
    const Shape& b = setup.inputs[1].shape;
    m_ = attrs_.transpose_a ? a[1] : a[0];
    k_ = attrs_.transpose_a ? a[0] : a[1];
    n_ = attrs_.transpose_b ? b[0] : b[1];
    if (!fused_) return;
    PlanBroadcast({m_, n_}, {n_}, {m_, n_}, bias_rows_);
    if constexpr (std::is_same_v<T, float>) {
      epilogue_.emplace(stream_, attrs_.transpose_a, attrs_.transpose_b, m_, n_, k_, attrs_.alpha, relu_);
      if (!epilogue_->Ready()) epilogue_.reset();
    }
  }
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    T* c = outputs[0].As<T>();
    if constexpr (std::is_same_v<T, float>) {
      if (epilogue_) {
        epilogue_->Run(stream_, inputs[0].As<T>(), inputs[1].As<T>(), inputs[2].As<T>(), c);
        return;
      }
    }
    cuda::Gemm<T>(stream_, attrs_.transpose_a, attrs_.transpose_b, m_, n_, k_, attrs_.alpha, inputs[0].As<T>(),
                  inputs[1].As<T>(), c);
    if (!fused_) return;
    cuda::BroadcastBinary<T>(stream_, cuda::Binary::kAdd, bias_rows_, c, inputs[2].As<T>(), c, m_ * n_);
    if (relu_) cuda::ActivationForward<T>(stream_, cuda::Activation::kRelu, c, c, m_ * n_);
  }

 private:
  void* stream_;
  bool fused_;
  MatMulAttrs attrs_;
  bool relu_;
  std::int64_t m_ = 0, n_ = 0, k_ = 0;
  BroadcastPlan bias_rows_;  // the bias row over C's rows
  std::optional<cuda::FusedGemm> epilogue_;  // matmul_bias_act in one cuBLASLt call, where it has an algorithm
};

// matmul_sgd_update: (a, b, variable, lr) -> variable += (−lr · gradient_scale · alpha) op(a) op(b),
// in place, the gradient never a tensor; the scale is formed on the device from the learning rate.
class MatMulSgdUpdateCuda final : public Kernel {
 public:
  explicit MatMulSgdUpdateCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), attrs_(setup.Get<FusedMatMulSgdAttrs>().matmul),
        factor_(-setup.Get<FusedMatMulSgdAttrs>().gradient_scale * attrs_.alpha), scratch_(setup.device.index, 2 * sizeof(float)) {
    const Shape& a = setup.inputs[0].shape;
    const Shape& b = setup.inputs[1].shape;
    m_ = attrs_.transpose_a ? a[1] : a[0];
    k_ = attrs_.transpose_a ? a[0] : a[1];
    n_ = attrs_.transpose_b ? b[0] : b[1];
  }
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    cuda::GemmAccumulate<float>(stream_, attrs_.transpose_a, attrs_.transpose_b, m_, n_, k_, inputs[3].As<float>(), factor_,
                                inputs[0].As<float>(), inputs[1].As<float>(), const_cast<float*>(inputs[2].As<float>()),
                                scratch_.As<float>());
  }

 private:
  void* stream_;
  MatMulAttrs attrs_;
  double factor_;
  DeviceScratch scratch_;
  std::int64_t m_ = 0, n_ = 0, k_ = 0;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"matmul_sgd_update", Device::Kind::kCuda, DType::kF32}, &MakeKernel<MatMulSgdUpdateCuda>);
  RegisterKernel({"matmul", Device::Kind::kCuda, DType::kF32}, &MakeKernel<MatMulCuda<float>>);
  RegisterKernel({"matmul", Device::Kind::kCuda, DType::kF64}, &MakeKernel<MatMulCuda<double>>);
  RegisterKernel({"matmul_bias_act", Device::Kind::kCuda, DType::kF32}, &MakeKernel<MatMulCuda<float>>);
}

}  // namespace
}  // namespace weir::internal
