// A convolution pass through cuDNN's backend (graph) API: its tensors, the operation, the graph of
// that one operation, the engine configurations cuDNN's heuristics rank for it, and an execution plan
// per configuration, each finalized and timed; the fastest in strict FP32 math is kept.
#include "kernels/cuda/cudnn_graph_convolution.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/cuda_check.cuh"
#include "kernels/cuda/event_timing.hpp"

namespace weir::internal::cuda {
namespace {

// Thrown while building a graph or plan that cuDNN refuses: the candidate (or the graph API for this
// pass) is skipped, never the convolution.
struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void Require(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS) throw Refused(std::string(what) + ": " + cudnnGetErrorString(status));
}

// A backend descriptor, destroyed with its owner.
class Descriptor {
 public:
  explicit Descriptor(cudnnBackendDescriptorType_t type) {
    Require(cudnnBackendCreateDescriptor(type, &descriptor_), "cudnnBackendCreateDescriptor");
  }
  ~Descriptor() {
    if (descriptor_ != nullptr) cudnnBackendDestroyDescriptor(descriptor_);
  }
  Descriptor(Descriptor&& other) noexcept : descriptor_(std::exchange(other.descriptor_, nullptr)) {}
  Descriptor& operator=(Descriptor&& other) noexcept {
    std::swap(descriptor_, other.descriptor_);
    return *this;
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return descriptor_; }
  void Set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, std::int64_t count, const void* values) {
    Require(cudnnBackendSetAttribute(descriptor_, name, type, count, values), "cudnnBackendSetAttribute");
  }
  void Set(cudnnBackendAttributeName_t name, const Descriptor& value) {
    const cudnnBackendDescriptor_t raw = value.get();
    Set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
  }
  // The number of elements cuDNN wrote into `values` (at most `capacity`).
  std::int64_t Get(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, std::int64_t capacity,
                   void* values) const {
    std::int64_t count = 0;
    Require(cudnnBackendGetAttribute(descriptor_, name, type, capacity, &count, values), "cudnnBackendGetAttribute");
    return count;
  }
  void Finalize() { Require(cudnnBackendFinalize(descriptor_), "cudnnBackendFinalize"); }

 private:
  cudnnBackendDescriptor_t descriptor_ = nullptr;
};

// The tensors' ids in the graph and its variant packs.
constexpr std::int64_t kX = 1, kY = 2, kWeight = 3;

// Elements of (n, c, h, w) in NCHW or NHWC order: the strides of each dimension.
std::array<std::int64_t, 4> Strides(const std::array<std::int64_t, 4>& dims, bool nhwc) {
  const auto [n, c, h, w] = dims;
  (void)n;
  if (nhwc) return {h * w * c, 1, w * c, c};
  return {c * h * w, h * w, w, 1};
}

Descriptor Tensor(std::int64_t id, const std::array<std::int64_t, 4>& dims, bool nhwc, cudnnDataType_t type,
                  std::int64_t alignment) {
  Descriptor tensor(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const std::array<std::int64_t, 4> strides = Strides(dims, nhwc);
  tensor.Set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  tensor.Set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
  tensor.Set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
  tensor.Set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id);
  tensor.Set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  tensor.Finalize();
  return tensor;
}

// The operation graph of one pass, with every descriptor it was made from (kept alive beside it).
struct Graph {
  std::vector<Descriptor> parts;
  Descriptor graph{CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR};
};

