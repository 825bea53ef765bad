#include "graph/mixed_precision_pass.hpp"

#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/cuda_backend.hpp"
#include "kernels/cpu/dnnl_engine.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"
#include "weir/ops.hpp"

namespace weir::internal {

namespace {

// OneFlow's allow list as Weir's ops: the products, which 16-bit kernels run up to twice as fast
// (oneDNN's AVX512_BF16/AMX kernels, tensor cores), each with the kernels its gradient runs.
struct LowPrecisionProduct {
  std::string_view type;
  std::vector<std::string_view> kernels;
};
const std::vector<LowPrecisionProduct>& Products() {
  static const std::vector<LowPrecisionProduct> products{
      {"matmul", {"matmul"}},
      {"batch_matmul", {"batch_matmul"}},
      {"conv2d", {"conv2d", "conv2d_grad_data", "conv2d_grad_filter"}},
  };
  return products;
}

// OneFlow's clear list: ops that only move their one input's elements run in whatever dtype it has.
bool OnlyMovesElements(std::string_view type) {
  return type == "reshape" || type == "flatten" || type == "transpose" || type == "identity";
}

// The activations of OneFlow's gray and clear lists: computed in f32 on widened values and rounded
// once, so 16 bits lose nothing past the rounding of their result.
bool IsLowPrecisionActivation(const OpNode& node) {
  if (node.type != "unary") return false;
  const UnaryOpKind kind = std::any_cast<const UnaryAttrs&>(node.attrs).kind;
  return kind == UnaryOpKind::kRelu || kind == UnaryOpKind::kGelu || kind == UnaryOpKind::kSigmoid ||
         kind == UnaryOpKind::kTanh;
}

class MixedPrecision {
 public:
  explicit MixedPrecision(const std::shared_ptr<JobGraph>& graph)
      : graph_(graph), low_(graph->config.mixed_precision->dtype), device_(graph->config.mixed_precision->device) {}

  int Run() {
    // A watched gradient is the gradient of that very value: it stays f32.
    for (const WatchSpec& watch : graph_->watches) {
      if (watch.diff) keep_f32_.insert(watch.value);
    }
    MarkLive();
    const std::size_t original = graph_->nodes.size();
    for (std::size_t n = 0; n < original; ++n) {
      for (int& input : graph_->nodes[n].inputs) input = Same(input);
      if (!Convert(n)) RewireInputs(n);
    }
    if (converted_.empty()) return 0;
    for (auto& [name, value] : graph_->outputs) value = Exported(Same(value));
    for (WatchSpec& watch : graph_->watches) watch.value = Exported(Same(watch.value));  // forward watches only
    if (graph_->loss_value >= 0) graph_->loss_value = Exported(Same(graph_->loss_value));
    RestoreTopologicalOrder(*graph_);
    return low_ops_;
  }

 private:
  const ValueInfo& Value(int value) const { return graph_->values[static_cast<std::size_t>(value)]; }
  Blob B(int value) const { return Blob(graph_, value); }
  bool IsConverted(int value) const { return converted_.count(value) > 0; }
  bool HasLowKernel(std::string_view type) const {
    return FindKernel({std::string(type), device_, low_}) != nullptr;
  }

  bool IsLowPrecisionProduct(std::string_view type) const {
    for (const LowPrecisionProduct& product : Products()) {
      if (product.type != type) continue;
      // A train job sums the gradients of a 16-bit value read twice (a weight in two products).
      if (graph_->type == JobType::kTrain && !HasLowKernel("add")) return false;
      for (std::string_view kernel : product.kernels) {
        if (!HasLowKernel(kernel)) return false;
      }
      return true;
    }
    return false;
  }

  // The nodes the job's outputs, watches and loss depend on; the others (such as ops the layout pass
  // replaced, which still read each other) are left alone.
  void MarkLive() {
    live_.assign(graph_->nodes.size(), false);
    std::vector<int> pending;
    for (const auto& [name, value] : graph_->outputs) pending.push_back(value);
    for (const WatchSpec& watch : graph_->watches) pending.push_back(watch.value);
    if (graph_->loss_value >= 0) pending.push_back(graph_->loss_value);
    while (!pending.empty()) {
      const auto node = static_cast<std::size_t>(Value(pending.back()).producer);
      pending.pop_back();
      if (live_[node]) continue;
      live_[node] = true;
      pending.insert(pending.end(), graph_->nodes[node].inputs.begin(), graph_->nodes[node].inputs.end());
    }
  }

  // Whether the kernels of `type` and, in a train job, of its gradient `grad` run 16 bits natively.
  bool HasLowKernels(std::string_view type, std::string_view grad) const {
    return HasLowKernel(type) && (graph_->type != JobType::kTrain || HasLowKernel(grad));
  }

  // Whether node (f32, live) continues a 16-bit chain: the ops that follow their inputs' dtype, when
  // what they read already is 16-bit. They never start a chain, which would cost a cast.
  bool ContinuesChain(const OpNode& node) const {
    const std::vector<int>& in = node.inputs;
    if (!IsConverted(in[0])) return false;
    if (OnlyMovesElements(node.type)) return in.size() == 1 && HasLowKernel(node.type);
    if (IsLowPrecisionActivation(node)) return HasLowKernels("unary", "unary_grad");
    // A maximum is one of its window's values, exact in any dtype (OneFlow's clear list).
    if (node.type == "max_pool2d") return HasLowKernels("max_pool2d", "max_pool2d_grad");
    // A residual connection; a broadcast sum's gradient would need a 16-bit reduction.
    if (node.type == "add") {
      return in.size() == 2 && IsConverted(in[1]) && Value(in[0]).meta.shape == Value(in[1]).meta.shape &&
             HasLowKernel("add");
    }
    // OneFlow's normalization in mixed precision: 16-bit x and y, f32 parameters and statistics.
    if (node.type == "batch_norm") return HasLowKernels("batch_norm", "batch_norm_grad");
    // A predict job's bias (an f32 bias of a 16-bit x): with the product before it and a relu after it,
    // one kernel that writes 16 bits (graph/fusion.hpp). A train job keeps the f32 sum, whose bias
    // gradient would otherwise need its 16-bit dy cast back first.
    if (node.type == "bias_add") {
      return graph_->type == JobType::kPredict && !IsConverted(in[1]) && Value(in[1]).meta.dtype == DType::kF32 &&
             HasLowKernel("bias_add");
    }
    return false;
  }

