// conv2d, its two gradients and the planner-fused conv2d_bias_act on CUDA, through cuDNN: descriptors,
// algorithm (a legacy-API algorithm or a graph-API engine, whichever cuDNN times faster) and workspace
// chosen once per kernel, i.e. per shape. cuDNN pads symmetrically; Weir's SAME pad puts the odd pixel after, so a convolution with unequal pads
// runs on a padded copy of x (forward, filter gradient) or computes the padded dx and crops it (data
// gradient), the copy in the kernel's scratch. conv2d_bias_act: the convolution, then the bias per
// channel and the relu in place (cudnnConvolutionBiasActivationForward takes relu only with one
// algorithm, and our bias add is one more pass either way).
#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "common/cuda_handles.cuh"
#include "kernels/attrs/fused_attrs.hpp"
#include "kernels/conv2d_geometry.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/cudnn_graph_convolution.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.hpp"

namespace weir::internal::cuda {

/// A cuDNN convolution of one pass on `g` (symmetric pads: ImageShift pads the input otherwise), its
/// descriptors and algorithm chosen once, on the current GPU (the fastest FP32-math algorithm of the
/// legacy API, or engine of the graph API, timed there; with `tensor_float_32`, f32 may use TF32
/// tensor cores); f32, f64 or f16 (on tensor cores, accumulating in f32). Run: forward
/// (a = x, b = weight) -> y; backward data (a = dy, b = weight) -> dx; backward filter (a = dy, b = x) ->
/// dweight; `out` is overwritten, `workspace` holds WorkspaceBytes() of device memory. An NHWC
/// convolution cuDNN has no algorithm for runs in NCHW on transposed copies (in the workspace).
class Convolution {
 public:
  Convolution(const Conv2DGeometry& g, Conv2DPass pass, DType dtype, bool tensor_float_32);
  ~Convolution();
  Convolution(const Convolution&) = delete;
  Convolution& operator=(const Convolution&) = delete;
  std::size_t WorkspaceBytes() const;
  void Run(void* stream, const void* a, const void* b, void* out, void* workspace) const;

