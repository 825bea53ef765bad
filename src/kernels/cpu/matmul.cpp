// matmul on the CPU through oneDNN. The primitives are created once per task (creation costs
// 30 µs–2.6 ms; never on the hot path) with the transposes folded into memory strides; large
// products run as one chunk per intra-op thread.
// oneDNN 2.6 has no f64 matmul, so f64 goes to OpenBLAS's dgemm. matmul_bias_act (planner-fused
// matmul + bias_add [+ relu]) is the same kernel with oneDNN's bias and relu post-op;
// matmul_sgd_update (a weight gradient's matmul + its SGD step) writes the variable in place with a
// runtime output scale and a sum post-op.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include <cblas.h>
#include <dnnl.hpp>
#include <fmt/format.h>

#include "common/intra_op_pool.hpp"
#include "kernels/cpu/dnnl_engine.hpp"
#include "kernels/cpu/widened.hpp"
#include "kernels/attrs/fused_attrs.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

// Products of at least this many FLOPs are split over the intra-op pool (below it the hand-off
// costs more than it saves).
constexpr double kParallelFlops = 4e6;

// Which op the kernel runs: matmul, or one the planner fused (graph/fusion.cpp).
enum class MatMulVariant : std::uint8_t { kPlain, kBiasAct, kSgdUpdate };

