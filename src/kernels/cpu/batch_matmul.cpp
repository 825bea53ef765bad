// batch_matmul on the CPU: one BLAS GEMM (OpenBLAS, row-major, the transposes as flags) per batch
// index, the batches split over the intra-op pool; bf16 (mixed precision) through oneDNN's batched
// matmul, one primitive per chunk of batches, writing bf16 or, fused with its cast, f32.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include <cblas.h>
#include <dnnl.hpp>

#include "common/intra_op_pool.hpp"
#include "kernels/batch_product.hpp"
#include "kernels/cpu/widened.hpp"
#include "kernels/cpu/dnnl_engine.hpp"
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

// Products of at least this many FLOPs split their batches over the intra-op pool.
constexpr double kParallelFlops = 4e6;

class BatchMatMulDnnl final : public Kernel {
 public:
  explicit BatchMatMulDnnl(const KernelSetup& setup)
      : product_(BatchProductOf(setup.inputs[0].shape, setup.inputs[1].shape, setup.Get<MatMulAttrs>())),
        in_size_(SizeOf(setup.inputs[0].dtype)),
        out_size_(SizeOf(setup.outputs[0].dtype)),
        out_bytes_(setup.outputs[0].NumBytes()) {
    const MatMulAttrs& attrs = setup.Get<MatMulAttrs>();
    const dnnl::memory::dim m = product_.m, n = product_.n, k = product_.k;
    if (product_.batches * m * n == 0 || k == 0) return;  // nothing, or an empty sum: zeros (Run)
    const double flops = 2.0 * static_cast<double>(product_.batches * m * n * k);
    const int count = static_cast<int>(std::min<std::int64_t>(product_.batches, flops >= kParallelFlops ? IntraOpThreads() : 1));
    dnnl::primitive_attr primitive_attr;
    if (attrs.alpha != 1.0) primitive_attr.set_output_scales(0, {static_cast<float>(attrs.alpha)});
    const auto in_type = DnnlDataType(setup.inputs[0].dtype), out_type = DnnlDataType(setup.outputs[0].dtype);
    for (int i = 0; i < count; ++i) {
      Chunk chunk;
      chunk.first = ChunkBegin(product_.batches, count, i);
      const dnnl::memory::dim batches = ChunkBegin(product_.batches, count, i + 1) - chunk.first;
      // Each batch's operands in their stored layout: A (m, k) or (k, m), B (k, n) or (n, k).
      const dnnl::memory::desc a({batches, m, k}, in_type,
                                 attrs.transpose_a ? dnnl::memory::dims{m * k, 1, m} : dnnl::memory::dims{m * k, k, 1});
      const dnnl::memory::desc b({batches, k, n}, in_type,
                                 attrs.transpose_b ? dnnl::memory::dims{k * n, 1, k} : dnnl::memory::dims{k * n, n, 1});
      const dnnl::memory::desc c({batches, m, n}, out_type, dnnl::memory::dims{m * n, n, 1});
      chunk.primitive = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), primitive_attr, CpuEngine()));
      chunk.a = dnnl::memory(a, CpuEngine(), DNNL_MEMORY_NONE);
      chunk.b = dnnl::memory(b, CpuEngine(), DNNL_MEMORY_NONE);
      chunk.c = dnnl::memory(c, CpuEngine(), DNNL_MEMORY_NONE);
      chunk.args = {{DNNL_ARG_SRC, chunk.a}, {DNNL_ARG_WEIGHTS, chunk.b}, {DNNL_ARG_DST, chunk.c}};
      chunks_.push_back(std::move(chunk));
    }
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (chunks_.empty()) {
      if (out_bytes_ > 0) std::memset(outputs[0].data, 0, out_bytes_);
      return;
    }
    auto* a = static_cast<std::byte*>(const_cast<void*>(inputs[0].data));
    auto* b = static_cast<std::byte*>(const_cast<void*>(inputs[1].data));
    auto* c = static_cast<std::byte*>(outputs[0].data);
    const std::int64_t m = product_.m, n = product_.n, k = product_.k;
    ParallelFor(static_cast<int>(chunks_.size()), [&](int i) {
      Chunk& chunk = chunks_[static_cast<std::size_t>(i)];
      chunk.a.set_data_handle(a + chunk.first * m * k * static_cast<std::int64_t>(in_size_));
      chunk.b.set_data_handle(b + chunk.first * k * n * static_cast<std::int64_t>(in_size_));
      chunk.c.set_data_handle(c + chunk.first * m * n * static_cast<std::int64_t>(out_size_));
      chunk.primitive.execute(chunk.stream, chunk.args);
      chunk.stream.wait();
    });
  }

 private:
  struct Chunk {
    std::int64_t first = 0;  // its first batch index
    dnnl::matmul primitive;
    dnnl::stream stream{CpuEngine()};
    dnnl::memory a, b, c;
    std::unordered_map<int, dnnl::memory> args;  // made once; a call only points the memories at its registers
  };
  BatchProduct product_;
  std::size_t in_size_, out_size_, out_bytes_;
  std::vector<Chunk> chunks_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"batch_matmul", Device::Kind::kCpu, DType::kF32}, &MakeKernel<BatchMatMulCpu<float>>);
  RegisterKernel({"batch_matmul", Device::Kind::kCpu, DType::kF64}, &MakeKernel<BatchMatMulCpu<double>>);
  RegisterKernel({"batch_matmul", Device::Kind::kCpu, DType::kBF16}, &NativeOrWidened<&MakeKernel<BatchMatMulDnnl>>);
}

}  // namespace
}  // namespace weir::internal