std::unique_ptr<Graph> BuildGraph(const Conv2DGeometry& g, Conv2DPass pass, bool nhwc, cudnnDataType_t type,
                                  std::int64_t alignment, cudnnHandle_t handle) {
  auto built = std::make_unique<Graph>();
  std::vector<Descriptor>& parts = built->parts;
  parts.push_back(Tensor(kX, {g.batch, g.channels, g.in_h, g.in_w}, nhwc, type, alignment));
  parts.push_back(Tensor(kY, {g.batch, g.filters, g.out_h, g.out_w}, nhwc, type, alignment));
  parts.push_back(Tensor(kWeight, {g.filters, g.channels / g.groups, g.kernel_h, g.kernel_w}, nhwc, type, alignment));
  const Descriptor &x = parts[0], &y = parts[1], &weight = parts[2];

  Descriptor conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;  // f16 data accumulates in f32 too
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const std::int64_t spatial_dims = 2;
  const std::array<std::int64_t, 2> pre{g.pad_before[0], g.pad_before[1]}, post{g.pad_after[0], g.pad_after[1]};
  const std::array<std::int64_t, 2> strides{g.strides[0], g.strides[1]}, dilations{g.dilations[0], g.dilations[1]};
  conv.Set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  conv.Set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  conv.Set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial_dims);
  conv.Set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pre.data());
  conv.Set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, post.data());
  conv.Set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, strides.data());
  conv.Set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilations.data());
  conv.Finalize();

  // The pass: forward (x, weight) -> y; backward data (dy, weight) -> dx; backward filter (dy, x) -> dweight.
  // Each names the convolution's three tensors, its descriptor and its scalars with attributes of its own.
  struct PassAttributes {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t x, weight, y, conv, alpha, beta;
  };
  const PassAttributes names =
      pass == Conv2DPass::kForward
          ? PassAttributes{CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA}
      : pass == Conv2DPass::kBackwardData
          ? PassAttributes{CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA}
          : PassAttributes{CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
  const float alpha = 1, beta = 0;
  Descriptor op(names.type);
  op.Set(names.x, x);
  op.Set(names.weight, weight);
  op.Set(names.y, y);
  op.Set(names.conv, conv);
  op.Set(names.alpha, CUDNN_TYPE_FLOAT, 1, &alpha);
  op.Set(names.beta, CUDNN_TYPE_FLOAT, 1, &beta);
  op.Finalize();
  built->graph.Set(CUDNN_ATTR_OPERATIONGRAPH_OPS, op);
  built->graph.Set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  built->graph.Finalize();
  parts.push_back(std::move(conv));
  parts.push_back(std::move(op));
  return built;
}

// The engine configurations cuDNN's heuristics (`mode`) rank for `graph`, best first.
std::vector<Descriptor> EngineConfigs(const Graph& graph, cudnnBackendHeurMode_t mode) {
  Descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heuristics.Set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph.graph);
  heuristics.Set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  heuristics.Finalize();
  const std::int64_t count = heuristics.Get(CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, nullptr);
  std::vector<Descriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (std::int64_t i = 0; i < count; ++i) {
    configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    raw.push_back(configs.back().get());
  }
  const std::int64_t returned =
      count == 0 ? 0 : heuristics.Get(CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, raw.data());
  configs.erase(configs.begin() + std::min(returned, count), configs.end());
  return configs;
}

// What a configuration's engine is: its global index and numerical notes.
struct EngineInfo {
  std::int64_t index = -1;
  bool tensor_cores = false;   // TF32 for f32 data
  bool lower_precision = false;  // inputs converted down, or reductions in lower precision
  bool deterministic = true;
};

EngineInfo InfoOf(const Descriptor& config) {
  Descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t raw = engine.get();
  config.Get(CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
  EngineInfo info;
  engine.Get(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &info.index);
  std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> notes{};
  const std::int64_t count = engine.Get(CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                        static_cast<std::int64_t>(notes.size()), notes.data());
  for (std::int64_t i = 0; i < std::min<std::int64_t>(count, notes.size()); ++i) {
    switch (notes[static_cast<std::size_t>(i)]) {
      case CUDNN_NUMERICAL_NOTE_TENSOR_CORE: info.tensor_cores = true; break;
      case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
      case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION: info.lower_precision = true; break;
      case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC: info.deterministic = false; break;
      default: break;
    }
  }
  return info;
}

// A finalized execution plan and what it needs.
struct Plan {
  Descriptor plan{CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR};
  EngineInfo engine;
  std::size_t workspace = 0;
  float milliseconds = -1;
};

// Null for an engine whose math is not allowed (EngineInfo; `tensor_cores`: whether they may run) or
// that cuDNN cannot finalize.
std::optional<Plan> MakePlan(const Descriptor& config, bool tensor_cores, cudnnHandle_t handle) {
  try {
    Plan plan;
    plan.engine = InfoOf(config);
    if (plan.engine.lower_precision || (plan.engine.tensor_cores && !tensor_cores)) return std::nullopt;
    plan.plan.Set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    plan.plan.Set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
    plan.plan.Finalize();
    std::int64_t workspace = 0;
    plan.plan.Get(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &workspace);
    plan.workspace = static_cast<std::size_t>(std::max<std::int64_t>(workspace, 0));
    return plan;
  } catch (const Refused&) {
    return std::nullopt;
  }
}

// Runs `plan` on (x, y, weight) with `workspace`; cuDNN's status.
cudnnStatus_t Execute(cudnnHandle_t handle, const Plan& plan, const void* x, const void* y, const void* weight,
                      void* workspace) {
  try {
    Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    const std::array<std::int64_t, 3> ids{kX, kY, kWeight};
    const std::array<const void*, 3> pointers{x, y, weight};
    pack.Set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, ids.data());
    pack.Set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers.data());
    pack.Set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    pack.Finalize();
    return cudnnBackendExecute(handle, plan.plan.get(), pack.get());
  } catch (const Refused&) {
    return CUDNN_STATUS_BAD_PARAM;
  }
}