class MatMulCpu final : public Kernel {
 public:
  MatMulCpu(const KernelSetup& setup, MatMulVariant variant) {
    const bool fused = variant == MatMulVariant::kBiasAct;
    update_ = variant == MatMulVariant::kSgdUpdate;
    const auto& attrs = fused     ? setup.Get<FusedMatMulAttrs>().matmul
                        : update_ ? setup.Get<FusedMatMulSgdAttrs>().matmul
                                  : setup.Get<MatMulAttrs>();
    if (update_) update_scale_ = -setup.Get<FusedMatMulSgdAttrs>().gradient_scale * attrs.alpha;
    // oneDNN 2's output scale multiplies the bias too: alpha (AB + bias), not the op's alpha AB + bias.
    // The planner fuses only unscaled products (graph/fusion.cpp).
    if (fused && attrs.alpha != 1.0) {
      throw std::invalid_argument(
          fmt::format("[matmul_bias_act] '{}': alpha must be 1 (only unscaled products fuse), got {}", setup.op_name, attrs.alpha));
    }
    const Shape& a = setup.inputs[0].shape;
    const Shape& b = setup.inputs[1].shape;
    const dnnl::memory::dim m = attrs.transpose_a ? a[1] : a[0];
    const dnnl::memory::dim k = attrs.transpose_a ? a[0] : a[1];
    const dnnl::memory::dim n = attrs.transpose_b ? b[0] : b[1];
    // Mixed precision: bf16 operands may write an f32 result (a product fused with its cast) and add
    // an f32 bias; the update's result is its variable.
    const DType out_dtype = update_ ? setup.inputs[2].dtype : setup.outputs[0].dtype;
    type_ = DnnlDataType(setup.inputs[0].dtype);
    out_type_ = DnnlDataType(out_dtype);
    element_size_ = SizeOf(setup.inputs[0].dtype);
    out_element_size_ = SizeOf(out_dtype);
    bias_element_size_ = fused ? SizeOf(setup.inputs[2].dtype) : 0;
    has_bias_ = fused;
    if (m == 0 || n == 0 || k == 0) {  // nothing to multiply; an empty sum is 0
      output_bytes_ = static_cast<std::size_t>(m * n) * out_element_size_;
      empty_rows_ = m;
      empty_relu_ = fused && setup.Get<FusedMatMulAttrs>().activation == FusedActivation::kRelu;
      return;
    }
    SetChunks(m, n, k);
    // Each chunk is a block of C's rows (split_m_) or columns, with A or B cut to match; all
    // three keep the full tensors' strides, so a chunk reads and writes the registers in place.
    const dnnl::memory::dim a_cols = a[1], b_cols = b[1];
    dnnl::primitive_attr primitive_attr;
    if (update_) {
      // variable += (-lr * scale) * (A B): a runtime output scale (the learning rate changes per
      // call) and a sum post-op that adds the variable's old value.
      primitive_attr.set_output_scales(0, {DNNL_RUNTIME_F32_VAL});
      dnnl::post_ops accumulate;
      accumulate.append_sum(1.f);
      primitive_attr.set_post_ops(accumulate);
    } else if (attrs.alpha != 1.0) {
      primitive_attr.set_output_scales(0, {static_cast<float>(attrs.alpha)});
    }
    if (fused && setup.Get<FusedMatMulAttrs>().activation == FusedActivation::kRelu) {
      dnnl::post_ops relu;
      relu.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
      primitive_attr.set_post_ops(relu);
    }
    for (int i = 0; i < static_cast<int>(chunks_.size()); ++i) {
      Chunk& chunk = chunks_[static_cast<std::size_t>(i)];
      const dnnl::memory::dim begin = ChunkBegin(split_m_ ? m : n, static_cast<int>(chunks_.size()), i);
      const dnnl::memory::dim end = ChunkBegin(split_m_ ? m : n, static_cast<int>(chunks_.size()), i + 1);
      const dnnl::memory::dim rows = split_m_ ? end - begin : m;
      const dnnl::memory::dim cols = split_m_ ? n : end - begin;
      // A (m, k): stored (m, k) row-major, or (k, m) when transposed.
      const dnnl::memory::dims a_strides = attrs.transpose_a ? dnnl::memory::dims{1, a_cols} : dnnl::memory::dims{a_cols, 1};
      const dnnl::memory::dims b_strides = attrs.transpose_b ? dnnl::memory::dims{1, b_cols} : dnnl::memory::dims{b_cols, 1};
      chunk.a_offset = split_m_ ? begin * (attrs.transpose_a ? 1 : a_cols) : 0;
      chunk.b_offset = split_m_ ? 0 : begin * (attrs.transpose_b ? b_cols : 1);
      chunk.c_offset = split_m_ ? begin * n : begin;
      chunk.a_desc = dnnl::memory::desc({rows, k}, type_, a_strides);
      chunk.b_desc = dnnl::memory::desc({k, cols}, type_, b_strides);
      chunk.c_desc = dnnl::memory::desc({rows, cols}, out_type_, dnnl::memory::dims{n, 1});
      // A fused bias is one row, broadcast over C's rows; a column chunk reads its slice of it.
      chunk.bias_offset = split_m_ ? 0 : begin;
      chunk.bias_desc = dnnl::memory::desc({1, cols}, fused ? DnnlDataType(setup.inputs[2].dtype) : out_type_,
                                           dnnl::memory::dims{cols, 1});
      const dnnl::matmul::primitive_desc desc(
          has_bias_ ? dnnl::matmul::desc(chunk.a_desc, chunk.b_desc, chunk.bias_desc, chunk.c_desc)
                    : dnnl::matmul::desc(chunk.a_desc, chunk.b_desc, chunk.c_desc),
          primitive_attr, CpuEngine());
      chunk.primitive = dnnl::matmul(desc);
      // Memories and the stream are made once; a call only points them at its registers.
      chunk.a = dnnl::memory(chunk.a_desc, CpuEngine(), DNNL_MEMORY_NONE);
      chunk.b = dnnl::memory(chunk.b_desc, CpuEngine(), DNNL_MEMORY_NONE);
      chunk.c = dnnl::memory(chunk.c_desc, CpuEngine(), DNNL_MEMORY_NONE);
      chunk.args = {{DNNL_ARG_SRC, chunk.a}, {DNNL_ARG_WEIGHTS, chunk.b}, {DNNL_ARG_DST, chunk.c}};
      if (has_bias_) {
        chunk.bias = dnnl::memory(chunk.bias_desc, CpuEngine(), DNNL_MEMORY_NONE);
        chunk.args.emplace(DNNL_ARG_BIAS, chunk.bias);
      }
      if (update_) {
        const dnnl::memory::desc scale_desc({1}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::x);
        chunk.args.emplace(DNNL_ARG_ATTR_OUTPUT_SCALES, dnnl::memory(scale_desc, CpuEngine(), &scale_));
      }
    }
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    auto* a = static_cast<std::byte*>(const_cast<void*>(inputs[0].data));
    auto* b = static_cast<std::byte*>(const_cast<void*>(inputs[1].data));
    // An update writes the variable (input 2) in place; the planner ordered its other readers first.
    auto* c = update_ ? static_cast<std::byte*>(const_cast<void*>(inputs[2].data)) : static_cast<std::byte*>(outputs[0].data);
    auto* bias = has_bias_ ? static_cast<std::byte*>(const_cast<void*>(inputs[2].data)) : nullptr;
    if (update_) scale_ = static_cast<float>(update_scale_ * static_cast<double>(inputs[3].As<float>()[0]));
    if (chunks_.empty()) {
      // An empty product: an update adds nothing to the variable; matmul_bias_act is act(bias) in each
      // row (f32 only, as the fused op); a matmul is zeros.
      if (update_ || output_bytes_ == 0) return;
      if (!has_bias_) {
        std::memset(c, 0, output_bytes_);
        return;
      }
      const std::size_t row_bytes = output_bytes_ / static_cast<std::size_t>(empty_rows_);
      for (dnnl::memory::dim row = 0; row < empty_rows_; ++row) std::memcpy(c + row * row_bytes, bias, row_bytes);
      if (empty_relu_) {
        float* values = reinterpret_cast<float*>(c);
        for (std::size_t i = 0; i < output_bytes_ / sizeof(float); ++i) values[i] = std::max(values[i], 0.f);
      }
      return;
    }
    ParallelFor(static_cast<int>(chunks_.size()), [&](int i) {
      Chunk& chunk = chunks_[static_cast<std::size_t>(i)];
      chunk.a.set_data_handle(a + chunk.a_offset * element_size_);
      chunk.b.set_data_handle(b + chunk.b_offset * element_size_);
      chunk.c.set_data_handle(c + chunk.c_offset * out_element_size_);
      if (has_bias_) chunk.bias.set_data_handle(bias + chunk.bias_offset * bias_element_size_);
      chunk.primitive.execute(chunk.stream, chunk.args);
      chunk.stream.wait();
    });
  }

