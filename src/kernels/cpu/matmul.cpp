// matmul on the CPU through oneDNN. The primitive is created once per task (creation costs
// 30 µs–2.6 ms; never on the hot path) with the transposes folded into memory formats.
// oneDNN 2.6 has no f64 matmul, so f64 goes to OpenBLAS's dgemm.
#include <algorithm>
#include <cstdint>

#include <cblas.h>
#include <dnnl.hpp>

#include "kernels/cpu/dnnl_engine.hpp"
#include "kernels/kernel.hpp"
#include "weir/ops.hpp"

namespace weir::internal {
namespace {

class MatMulCpu final : public Kernel {
 public:
  explicit MatMulCpu(const KernelSetup& setup) {
    const auto& attrs = setup.Get<MatMulAttrs>();
    const Shape& a = setup.inputs[0].shape;
    const Shape& b = setup.inputs[1].shape;
    const dnnl::memory::dim m = attrs.transpose_a ? a[1] : a[0];
    const dnnl::memory::dim k = attrs.transpose_a ? a[0] : a[1];
    const dnnl::memory::dim n = attrs.transpose_b ? b[0] : b[1];
    const auto type = DnnlDataType(setup.inputs[0].dtype);
    using tag = dnnl::memory::format_tag;
    a_desc_ = dnnl::memory::desc({m, k}, type, attrs.transpose_a ? tag::ba : tag::ab);
    b_desc_ = dnnl::memory::desc({k, n}, type, attrs.transpose_b ? tag::ba : tag::ab);
    c_desc_ = dnnl::memory::desc({m, n}, type, tag::ab);
    dnnl::primitive_attr primitive_attr;
    if (attrs.alpha != 1.0) primitive_attr.set_output_scales(0, {static_cast<float>(attrs.alpha)});
    const dnnl::matmul::primitive_desc desc(dnnl::matmul::desc(a_desc_, b_desc_, c_desc_), primitive_attr,
                                            CpuEngine());
    primitive_ = dnnl::matmul(desc);
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    dnnl::stream stream(CpuEngine());
    dnnl::memory a(a_desc_, CpuEngine(), const_cast<void*>(inputs[0].data));
    dnnl::memory b(b_desc_, CpuEngine(), const_cast<void*>(inputs[1].data));
    dnnl::memory c(c_desc_, CpuEngine(), outputs[0].data);
    primitive_.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    stream.wait();
  }

 private:
  dnnl::memory::desc a_desc_, b_desc_, c_desc_;
  dnnl::matmul primitive_;
};

class MatMulF64Cpu final : public Kernel {
 public:
  explicit MatMulF64Cpu(const KernelSetup& setup) : alpha_(setup.Get<MatMulAttrs>().alpha) {
    const auto& attrs = setup.Get<MatMulAttrs>();
    const Shape& a = setup.inputs[0].shape;
    const Shape& b = setup.inputs[1].shape;
    trans_a_ = attrs.transpose_a ? CblasTrans : CblasNoTrans;
    trans_b_ = attrs.transpose_b ? CblasTrans : CblasNoTrans;
    m_ = static_cast<blasint>(attrs.transpose_a ? a[1] : a[0]);
    k_ = static_cast<blasint>(attrs.transpose_a ? a[0] : a[1]);
    n_ = static_cast<blasint>(attrs.transpose_b ? b[0] : b[1]);
    // Leading dimensions are the stored row lengths; BLAS rejects 0 even for empty matrices.
    lda_ = static_cast<blasint>(std::max<std::int64_t>(a[1], 1));
    ldb_ = static_cast<blasint>(std::max<std::int64_t>(b[1], 1));
    ldc_ = std::max<blasint>(n_, 1);
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (m_ == 0 || n_ == 0) return;
    if (k_ == 0) {  // an empty sum; not every BLAS clears C for k = 0
      std::fill_n(outputs[0].As<double>(), static_cast<std::int64_t>(m_) * n_, 0.0);
      return;
    }
    cblas_dgemm(CblasRowMajor, trans_a_, trans_b_, m_, n_, k_, alpha_, inputs[0].As<double>(), lda_,
                inputs[1].As<double>(), ldb_, 0.0, outputs[0].As<double>(), ldc_);
  }

 private:
  double alpha_;
  CBLAS_TRANSPOSE trans_a_, trans_b_;
  blasint m_, n_, k_, lda_, ldb_, ldc_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"matmul", Device::Kind::kCpu, DType::kF32}, &MakeKernel<MatMulCpu>);
  RegisterKernel({"matmul", Device::Kind::kCpu, DType::kF64}, &MakeKernel<MatMulF64Cpu>);
}

}  // namespace
}  // namespace weir::internal