// Run's operands as the graph's tensors x, y and weight (Convolution::Run's roles).
std::array<const void*, 3> AsTensors(Conv2DPass pass, const void* a, const void* b, const void* out) {
  switch (pass) {
    case Conv2DPass::kForward: return {a, out, b};         // (x, weight) -> y
    case Conv2DPass::kBackwardData: return {out, a, b};    // (dy, weight) -> dx
    case Conv2DPass::kBackwardFilter: return {b, a, out};  // (dy, x) -> dweight
  }
  return {a, out, b};
}

// Device memory for timing, freed on every path.
struct TuningBuffer {
  explicit TuningBuffer(std::size_t bytes) {
    if (bytes > 0) WEIR_CUDA_CHECK(cudaMalloc(&memory, bytes));
    if (bytes > 0) WEIR_CUDA_CHECK(cudaMemset(memory, 0, bytes));
  }
  ~TuningBuffer() {
    if (memory != nullptr) cudaFree(memory);
  }
  TuningBuffer(const TuningBuffer&) = delete;
  TuningBuffer& operator=(const TuningBuffer&) = delete;
  void* memory = nullptr;
};

// The mean time of a few runs of `plan` after one untimed, on `handle`'s stream; -1 when it fails.
float TimePlan(cudnnHandle_t handle, const Plan& plan, const std::array<void*, 3>& tensors, void* workspace) {
  cudaStream_t stream = nullptr;
  WEIR_CUDA_CHECK(cudnnGetStream(handle, &stream));
  return cuda::MeanMilliseconds(stream, [&] {
    return Execute(handle, plan, tensors[0], tensors[1], tensors[2], workspace) == CUDNN_STATUS_SUCCESS;
  });
}

bool Tracing() { return std::getenv("WEIR_CUDNN_TRACE") != nullptr; }

// At most this many plans are timed per pass and layout, and none whose workspace is larger.
constexpr std::size_t kMaxTimed = 12;
constexpr std::size_t kMaxWorkspace = std::size_t{256} << 20;

}  // namespace

struct CudnnGraphConvolution::State {
  Conv2DPass pass = Conv2DPass::kForward;
  std::unique_ptr<Graph> graph, unaligned_graph;  // 16-byte and 4-byte aligned operands
  Plan plan, unaligned;
  std::size_t workspace = 0;  // the larger of the two plans'
};

