// matmul on CUDA: one cuBLASLt matmul (LtGemm) whose algorithm is timed once per shape among cuBLASLt's
// heuristic candidates, and the planner-fused matmul_bias_act in one cuBLASLt matmul whose epilogue adds
// the bias and applies the relu; where cuBLASLt offers no algorithm for the shapes (or for double), the
// cuBLAS GEMM, then the bias and the relu in place (two more elementwise launches).
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <fmt/format.h>

#include "common/cuda_handles.cuh"
#include "kernels/attrs/fused_attrs.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/event_timing.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal::cuda {

/// Row-major C (m x n) = alpha op(A) op(B) [+ bias (one row of n, added to every row) [then relu]] in one
/// cuBLASLt matmul (the bias and relu in its BIAS or RELU_BIAS epilogue). A is (m x k) or, transposed,
/// (k x m); B is (k x n) or (n x k). The descriptors are made once for the shapes, and the algorithm
/// is the fastest of cuBLASLt's heuristic candidates (up to kLtCandidates), each timed on scratch
/// operands when the first kernel of its configuration is made (a process-wide cache: BERT's 12
/// layers time each shape once). WEIR_CUBLASLT_TUNE=0 takes the heuristics' first instead, and
/// WEIR_CUBLASLT_TRACE=1 prints each timed candidate. Ready() is false when cuBLASLt offers none
/// (the kernel then runs the cuBLAS GEMM). float (FP32, or TF32 tensor cores where allowed), and
/// float16 / bfloat16 (tensor cores, float accumulation), all without an epilogue or with the bias.
class LtGemm {
 public:
  enum class Epilogue : std::uint8_t { kNone, kBias, kReluBias };
  LtGemm(void* stream, int device, DType dtype, bool transpose_a, bool transpose_b, std::int64_t m, std::int64_t n,
         std::int64_t k, double alpha, Epilogue epilogue, bool tensor_float_32);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;
  bool Ready() const;
  /// `bias`: the epilogue's (null without one).
  void Run(void* stream, const void* a, const void* b, const void* bias, void* c);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Row-major C (m x n) = alpha op(A) op(B) through cuBLAS on the stream's handle; A is (m x k) or,
/// transposed, (k x m); B is (k x n) or (n x k). float, double, and float16 / bfloat16 (tensor cores,
/// accumulating in float).
template <typename T>
void Gemm(void* stream, bool transpose_a, bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
          const T* a, const T* b, T* c);

/// Row-major C += (factor · *lr) op(A) op(B): the scale read on the device (cuBLAS in device pointer
/// mode, `scalars` two T of device scratch for alpha and beta). float.
template <typename T>
void GemmAccumulate(void* stream, bool transpose_a, bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k,
                    const float* lr, double factor, const T* a, const T* b, T* c, T* scalars);

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

// Mixed precision's products: 16-bit operands and result, float accumulation and scalars.
cublasStatus_t GemmCall(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                        const float* alpha, const float16* a, int lda, const float16* b, int ldb, const float* beta,
                        float16* c, int ldc) {
  return cublasGemmEx(handle, ta, tb, m, n, k, alpha, a, CUDA_R_16F, lda, b, CUDA_R_16F, ldb, beta, c, CUDA_R_16F, ldc,
                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}
cublasStatus_t GemmCall(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                        const float* alpha, const bfloat16* a, int lda, const bfloat16* b, int ldb, const float* beta,
                        bfloat16* c, int ldc) {
  return cublasGemmEx(handle, ta, tb, m, n, k, alpha, a, CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb, beta, c, CUDA_R_16BF,
                      ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

// The type of alpha and beta: float for the 16-bit types.
template <typename T>
using GemmScalar = std::conditional_t<std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>, float, T>;

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

template <typename T>
void Gemm(void* stream, bool transpose_a, bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
          const T* a, const T* b, T* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: cuBLAS takes no leading dimension of 0, so C is zeroed here
    WEIR_CUDA_CHECK(cudaMemsetAsync(c, 0, static_cast<std::size_t>(m * n) * sizeof(T), static_cast<cudaStream_t>(stream)));
    return;
  }
  cublasHandle_t handle = CublasHandleOf(static_cast<cudaStream_t>(stream));
  // Row-major leading dimensions: A is (m x k) or (k x m), B is (k x n) or (n x k).
  const int lda = Dim(transpose_a ? m : k, "a's row length");
  const int ldb = Dim(transpose_b ? k : n, "b's row length");
  const GemmScalar<T> scale = static_cast<GemmScalar<T>>(alpha);
  const GemmScalar<T> zero = 0;
  WEIR_CUDA_CHECK(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST));
  WEIR_CUDA_CHECK(GemmCall(handle, transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                           Dim(n, "n"), Dim(m, "m"), Dim(k, "k"), &scale, b, ldb, a, lda, &zero, c, Dim(n, "n")));
}

}  // namespace weir::internal::cuda

namespace weir::internal::cuda {

// cuBLASLt sees the row-major C = op(A) op(B) + bias as the column-major C^T (n x m) = op(B)^T op(A)^T
// + bias, whose bias is one value per row of C^T (n of them) added to each of its m columns: exactly
// cuBLASLt's BIAS epilogue.
struct LtGemm::Impl {
  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t b_layout = nullptr, a_layout = nullptr, c_layout = nullptr;
  cublasLtMatmulAlgo_t algorithm{};
  bool ready = false;
  float alpha = 1;