 private:
  struct Chunk {
    dnnl::memory::desc a_desc, b_desc, c_desc;
    dnnl::memory::desc bias_desc;
    dnnl::memory::dim a_offset = 0, b_offset = 0, c_offset = 0, bias_offset = 0;  // in elements
    dnnl::matmul primitive;
    dnnl::stream stream{CpuEngine()};
    dnnl::memory a, b, c, bias;
    std::unordered_map<int, dnnl::memory> args;
  };

  // One chunk per pool thread for large products, else a single chunk. Chunks are blocks of C's
  // rows when there are at least 16 rows per thread, else of its columns (whole cache lines of C):
  // on the MLP and LeNet products (m = 100 or 512, n = 512 to 3136, k = 100 to 3136) row blocks
  // ran 5-20 % faster than column blocks, even with n > m.
  void SetChunks(dnnl::memory::dim m, dnnl::memory::dim n, dnnl::memory::dim k) {
    const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    int count = flops >= kParallelFlops ? IntraOpThreads() : 1;
    split_m_ = m >= 16 * static_cast<dnnl::memory::dim>(count) || m >= n;
    const dnnl::memory::dim split = split_m_ ? m : n;
    count = static_cast<int>(std::min<dnnl::memory::dim>(count, std::max<dnnl::memory::dim>(split / 16, 1)));
    chunks_.resize(static_cast<std::size_t>(std::max(count, 1)));
  }

  dnnl::memory::data_type type_{}, out_type_{};  // the operands', the result's
  bool has_bias_ = false;  // matmul_bias_act
  bool update_ = false;    // matmul_sgd_update
  double update_scale_ = 0;  // -gradient_scale * alpha; times the learning rate per call
  dnnl::memory::dim empty_rows_ = 0;  // an empty product's rows (k == 0)
  bool empty_relu_ = false;           // ... and whether matmul_bias_act's relu applies to its bias rows
  float scale_ = 0;          // this call's output scale, which every chunk reads
  bool split_m_ = true;
  std::size_t element_size_ = 4, out_element_size_ = 4, bias_element_size_ = 4;
  std::size_t output_bytes_ = 0;  // empty products only
  std::vector<Chunk> chunks_;
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

template <MatMulVariant kVariant> std::unique_ptr<Kernel> MakeMatMul(const KernelSetup& setup) {
  return std::make_unique<MatMulCpu>(setup, kVariant);
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"matmul", Device::Kind::kCpu, DType::kF32}, &MakeMatMul<MatMulVariant::kPlain>);
  RegisterKernel({"matmul_bias_act", Device::Kind::kCpu, DType::kF32}, &MakeMatMul<MatMulVariant::kBiasAct>);
  RegisterKernel({"matmul_sgd_update", Device::Kind::kCpu, DType::kF32}, &MakeMatMul<MatMulVariant::kSgdUpdate>);
  RegisterKernel({"matmul", Device::Kind::kCpu, DType::kF64}, &MakeKernel<MatMulF64Cpu>);
  // bf16 (mixed precision): oneDNN's AVX512_BF16 / AMX kernels, accumulating in f32; the result bf16,
  // or f32 where the planner fused the product with its cast to f32 (graph/fusion.cpp). Below AVX512,
  // where oneDNN has no bf16 primitives, the f32 kernel between conversions (kernels/cpu/widened.hpp).
  // The fused SGD update writes its variable in place and is made only by mixed precision, which picks
  // bf16 only where the CPU has it natively (MixedPrecisionDType).
  RegisterKernel({"matmul", Device::Kind::kCpu, DType::kBF16}, &NativeOrWidened<&MakeMatMul<MatMulVariant::kPlain>>);
  RegisterKernel({"matmul_bias_act", Device::Kind::kCpu, DType::kBF16},
                 &NativeOrWidened<&MakeMatMul<MatMulVariant::kBiasAct>>);
  RegisterKernel({"matmul_sgd_update", Device::Kind::kCpu, DType::kBF16}, &MakeMatMul<MatMulVariant::kSgdUpdate>);
}

}  // namespace
}  // namespace weir::internal