 private:
  void RunCudnn(void* stream, const void* a, const void* b, void* out, void* workspace) const;
  struct Descriptors;  // cuDNN's, below
  std::unique_ptr<Descriptors> d_;
};
/// dst = src shifted (kernels/functors/conv2d.hpp: pads or crops images); float, double.

namespace {

int Dim(std::int64_t value, const char* what) { return LibraryDim(value, "conv2d", what); }

// The algorithm to run, from cuDNN's measured candidates (cudnnFind*: each algorithm timed on this
// GPU and shape): among those in FP32 (FMA) math, never TF32 (unless `tensor_float_32`), so f32 results
// agree with the CPU's to rounding (f64 runs in its own default math; f16 in any, on tensor cores
// where they are fastest), the fastest, or a deterministic one within 10% of it; else the fastest that
// runs at all; null when none does. PerfT: the forward, backward-data or backward-filter perf struct.
template <typename PerfT> const PerfT* Choose(const PerfT* results, int count, DType dtype, bool tensor_float_32) {
  const auto exact = [dtype, tensor_float_32](const PerfT& r) {
    return (dtype == DType::kF32 && tensor_float_32) || dtype == DType::kF16 || r.mathType == CUDNN_FMA_MATH ||
           (dtype == DType::kF64 && r.mathType == CUDNN_DEFAULT_MATH);
  };
  for (const bool need_exact : {true, false}) {
    const auto usable = [&](const PerfT& r) {
      return r.status == CUDNN_STATUS_SUCCESS && r.time >= 0 && (!need_exact || exact(r));
    };
    const PerfT* fastest = nullptr;
    for (int i = 0; i < count; ++i) {
      if (usable(results[i]) && (fastest == nullptr || results[i].time < fastest->time)) fastest = &results[i];
    }
    if (fastest == nullptr) continue;
    const PerfT* chosen = fastest;
    for (int i = 0; i < count && chosen->determinism != CUDNN_DETERMINISTIC; ++i) {
      const PerfT& r = results[i];
      if (usable(r) && r.determinism == CUDNN_DETERMINISTIC && r.time <= 1.1f * fastest->time) chosen = &r;
    }
    return chosen;
  }
  return nullptr;
}

// WEIR_CUDNN_TRACE: every candidate cuDNN timed (docs/cuda.md), to see why one was chosen.
template <typename PerfT> void TraceCandidates(const PerfT* results, int count, cudnnTensorFormat_t format) {
  if (std::getenv("WEIR_CUDNN_TRACE") == nullptr) return;
  for (int i = 0; i < count; ++i) {
    const PerfT& r = results[i];
    std::fprintf(stderr, "[conv2d]   %s algorithm %d: status %d, %.4f ms, math %d, %s, workspace %zu bytes\n",
                 format == CUDNN_TENSOR_NHWC ? "NHWC" : "NCHW", static_cast<int>(r.algo), static_cast<int>(r.status),
                 r.time, static_cast<int>(r.mathType),
                 r.determinism == CUDNN_DETERMINISTIC ? "deterministic" : "non-deterministic", r.memory);
  }
}

// The algorithm a pass runs: its enum value, math type and measured time.
struct Pick {
  int algorithm = 0;
  cudnnMathType_t math = CUDNN_FMA_MATH;
  float milliseconds = 0;
};

template <typename PerfT> std::optional<Pick> PickOf(const PerfT* chosen) {
  if (chosen == nullptr) return std::nullopt;
  return Pick{static_cast<int>(chosen->algo), chosen->mathType, chosen->time};
}

// What moving a convolution's operands to NCHW and its result back costs, estimated: every byte read
// and written once at 1.5 TB/s (a third of an H200's bandwidth: small transposes do not reach more),
// plus three launches of 3 us.
double TransposesMs(std::size_t bytes) { return 2.0 * static_cast<double>(bytes) / 1.5e9 + 3 * 3e-3; }

// cuDNN's algorithms are timed on a handle and stream of their own, one per GPU: the device's streams
// may be running a call's kernels or capturing a CUDA graph (on another thread), which the timing must
// neither join nor queue behind. Made on first use, kept for the process's life as the CUDA context is;
// the mutex serializes timings (a handle is used by one thread at a time).
struct Tuner {
  cudnnHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
};

std::mutex& TunerMutex() {
  static std::mutex mutex;
  return mutex;
}

// The current GPU's tuner; the caller holds TunerMutex().
const Tuner& CurrentTuner() {
  static std::map<int, Tuner> tuners;
  int device = 0;
  WEIR_CUDA_CHECK(cudaGetDevice(&device));
  Tuner& tuner = tuners[device];
  if (tuner.handle == nullptr) {
    WEIR_CUDA_CHECK(cudaStreamCreateWithFlags(&tuner.stream, cudaStreamNonBlocking));
    WEIR_CUDA_CHECK(cudnnCreate(&tuner.handle));
    WEIR_CUDA_CHECK(cudnnSetStream(tuner.handle, tuner.stream));
  }
  return tuner;
}

std::size_t Aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

// Moves `count` elements of src to dst along a gather plan (the existing copy launcher, moving bytes).
void MoveLayout(void* stream, std::size_t element, const BroadcastPlan& plan, std::int64_t count, const void* src, void* dst) {
  if (element == 8) {
    BroadcastCopy<std::uint64_t>(stream, plan, static_cast<const std::uint64_t*>(src), static_cast<std::uint64_t*>(dst), count);
  } else if (element == 2) {
    BroadcastCopy<std::uint16_t>(stream, plan, static_cast<const std::uint16_t*>(src), static_cast<std::uint16_t*>(dst), count);
  } else {
    BroadcastCopy<std::uint32_t>(stream, plan, static_cast<const std::uint32_t*>(src), static_cast<std::uint32_t*>(dst), count);
  }
}

// A pass's operands a and b and its result as the convolution's tensors: 0 x, 1 y, 2 weight (Run).
std::array<std::size_t, 3> Roles(Conv2DPass pass) {
  switch (pass) {
    case Conv2DPass::kForward: return {0, 2, 1};         // (x, weight) -> y
    case Conv2DPass::kBackwardData: return {1, 2, 0};    // (dy, weight) -> dx
    case Conv2DPass::kBackwardFilter: return {1, 0, 2};  // (dy, x) -> dweight
  }
  return {0, 2, 1};
}

template <typename T> __global__ void ShiftImagesKernel(ImageShift shift, const T* src, T* dst) {
  WEIR_FOR_EACH_ELEMENT(i, shift.DstCount()) {
    const std::int64_t from = shift.SourceOf(i);
    dst[i] = from < 0 ? T(0) : src[from];
  }
}

}  // namespace

struct Convolution::Descriptors {
  Conv2DPass pass = Conv2DPass::kForward;
  DType dtype = DType::kF32;  // of the data: f32, f64 or f16
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t weight = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t forward{};
  cudnnConvolutionBwdDataAlgo_t backward_data{};
  cudnnConvolutionBwdFilterAlgo_t backward_filter{};
  std::size_t workspace = 0;  // cuDNN's
  std::unique_ptr<CudnnGraphConvolution> graph;  // set: the pass runs through the graph API, not the descriptors above
  // An NHWC convolution run in NCHW: its operands moved to NCHW copies after cuDNN's workspace, its
  // result moved back. copies[0] x, [1] y, [2] weight.
  bool via_nchw = false;
  struct NchwCopy {
    BroadcastPlan to_nchw, from_nchw;
    std::int64_t count = 0;
    std::size_t offset = 0;  // in the workspace
  };
  std::array<NchwCopy, 3> copies;
  std::size_t workspace_bytes = 0;  // cuDNN's and the copies