  ~Impl() {
    if (c_layout != nullptr) cublasLtMatrixLayoutDestroy(c_layout);
    if (a_layout != nullptr) cublasLtMatrixLayoutDestroy(a_layout);
    if (b_layout != nullptr) cublasLtMatrixLayoutDestroy(b_layout);
    if (operation != nullptr) cublasLtMatmulDescDestroy(operation);
  }
};

namespace {

constexpr int kLtCandidates = 8;

bool EnvOn(const char* name, bool otherwise) {
  const char* text = std::getenv(name);
  return text == nullptr || *text == '\0' ? otherwise : std::string(text) != "0";
}

// The chosen algorithm of each configuration timed so far (device, dtype, compute, epilogue, shapes).
struct LtChoices {
  std::mutex mutex;
  std::map<std::string, cublasLtMatmulAlgo_t> chosen;
};
LtChoices& Choices() {
  static LtChoices choices;
  return choices;
}

cudaDataType_t LtType(DType dtype) {
  return dtype == DType::kF16 ? CUDA_R_16F : dtype == DType::kBF16 ? CUDA_R_16BF : CUDA_R_32F;
}

}  // namespace

LtGemm::LtGemm(void* stream, int device, DType dtype, bool transpose_a, bool transpose_b, std::int64_t m, std::int64_t n,
               std::int64_t k, double alpha, Epilogue epilogue, bool tensor_float_32)
    : impl_(std::make_unique<Impl>()) {
  if (m == 0 || n == 0 || k == 0) return;  // nothing for cuBLASLt to multiply: the kernel's own path
  const cudaStream_t native = static_cast<cudaStream_t>(stream);
  const CublasLtOf lt(native);
  impl_->alpha = static_cast<float>(alpha);
  const bool tf32 = dtype == DType::kF32 && tensor_float_32;
  const cudaDataType_t type = LtType(dtype);
  WEIR_CUDA_CHECK(cublasLtMatmulDescCreate(&impl_->operation, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                                           CUDA_R_32F));
  const cublasOperation_t op_b = transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;  // cuBLASLt's first operand
  const cublasOperation_t op_a = transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  WEIR_CUDA_CHECK(cublasLtMatmulDescSetAttribute(impl_->operation, CUBLASLT_MATMUL_DESC_TRANSA, &op_b, sizeof(op_b)));
  WEIR_CUDA_CHECK(cublasLtMatmulDescSetAttribute(impl_->operation, CUBLASLT_MATMUL_DESC_TRANSB, &op_a, sizeof(op_a)));
  const cublasLtEpilogue_t lt_epilogue = epilogue == Epilogue::kReluBias ? CUBLASLT_EPILOGUE_RELU_BIAS
                                         : epilogue == Epilogue::kBias   ? CUBLASLT_EPILOGUE_BIAS
                                                                         : CUBLASLT_EPILOGUE_DEFAULT;
  WEIR_CUDA_CHECK(cublasLtMatmulDescSetAttribute(impl_->operation, CUBLASLT_MATMUL_DESC_EPILOGUE, &lt_epilogue,
                                                 sizeof(lt_epilogue)));
  if (epilogue != Epilogue::kNone) {
    WEIR_CUDA_CHECK(cublasLtMatmulDescSetAttribute(impl_->operation, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &type, sizeof(type)));
  }
  // Column-major layouts of the row-major memory: B is (k x n) row-major, so (n x k) column-major with
  // leading dimension n, or (k x n) with leading dimension k when transposed; A likewise; C^T is n x m.
  const std::uint64_t rows_n = static_cast<std::uint64_t>(n), rows_m = static_cast<std::uint64_t>(m),
                      rows_k = static_cast<std::uint64_t>(k);
  WEIR_CUDA_CHECK(cublasLtMatrixLayoutCreate(&impl_->b_layout, type, transpose_b ? rows_k : rows_n,
                                             transpose_b ? rows_n : rows_k, static_cast<std::int64_t>(transpose_b ? rows_k : rows_n)));
  WEIR_CUDA_CHECK(cublasLtMatrixLayoutCreate(&impl_->a_layout, type, transpose_a ? rows_m : rows_k,
                                             transpose_a ? rows_k : rows_m, static_cast<std::int64_t>(transpose_a ? rows_m : rows_k)));
  WEIR_CUDA_CHECK(cublasLtMatrixLayoutCreate(&impl_->c_layout, type, rows_n, rows_m, static_cast<std::int64_t>(rows_n)));

  const std::string key = fmt::format("{} {} {} {} {}{} {}x{}x{}", device, static_cast<int>(dtype), tf32,
                                      static_cast<int>(epilogue), transpose_a, transpose_b, m, n, k);
  const bool tune = EnvOn("WEIR_CUBLASLT_TUNE", true);
  {
    std::lock_guard lock(Choices().mutex);
    if (const auto it = Choices().chosen.find(key); tune && it != Choices().chosen.end()) {
      impl_->algorithm = it->second;
      impl_->ready = true;
      return;
    }
  }
  cublasLtMatmulPreference_t preference = nullptr;
  WEIR_CUDA_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  // Register slots are 16-byte aligned at least; the algorithm must not assume more.
  const std::uint32_t alignment = 16;
  cublasLtMatmulHeuristicResult_t results[kLtCandidates]{};
  int found = 0;
  cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                               &lt.workspace_bytes, sizeof(lt.workspace_bytes));
  for (auto attribute : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                         CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    if (status == CUBLAS_STATUS_SUCCESS) {
      status = cublasLtMatmulPreferenceSetAttribute(preference, attribute, &alignment, sizeof(alignment));
    }
  }
  if (status == CUBLAS_STATUS_SUCCESS) {
    status = cublasLtMatmulAlgoGetHeuristic(lt.handle, impl_->operation, impl_->b_layout, impl_->a_layout,
                                            impl_->c_layout, impl_->c_layout, preference, tune ? kLtCandidates : 1,
                                            results, &found);
  }
  cublasLtMatmulPreferenceDestroy(preference);
  // No algorithm for these shapes (CUBLAS_STATUS_NOT_SUPPORTED, or none found): the kernel's own path.
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || found == 0) return;
  WEIR_CUDA_CHECK(status);
  int best = 0;
  if (found > 1) {
    // Scratch operands of the real shapes, zeroed (the times do not depend on the values).
    const std::size_t element = dtype == DType::kF32 ? 4 : 2;
    const auto bytes = [&](std::int64_t elements) { return element * static_cast<std::size_t>(elements); };
    const DeviceScratch a(device, bytes(m * k)), b(device, bytes(k * n)), c(device, bytes(m * n)), bias(device, bytes(n));
    for (const auto& [scratch, size] : {std::pair{&a, bytes(m * k)}, std::pair{&b, bytes(k * n)}, std::pair{&c, bytes(m * n)},
                                        std::pair{&bias, bytes(n)}}) {
      WEIR_CUDA_CHECK(cudaMemsetAsync(scratch->As<std::byte>(), 0, size, native));
    }
    if (epilogue != Epilogue::kNone) {
      const void* bias_pointer = bias.As<std::byte>();
      WEIR_CUDA_CHECK(cublasLtMatmulDescSetAttribute(impl_->operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_pointer,
                                                     sizeof(bias_pointer)));
    }
    const bool trace = EnvOn("WEIR_CUBLASLT_TRACE", false);
    float best_ms = -1;
    for (int i = 0; i < found; ++i) {
      const float zero = 0;
      const float ms = MeanMilliseconds(native, [&] {
        return cublasLtMatmul(lt.handle, impl_->operation, &impl_->alpha, b.As<std::byte>(), impl_->b_layout,
                              a.As<std::byte>(), impl_->a_layout, &zero, c.As<std::byte>(), impl_->c_layout,
                              c.As<std::byte>(), impl_->c_layout, &results[i].algo, lt.workspace, lt.workspace_bytes,
                              native) == CUBLAS_STATUS_SUCCESS;
      });
      if (trace) std::fprintf(stderr, "[cublaslt] %s candidate %d: %.4f ms\n", key.c_str(), i, ms);
      if (ms >= 0 && (best_ms < 0 || ms < best_ms)) {
        best_ms = ms;
        best = i;
      }
    }
    WEIR_CUDA_CHECK(cudaStreamSynchronize(native));  // the scratch goes now
    if (trace) std::fprintf(stderr, "[cublaslt] %s: candidate %d of %d\n", key.c_str(), best, found);
  }
  impl_->algorithm = results[best].algo;
  impl_->ready = true;
  if (tune) {
    std::lock_guard lock(Choices().mutex);
    Choices().chosen.emplace(key, impl_->algorithm);
  }
}