std::unique_ptr<CudnnGraphConvolution> CudnnGraphConvolution::Fastest(const Conv2DGeometry& g, Conv2DPass pass,
                                                                      bool nhwc, cudnnDataType_t type,
                                                                      bool tensor_float_32, cudnnHandle_t handle) {
  if (g.groups != 1) return nullptr;
  const char* layout = nhwc ? "NHWC" : "NCHW";
  try {
    auto state = std::make_unique<State>();
    state->pass = pass;
    const bool tensor_cores = type == CUDNN_DATA_HALF || tensor_float_32;
    state->graph = BuildGraph(g, pass, nhwc, type, 16, handle);
    // Heuristics mode A's ranking, then the fallback list's engines not in it.
    std::vector<Plan> plans;
    std::vector<std::int64_t> seen;
    for (const cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
      std::vector<Descriptor> configs;
      try {
        configs = EngineConfigs(*state->graph, mode);
      } catch (const Refused&) {
        continue;
      }
      for (const Descriptor& config : configs) {
        if (plans.size() == kMaxTimed) break;
        std::optional<Plan> plan = MakePlan(config, tensor_cores, handle);
        if (!plan || plan->workspace > kMaxWorkspace) continue;
        if (mode == CUDNN_HEUR_MODE_FALLBACK && std::find(seen.begin(), seen.end(), plan->engine.index) != seen.end()) continue;
        seen.push_back(plan->engine.index);
        plans.push_back(std::move(*plan));
      }
    }
    if (plans.empty()) {
      if (Tracing()) std::fprintf(stderr, "[conv2d]   graph %s: no engine in the allowed math\n", layout);
      return nullptr;
    }
    std::size_t workspace = 0;
    for (const Plan& plan : plans) workspace = std::max(workspace, plan.workspace);
    const std::size_t element = type == CUDNN_DATA_HALF ? 2 : sizeof(float);
    TuningBuffer x(static_cast<std::size_t>(g.XCount()) * element), y(static_cast<std::size_t>(g.YCount()) * element),
        weight(static_cast<std::size_t>(g.WeightCount()) * element), scratch(workspace);
    Plan* fastest = nullptr;
    for (Plan& plan : plans) {
      plan.milliseconds = TimePlan(handle, plan, {x.memory, y.memory, weight.memory}, scratch.memory);
      if (Tracing()) {
        std::fprintf(stderr, "[conv2d]   graph %s engine %lld: %.4f ms, %s, %s, workspace %zu bytes\n", layout,
                     static_cast<long long>(plan.engine.index), plan.milliseconds,
                     plan.engine.tensor_cores ? "tensor cores" : "FMA",
                     plan.engine.deterministic ? "deterministic" : "non-deterministic", plan.workspace);
      }
      if (plan.milliseconds >= 0 && (fastest == nullptr || plan.milliseconds < fastest->milliseconds)) fastest = &plan;
    }
    if (fastest == nullptr) return nullptr;
    // A deterministic engine within 10% of the fastest is preferred, as for the legacy algorithms.
    for (Plan& plan : plans) {
      if (!fastest->engine.deterministic && plan.engine.deterministic && plan.milliseconds >= 0 &&
          plan.milliseconds <= 1.1f * fastest->milliseconds) {
        fastest = &plan;
      }
    }
    state->plan = std::move(*fastest);
    // For operands that are not 16-byte aligned: the first engine cuDNN ranks for the element's
    // alignment whose workspace fits.
    state->unaligned_graph = BuildGraph(g, pass, nhwc, type, static_cast<std::int64_t>(element), handle);
    bool have_unaligned = false;
    for (const Descriptor& config : EngineConfigs(*state->unaligned_graph, CUDNN_HEUR_MODE_A)) {
      std::optional<Plan> plan = MakePlan(config, tensor_cores, handle);
      if (!plan || plan->workspace > std::max(state->plan.workspace, kMaxWorkspace / 4)) continue;
      state->unaligned = std::move(*plan);
      have_unaligned = true;
      break;
    }
    if (!have_unaligned) {
      if (Tracing()) std::fprintf(stderr, "[conv2d]   graph %s: no engine for unaligned operands\n", layout);
      return nullptr;
    }
    state->workspace = std::max(state->plan.workspace, state->unaligned.workspace);
    return std::unique_ptr<CudnnGraphConvolution>(new CudnnGraphConvolution(std::move(state)));
  } catch (const Refused& refused) {
    if (Tracing()) std::fprintf(stderr, "[conv2d]   graph %s: %s\n", layout, refused.what());
    return nullptr;
  }
}

CudnnGraphConvolution::CudnnGraphConvolution(std::unique_ptr<State> state) : state_(std::move(state)) {}
CudnnGraphConvolution::~CudnnGraphConvolution() = default;

float CudnnGraphConvolution::Milliseconds() const { return state_->plan.milliseconds; }
std::size_t CudnnGraphConvolution::WorkspaceBytes() const { return state_->workspace; }

void CudnnGraphConvolution::Run(cudnnHandle_t handle, const void* a, const void* b, void* out, void* workspace) const {
  const std::array<const void*, 3> tensors = AsTensors(state_->pass, a, b, out);
  const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  const Plan& plan = std::all_of(tensors.begin(), tensors.end(), aligned) ? state_->plan : state_->unaligned;
  WEIR_CUDA_CHECK(Execute(handle, plan, tensors[0], tensors[1], tensors[2], workspace));
}

}  // namespace weir::internal::cuda