  ~Descriptors() {
    if (x != nullptr) cudnnDestroyTensorDescriptor(x);
    if (y != nullptr) cudnnDestroyTensorDescriptor(y);
    if (weight != nullptr) cudnnDestroyFilterDescriptor(weight);
    if (conv != nullptr) cudnnDestroyConvolutionDescriptor(conv);
  }
};

Convolution::Convolution(const Conv2DGeometry& g, Conv2DPass pass, DType dtype, bool tensor_float_32)
    : d_(std::make_unique<Descriptors>()) {
  if (!g.SymmetricPads()) throw std::invalid_argument("[conv2d] cuDNN takes symmetric pads; pad the input first");
  d_->pass = pass;
  d_->dtype = dtype;
  const bool f64 = dtype == DType::kF64;
  const cudnnDataType_t type = f64 ? CUDNN_DATA_DOUBLE : dtype == DType::kF16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  const cudnnDataType_t compute = f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;  // f16 accumulates in f32
  Dim(g.XCount(), "x's element count");
  Dim(g.YCount(), "y's element count");
  WEIR_CUDA_CHECK(cudnnCreateTensorDescriptor(&d_->x));
  WEIR_CUDA_CHECK(cudnnCreateTensorDescriptor(&d_->y));
  WEIR_CUDA_CHECK(cudnnCreateFilterDescriptor(&d_->weight));
  WEIR_CUDA_CHECK(cudnnCreateConvolutionDescriptor(&d_->conv));
  const std::lock_guard<std::mutex> tuning(TunerMutex());
  cudnnHandle_t handle = CurrentTuner().handle;
  // Describes the convolution with its data and filter in `format`.
  const auto describe = [&](cudnnTensorFormat_t format) {
    WEIR_CUDA_CHECK(cudnnSetTensor4dDescriptor(d_->x, format, type, Dim(g.batch, "batch"), Dim(g.channels, "channels"),
                                               Dim(g.in_h, "height"), Dim(g.in_w, "width")));
    WEIR_CUDA_CHECK(cudnnSetTensor4dDescriptor(d_->y, format, type, Dim(g.batch, "batch"), Dim(g.filters, "filters"),
                                               Dim(g.out_h, "output height"), Dim(g.out_w, "output width")));
    // The filter's format follows the data's: (out, C/groups, kh, kw) for NCHW, (out, kh, kw, C/groups) for NHWC.
    WEIR_CUDA_CHECK(cudnnSetFilter4dDescriptor(d_->weight, type, format, Dim(g.filters, "filters"),
                                               Dim(g.channels / g.groups, "channels per group"),
                                               Dim(g.kernel_h, "kernel height"), Dim(g.kernel_w, "kernel width")));
    WEIR_CUDA_CHECK(cudnnSetConvolution2dDescriptor(d_->conv, Dim(g.pad_before[0], "pad"), Dim(g.pad_before[1], "pad"),
                                                    Dim(g.strides[0], "stride"), Dim(g.strides[1], "stride"),
                                                    Dim(g.dilations[0], "dilation"), Dim(g.dilations[1], "dilation"),
                                                    CUDNN_CROSS_CORRELATION, compute));
    WEIR_CUDA_CHECK(cudnnSetConvolutionGroupCount(d_->conv, Dim(g.groups, "groups")));
    const bool tensor_cores = dtype == DType::kF16 || (dtype == DType::kF32 && tensor_float_32);
    WEIR_CUDA_CHECK(cudnnSetConvolutionMathType(d_->conv, tensor_cores ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
  };
  // The algorithm cuDNN times fastest for the pass in `format` (Choose), if any.
  const auto find = [&](cudnnTensorFormat_t format) -> std::optional<Pick> {
    describe(format);
    int returned = 0;
    switch (pass) {
      case Conv2DPass::kForward: {
        cudnnConvolutionFwdAlgoPerf_t results[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        WEIR_CUDA_CHECK(cudnnFindConvolutionForwardAlgorithm(handle, d_->x, d_->weight, d_->conv, d_->y,
                                                             CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, results));
        TraceCandidates(results, returned, format);
        return PickOf(Choose(results, returned, dtype, tensor_float_32));
      }
      case Conv2DPass::kBackwardData: {
        cudnnConvolutionBwdDataAlgoPerf_t results[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        WEIR_CUDA_CHECK(cudnnFindConvolutionBackwardDataAlgorithm(handle, d_->weight, d_->y, d_->conv, d_->x,
                                                                  CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, results));
        TraceCandidates(results, returned, format);
        return PickOf(Choose(results, returned, dtype, tensor_float_32));
      }
      case Conv2DPass::kBackwardFilter: {
        cudnnConvolutionBwdFilterAlgoPerf_t results[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        WEIR_CUDA_CHECK(cudnnFindConvolutionBackwardFilterAlgorithm(handle, d_->x, d_->y, d_->conv, d_->weight,
                                                                    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned,
                                                                    results));
        TraceCandidates(results, returned, format);
        return PickOf(Choose(results, returned, dtype, tensor_float_32));
      }
    }
    return std::nullopt;
  };
  // An NHWC convolution may run in NCHW on transposed copies instead: where cuDNN has no NHWC algorithm
  // (f64), or where its NCHW one is faster by more than the transposes cost (f32 NHWC filter gradients
  // in FMA math were 10x slower than NCHW's on an H200). Each layout's fastest legacy algorithm and
  // graph-API engine (f32, f16) compete; the fastest, transposes counted, runs.
  const cudnnTensorFormat_t format = g.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  const std::optional<Pick> native = find(format);
  const std::optional<Pick> via_nchw = g.nhwc ? find(CUDNN_TENSOR_NCHW) : std::nullopt;
  // WEIR_CUDNN_GRAPH=1: the graph API's engines wherever cuDNN builds one (tests; comparisons), =0: never.
  const char* graph_env = std::getenv("WEIR_CUDNN_GRAPH");
  const std::string graph_mode = graph_env != nullptr ? graph_env : "";
  std::unique_ptr<CudnnGraphConvolution> graph_native, graph_nchw;
  if (!f64 && graph_mode != "0") {
    graph_native = CudnnGraphConvolution::Fastest(g, pass, g.nhwc, type, tensor_float_32, handle);
    if (g.nhwc) graph_nchw = CudnnGraphConvolution::Fastest(g, pass, false, type, tensor_float_32, handle);
  }
  const float graph_native_ms = graph_native ? graph_native->Milliseconds() : -1;
  const float graph_nchw_ms = graph_nchw ? graph_nchw->Milliseconds() : -1;
  const std::size_t element = SizeOf(dtype);
  const double transposes_ms = TransposesMs(static_cast<std::size_t>(g.XCount() + g.YCount() + g.WeightCount()) * element);
  struct Option {
    double milliseconds;
    bool nchw_copies;
    std::unique_ptr<CudnnGraphConvolution>* graph;  // null: the legacy algorithm
  };
  std::vector<Option> options;
  if (native) options.push_back({native->milliseconds, false, nullptr});
  if (via_nchw) options.push_back({via_nchw->milliseconds + transposes_ms, true, nullptr});
  if (graph_native) options.push_back({graph_native_ms, false, &graph_native});
  if (graph_nchw) options.push_back({graph_nchw_ms + transposes_ms, true, &graph_nchw});
  if (options.empty()) {
    const char* name = pass == Conv2DPass::kForward ? "forward" : pass == Conv2DPass::kBackwardData ? "data gradient" : "filter gradient";
    throw std::runtime_error("[conv2d] cuDNN " + std::to_string(cudnnGetVersion()) + " offers no algorithm for the " + name +
                             " pass (" + std::string(Name(dtype)) + ", " + (g.nhwc ? "NHWC, nor NCHW)" : "NCHW)"));
  }
  if (graph_mode == "1" && (graph_native || graph_nchw)) {
    std::erase_if(options, [](const Option& o) { return o.graph == nullptr; });
  }
  const Option& chosen = *std::min_element(options.begin(), options.end(), [](const Option& a, const Option& b) {
    return a.milliseconds < b.milliseconds;
  });
  d_->via_nchw = chosen.nchw_copies;
  if (chosen.graph != nullptr) {
    d_->graph = std::move(*chosen.graph);
    d_->workspace = d_->graph->WorkspaceBytes();
  } else {
    const Pick& pick = d_->via_nchw ? *via_nchw : *native;
    describe(d_->via_nchw ? CUDNN_TENSOR_NCHW : format);
    WEIR_CUDA_CHECK(cudnnSetConvolutionMathType(d_->conv, pick.math));
    switch (pass) {
      case Conv2DPass::kForward:
        d_->forward = static_cast<cudnnConvolutionFwdAlgo_t>(pick.algorithm);
        WEIR_CUDA_CHECK(cudnnGetConvolutionForwardWorkspaceSize(handle, d_->x, d_->weight, d_->conv, d_->y, d_->forward,
                                                                &d_->workspace));
        break;
      case Conv2DPass::kBackwardData:
        d_->backward_data = static_cast<cudnnConvolutionBwdDataAlgo_t>(pick.algorithm);
        WEIR_CUDA_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(handle, d_->weight, d_->y, d_->conv, d_->x,
                                                                     d_->backward_data, &d_->workspace));
        break;
      case Conv2DPass::kBackwardFilter:
        d_->backward_filter = static_cast<cudnnConvolutionBwdFilterAlgo_t>(pick.algorithm);
        WEIR_CUDA_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, d_->x, d_->y, d_->conv, d_->weight,
                                                                       d_->backward_filter, &d_->workspace));
        break;
    }
  }
  if (std::getenv("WEIR_CUDNN_TRACE") != nullptr) {  // docs/cuda.md: which algorithms the convolutions run
    const auto describe_pick = [](const std::optional<Pick>& p) {
      return p ? "algorithm " + std::to_string(p->algorithm) + " " + std::to_string(p->milliseconds) + " ms" : std::string("none");
    };
    const auto describe_graph = [](float milliseconds) {
      return milliseconds >= 0 ? std::to_string(milliseconds) + " ms" : std::string("none");
    };
    std::fprintf(stderr, "[conv2d] pass %d %s x %lldx%lldx%lldx%lld y %lldx%lld filters %lld k %lldx%lld: native %s, NCHW %s, graph native %s, graph NCHW %s (+%.4f ms), runs %s%s\n",
                 static_cast<int>(pass), std::string(Name(dtype)).c_str(), static_cast<long long>(g.batch), static_cast<long long>(g.channels),
                 static_cast<long long>(g.in_h), static_cast<long long>(g.in_w), static_cast<long long>(g.out_h),
                 static_cast<long long>(g.out_w), static_cast<long long>(g.filters), static_cast<long long>(g.kernel_h),
                 static_cast<long long>(g.kernel_w), describe_pick(native).c_str(), describe_pick(via_nchw).c_str(),
                 describe_graph(graph_native_ms).c_str(), describe_graph(graph_nchw_ms).c_str(), transposes_ms,
                 d_->via_nchw ? "NCHW" : g.nhwc ? "NHWC" : "NCHW", d_->graph ? " (graph)" : "");
  }
  d_->workspace_bytes = d_->workspace;
  if (!d_->via_nchw) return;
  const std::array<BatchedTranspose, 3> to_nchw = {BatchedTranspose{g.batch, g.in_h * g.in_w, g.channels},
                                                   BatchedTranspose{g.batch, g.out_h * g.out_w, g.filters},
                                                   BatchedTranspose{g.filters, g.kernel_h * g.kernel_w, g.channels / g.groups}};
  d_->workspace_bytes = Aligned(d_->workspace);
  for (std::size_t i = 0; i < to_nchw.size(); ++i) {
    d_->copies[i] = {to_nchw[i].Gather(), to_nchw[i].Inverse().Gather(), to_nchw[i].Count(), d_->workspace_bytes};
    d_->workspace_bytes += Aligned(static_cast<std::size_t>(to_nchw[i].Count()) * element);
  }
}

Convolution::~Convolution() = default;

std::size_t Convolution::WorkspaceBytes() const { return d_->workspace_bytes; }

void Convolution::Run(void* stream, const void* a, const void* b, void* out, void* workspace) const {
  if (!d_->via_nchw) return RunCudnn(stream, a, b, out, workspace);
  // NCHW copies of a and b, the convolution between them, its result moved back to out.
  const std::array<std::size_t, 3> roles = Roles(d_->pass);
  const Descriptors::NchwCopy &a_copy = d_->copies[roles[0]], &b_copy = d_->copies[roles[1]], &out_copy = d_->copies[roles[2]];
  const auto at = [workspace](const Descriptors::NchwCopy& c) { return static_cast<char*>(workspace) + c.offset; };
  const std::size_t element = SizeOf(d_->dtype);
  MoveLayout(stream, element, a_copy.to_nchw, a_copy.count, a, at(a_copy));
  MoveLayout(stream, element, b_copy.to_nchw, b_copy.count, b, at(b_copy));
  RunCudnn(stream, at(a_copy), at(b_copy), at(out_copy), workspace);
  MoveLayout(stream, element, out_copy.from_nchw, out_copy.count, at(out_copy), out);
}

void Convolution::RunCudnn(void* stream, const void* a, const void* b, void* out, void* workspace) const {
  cudnnHandle_t handle = CudnnHandleOf(static_cast<cudaStream_t>(stream));
  if (d_->graph) return d_->graph->Run(handle, a, b, out, workspace);
  // alpha and beta in the compute type: double for f64, float otherwise (f16 too). beta 0: out is overwritten.
  const double one_d = 1, zero_d = 0;
  const float one_f = 1, zero_f = 0;
  const bool f64 = d_->dtype == DType::kF64;
  const void* one = f64 ? static_cast<const void*>(&one_d) : &one_f;
  const void* zero = f64 ? static_cast<const void*>(&zero_d) : &zero_f;
  switch (d_->pass) {
    case Conv2DPass::kForward:  // (x, weight) -> y
      WEIR_CUDA_CHECK(cudnnConvolutionForward(handle, one, d_->x, a, d_->weight, b, d_->conv, d_->forward, workspace,
                                              d_->workspace, zero, d_->y, out));
      break;
    case Conv2DPass::kBackwardData:  // (dy, weight) -> dx
      WEIR_CUDA_CHECK(cudnnConvolutionBackwardData(handle, one, d_->weight, b, d_->y, a, d_->conv, d_->backward_data,
                                                   workspace, d_->workspace, zero, d_->x, out));
      break;
    case Conv2DPass::kBackwardFilter:  // (dy, x) -> dweight
      WEIR_CUDA_CHECK(cudnnConvolutionBackwardFilter(handle, one, d_->x, b, d_->y, a, d_->conv, d_->backward_filter,
                                                     workspace, d_->workspace, zero, d_->weight, out));
      break;
  }
}

template <typename T> void ShiftImages(void* stream, const ImageShift& shift, const T* src, T* dst) {
  const std::int64_t count = shift.DstCount();
  if (count == 0) return;
  ShiftImagesKernel<T><<<Blocks(count), kThreads, 0, Native(stream)>>>(shift, src, dst);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

}  // namespace weir::internal::cuda

namespace weir::internal {
namespace {

// kFused: conv2d_bias_act (a forward pass), inputs (x, weight, bias).
template <Conv2DPass kPass, typename T, bool kFused = false> class Conv2DCuda final : public Kernel {
 public:
  explicit Conv2DCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)),
        geometry_(kFused ? MakeConv2DGeometry(setup.Get<FusedConv2DAttrs>().conv, setup.inputs[0].shape,
                                              setup.inputs[1].shape, setup.outputs[0].shape)
                         : MakeConv2DGeometry(kPass, setup)),
        out_bytes_(setup.outputs[0].NumBytes()) {
    // An empty operand: y and dx are empty (or an empty sum, zero), dweight an empty sum.
    if (geometry_.XCount() == 0 || geometry_.YCount() == 0 || geometry_.WeightCount() == 0) return;
    relu_ = kFused && setup.Get<FusedConv2DAttrs>().activation == FusedActivation::kRelu;
    // The planner fuses residual sums on the CPU only (graph/fusion.hpp).
    if (kFused && setup.Get<FusedConv2DAttrs>().add_residual) {
      throw std::logic_error("[conv2d_bias_act] a residual sum has no CUDA kernel");
    }
    if (kFused) {
      const Shape& y = setup.outputs[0].shape;
      std::vector<std::int64_t> bias(4, 1);
      bias[geometry_.nhwc ? 3 : 1] = geometry_.filters;
      PlanBroadcast(y.Dims(), bias, y.Dims(), bias_plan_);
    }
    std::size_t padded_bytes = 0;
    Conv2DGeometry cudnn_geometry = geometry_;
    if (!geometry_.SymmetricPads()) {
      shift_ = PadShift(geometry_, kPass == Conv2DPass::kBackwardData);
      cudnn_geometry = Prepadded(geometry_);
      padded_bytes = static_cast<std::size_t>(cudnn_geometry.XCount()) * sizeof(T);
    }
    convolution_ = std::make_unique<cuda::Convolution>(cudnn_geometry, kPass, DTypeOf<T>(), setup.tensor_float_32);
    // Scratch: cuDNN's workspace, then the padded image (256-byte aligned, as cudaMalloc's own).
    workspace_bytes_ = (convolution_->WorkspaceBytes() + 255) / 256 * 256;
    scratch_.emplace(setup.device.index, workspace_bytes_ + padded_bytes);
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (!convolution_) {
      cuda::Zero(stream_, outputs[0].data, out_bytes_);
      return;
    }
    void* workspace = scratch_->template As<void>();
    T* padded = shift_ ? scratch_->template As<T>(workspace_bytes_) : nullptr;
    const T* a = inputs[0].As<T>();
    const T* b = inputs[1].As<T>();
    T* out = outputs[0].As<T>();
    switch (kPass) {
      case Conv2DPass::kForward:  // (x, weight) -> y, x padded first if need be
        if (shift_) cuda::ShiftImages<T>(stream_, *shift_, a, padded);
        convolution_->Run(stream_, shift_ ? padded : a, b, out, workspace);
        if (kFused) {
          const std::int64_t count = geometry_.YCount();
          cuda::BroadcastBinary<T>(stream_, cuda::Binary::kAdd, bias_plan_, out, inputs[2].As<T>(), out, count);
          if (relu_) cuda::Relu<T>(stream_, out, out, count);
        }
        break;
      case Conv2DPass::kBackwardData:  // (dy, weight) -> the padded dx, cropped
        convolution_->Run(stream_, a, b, shift_ ? padded : out, workspace);
        if (shift_) cuda::ShiftImages<T>(stream_, *shift_, padded, out);
        break;
      case Conv2DPass::kBackwardFilter:  // (dy, x) -> dweight, x padded first if need be
        if (shift_) cuda::ShiftImages<T>(stream_, *shift_, b, padded);
        convolution_->Run(stream_, a, shift_ ? padded : b, out, workspace);
        break;
    }
  }

 private:
  void* stream_;
  Conv2DGeometry geometry_;
  std::size_t out_bytes_;
  bool relu_ = false;
  BroadcastPlan bias_plan_;               // conv2d_bias_act: the bias along y's channel axis
  std::optional<ImageShift> shift_;       // unequal pads: x into the padded image, or the padded dx out
  std::unique_ptr<cuda::Convolution> convolution_;  // null for an empty operand
  std::size_t workspace_bytes_ = 0;
  std::optional<DeviceScratch> scratch_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"conv2d", Device::Kind::kCuda, DType::kF32}, &MakeKernel<Conv2DCuda<Conv2DPass::kForward, float>>);
  RegisterKernel({"conv2d", Device::Kind::kCuda, DType::kF64}, &MakeKernel<Conv2DCuda<Conv2DPass::kForward, double>>);
  RegisterKernel({"conv2d_bias_act", Device::Kind::kCuda, DType::kF32},
                 &MakeKernel<Conv2DCuda<Conv2DPass::kForward, float, true>>);
  RegisterKernel({"conv2d_grad_data", Device::Kind::kCuda, DType::kF32},
                 &MakeKernel<Conv2DCuda<Conv2DPass::kBackwardData, float>>);
  RegisterKernel({"conv2d_grad_data", Device::Kind::kCuda, DType::kF64},
                 &MakeKernel<Conv2DCuda<Conv2DPass::kBackwardData, double>>);
  RegisterKernel({"conv2d_grad_filter", Device::Kind::kCuda, DType::kF32},
                 &MakeKernel<Conv2DCuda<Conv2DPass::kBackwardFilter, float>>);
  RegisterKernel({"conv2d_grad_filter", Device::Kind::kCuda, DType::kF64},
                 &MakeKernel<Conv2DCuda<Conv2DPass::kBackwardFilter, double>>);
  // Mixed precision's convolutions: f16 operands and result on tensor cores, accumulating in f32.
  RegisterKernel({"conv2d", Device::Kind::kCuda, DType::kF16}, &MakeKernel<Conv2DCuda<Conv2DPass::kForward, float16>>);
  RegisterKernel({"conv2d_grad_data", Device::Kind::kCuda, DType::kF16},
                 &MakeKernel<Conv2DCuda<Conv2DPass::kBackwardData, float16>>);
  RegisterKernel({"conv2d_grad_filter", Device::Kind::kCuda, DType::kF16},
                 &MakeKernel<Conv2DCuda<Conv2DPass::kBackwardFilter, float16>>);
}

}  // namespace
}  // namespace weir::internal