LtGemm::~LtGemm() = default;

bool LtGemm::Ready() const { return impl_->ready; }

void LtGemm::Run(void* stream, const void* a, const void* b, const void* bias, void* c) {
  const cudaStream_t native = static_cast<cudaStream_t>(stream);
  const CublasLtOf lt(native);
  // The bias's address is the slot's of this Run: set before each matmul (host-side, no device work).
  if (bias != nullptr) {
    WEIR_CUDA_CHECK(cublasLtMatmulDescSetAttribute(impl_->operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  }
  const float zero = 0;
  WEIR_CUDA_CHECK(cublasLtMatmul(lt.handle, impl_->operation, &impl_->alpha, b, impl_->b_layout, a, impl_->a_layout, &zero,
                                 c, impl_->c_layout, c, impl_->c_layout, &impl_->algorithm, lt.workspace,
                                 lt.workspace_bytes, native));
}

}  // namespace weir::internal::cuda

namespace weir::internal {
namespace {

// kFused: matmul_bias_act, inputs (a, b, bias).
template <typename T, bool kFused = false> class MatMulCuda final : public Kernel {
 public:
  explicit MatMulCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), attrs_(kFused ? setup.Get<FusedMatMulAttrs>().matmul : setup.Get<MatMulAttrs>()),
        relu_(kFused && setup.Get<FusedMatMulAttrs>().activation == FusedActivation::kRelu) {
    if constexpr (std::is_same_v<T, float>) UseTensorFloat32(cuda::Native(stream_), setup.tensor_float_32);
    const Shape& a = setup.inputs[0].shape;
    const Shape& b = setup.inputs[1].shape;
    m_ = attrs_.transpose_a ? a[1] : a[0];
    k_ = attrs_.transpose_a ? a[0] : a[1];
    n_ = attrs_.transpose_b ? b[0] : b[1];
    if (kFused) PlanBroadcast({m_, n_}, {n_}, {m_, n_}, bias_rows_);
    if constexpr (!std::is_same_v<T, double>) {
      using Epilogue = cuda::LtGemm::Epilogue;
      lt_.emplace(stream_, setup.device.index, setup.inputs[0].dtype, attrs_.transpose_a, attrs_.transpose_b, m_, n_, k_,
                  attrs_.alpha, !kFused ? Epilogue::kNone : relu_ ? Epilogue::kReluBias : Epilogue::kBias,
                  setup.tensor_float_32);
      if (!lt_->Ready()) lt_.reset();
    }
  }
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    T* c = outputs[0].As<T>();
    if (lt_) {
      lt_->Run(stream_, inputs[0].As<T>(), inputs[1].As<T>(), kFused ? inputs[2].As<T>() : nullptr, c);
      return;
    }
    cuda::Gemm<T>(stream_, attrs_.transpose_a, attrs_.transpose_b, m_, n_, k_, attrs_.alpha, inputs[0].As<T>(),
                  inputs[1].As<T>(), c);
    if constexpr (kFused) {  // (float and double only: the planner fuses f32 products)
      cuda::BroadcastBinary<T>(stream_, cuda::Binary::kAdd, bias_rows_, c, inputs[2].As<T>(), c, m_ * n_);
      if (relu_) cuda::Relu<T>(stream_, c, c, m_ * n_);
    }
  }

 private:
  void* stream_;
  MatMulAttrs attrs_;
  bool relu_;
  std::int64_t m_ = 0, n_ = 0, k_ = 0;
  BroadcastPlan bias_rows_;  // the bias row over C's rows
  std::optional<cuda::LtGemm> lt_;  // the product (and bias, relu) in one cuBLASLt call, where it has an algorithm
};

// matmul_sgd_update: (a, b, variable, lr) -> variable += (−lr · gradient_scale · alpha) op(a) op(b),
// in place, the gradient never a tensor; the scale is formed on the device from the learning rate.
class MatMulSgdUpdateCuda final : public Kernel {
 public:
  explicit MatMulSgdUpdateCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), attrs_(setup.Get<FusedMatMulSgdAttrs>().matmul),
        factor_(-setup.Get<FusedMatMulSgdAttrs>().gradient_scale * attrs_.alpha), scratch_(setup.device.index, 2 * sizeof(float)) {
    UseTensorFloat32(cuda::Native(stream_), setup.tensor_float_32);
    const Shape& a = setup.inputs[0].shape;
    const Shape& b = setup.inputs[1].shape;
    m_ = attrs_.transpose_a ? a[1] : a[0];
    k_ = attrs_.transpose_a ? a[0] : a[1];
    n_ = attrs_.transpose_b ? b[0] : b[1];
  }
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    cuda::GemmAccumulate<float>(stream_, attrs_.transpose_a, attrs_.transpose_b, m_, n_, k_, inputs[3].As<float>(), factor_,
                                inputs[0].As<float>(), inputs[1].As<float>(), MutableOf<float>(inputs[2]),
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
  RegisterKernel({"matmul", Device::Kind::kCuda, DType::kF16}, &MakeKernel<MatMulCuda<float16>>);
  RegisterKernel({"matmul", Device::Kind::kCuda, DType::kBF16}, &MakeKernel<MatMulCuda<bfloat16>>);
  RegisterKernel({"matmul_bias_act", Device::Kind::kCuda, DType::kF32}, &MakeKernel<MatMulCuda<float, true>>);
}

}  // namespace
}  // namespace weir::internal