  // Replaces node n by its 16-bit form when it has one; returns whether it did.
  bool Convert(std::size_t n) {
    const OpNode node = graph_->nodes[n];  // a copy: adding ops reallocates the node table
    if (node.outputs.empty() || node.inputs.empty()) return false;
    const int output = node.outputs[0];
    if (Value(output).meta.dtype != DType::kF32 || keep_f32_.count(output) > 0 || !live_[n]) return false;
    std::vector<Blob> inputs;
    if (node.outputs.size() == 1 && IsLowPrecisionProduct(node.type)) {
      for (int input : node.inputs) {
        if (Value(input).meta.dtype != DType::kF32 && !IsConverted(input)) return false;
      }
      for (int input : node.inputs) inputs.push_back(B(Low(input, node.placement)));
    } else if (ContinuesChain(node)) {
      // The 16-bit inputs from the chain; the others (batch_norm's parameters) as they are.
      for (int input : node.inputs) inputs.push_back(B(IsConverted(input) ? converted_.at(input) : input));
    } else {
      return false;
    }
    graph_->nodes[n].name += "/f32_op";
    const PlacementOverride placement(*graph_, node.placement);
    const std::vector<Blob> outputs = AddOp(node.type, inputs, node.attrs, node.name);
    converted_.emplace(output, outputs[0].ValueId());
    // The other outputs (batch_norm's statistics) keep their dtype: readers take the new node's.
    for (std::size_t j = 1; j < node.outputs.size(); ++j) same_.emplace(node.outputs[j], outputs[j].ValueId());
    ++low_ops_;
    return true;
  }

  // What replaces `value`, an output of a converted node that kept its dtype, or value itself.
  int Same(int value) const {
    const auto it = same_.find(value);
    return it == same_.end() ? value : it->second;
  }

  // Node n stays f32: inputs that are now 16-bit come back through a cast.
  void RewireInputs(std::size_t n) {
    const std::vector<int> inputs = graph_->nodes[n].inputs;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (IsConverted(inputs[i])) graph_->nodes[n].inputs[i] = Exported(inputs[i]);
    }
  }

  // x in 16 bits: the converted value if x was replaced, else a cast (one per value, named after it,
  // placed with its first reader).
  int Low(int x, int reader_placement) {
    if (IsConverted(x)) return converted_.at(x);
    auto [it, added] = imported_.try_emplace(x, -1);
    if (added) {
      const PlacementOverride placement(*graph_, reader_placement);
      it->second = Cast(B(x), {.dtype = low_}, ValueStem(x) + "/to_" + std::string(Name(low_))).ValueId();
    }
    return it->second;
  }

  // A name for value x: its producer's, with the output's index past the first.
  std::string ValueStem(int x) const {
    const std::string& producer = graph_->nodes[static_cast<std::size_t>(Value(x).producer)].name;
    return Value(x).output_index == 0 ? producer : producer + "_" + std::to_string(Value(x).output_index);
  }

  // The f32 value that replaces a converted one for f32 readers (one per value, placed with its producer).
  int Exported(int value) {
    if (!IsConverted(value)) return value;
    auto [it, added] = exported_.try_emplace(value, -1);
    if (added) {
      const int low = converted_.at(value);
      const PlacementOverride placement(*graph_, graph_->nodes[static_cast<std::size_t>(Value(low).producer)].placement);
      it->second = Cast(B(low), {.dtype = DType::kF32}, ValueStem(low) + "/to_f32").ValueId();
    }
    return it->second;
  }

  std::shared_ptr<JobGraph> graph_;
  DType low_;
  Device::Kind device_;
  int low_ops_ = 0;
  std::unordered_map<int, int> converted_;  // f32 value -> the 16-bit value that replaces it
  std::unordered_map<int, int> imported_;   // f32 value -> its 16-bit cast
  std::unordered_map<int, int> exported_;   // converted value -> its f32 cast
  std::unordered_map<int, int> same_;       // an output that kept its dtype -> the converted node's
  std::unordered_set<int> keep_f32_;        // values whose gradient is watched
  std::vector<bool> live_;                  // per node: an output, a watch or the loss depends on it
};

}  // namespace

}  // namespace weir::internal

namespace weir {

std::optional<DType> MixedPrecisionDType(Device::Kind device) {
  if (device == Device::Kind::kCuda) return DType::kF16;
  if (internal::CpuHasNativeBFloat16()) return DType::kBF16;
  return std::nullopt;
}

}  // namespace weir

namespace weir::internal {

int UseMixedPrecision(const std::shared_ptr<JobGraph>& graph) {
  if (!graph->config.mixed_precision) return 0;
  if (graph->config.mixed_precision->device == Device::Kind::kCuda) {
    // The CUDA kernels register as the backend loads: a job may be built before any session asked
    // for a GPU. Without a backend nothing runs on CUDA anyway, and the job stays f32.
    try {
      LoadCudaBackend();
    } catch (const std::runtime_error&) {
      return 0;
    }
  }
  return MixedPrecision(graph).Run();
}

}  // namespace weir::internal
