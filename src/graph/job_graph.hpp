#pragma once
// The job IR: values (typed edges) and op nodes, built by JobBuilder and the op functions.
#include <any>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "common/tensor_meta.hpp"
#include "weir/job.hpp"
#include "weir/optimizers.hpp"

namespace weir::internal {

struct ValueInfo {
  TensorMeta meta;
  int producer = -1;  // node id
  int output_index = 0;
  std::string name;
};

struct OpNode {
  std::string type;  // "matmul", "placeholder", ...
  std::string name;  // unique within the job
  std::vector<int> inputs;   // value ids
  std::vector<int> outputs;  // value ids
  std::any attrs;            // the op's typed attribute struct
  int placement = -1;        // index into JobGraph::placements; -1: the job's default placement
  bool quantize = true;      // subject to quantization-aware training (graph/quantization_pass.hpp)
};

/// Node type of placeholders; their attrs are a PlaceholderInfo.
inline constexpr std::string_view kPlaceholderOp = "placeholder";
/// Node type of variables; their attrs are a VariableAttrs.
inline constexpr std::string_view kVariableOp = "variable";

struct VariableAttrs {
  std::string name;   // the session-wide variable name
  VariableSpec spec;  // dtype resolved
};

/// The train-step counter every train job gets (OneFlow's name), an i64 (1) variable.
std::string TrainStepVariableName(std::string_view job_name);

/// A watch: its value (or gradient) leaves the job as a hidden output handed to `handler`.
struct WatchSpec {
  int value = -1;
  bool diff = false;
  std::function<void(const Tensor&)> handler;
};

/// Outputs named with this prefix carry watched values; callers never see them.
inline constexpr std::string_view kWatchOutputPrefix = "__watch/";

struct JobGraph {
  std::string name;
  JobType type = JobType::kPredict;
  JobConfig config;
  std::vector<ValueInfo> values;
  std::vector<OpNode> nodes;
  std::vector<PlaceholderInfo> placeholders;
  std::vector<int> placeholder_values;                        // value id per placeholder
  std::vector<std::pair<std::string, int>> outputs;           // (name, value id)
  std::vector<WatchSpec> watches;
  std::shared_ptr<const Optimizer> optimizer;  // set by Minimize
  int loss_value = -1;
  /// The gradient of each trainable variable, as the backward pass produced it (before clipping
  /// and the update): where a mirrored job averages the devices' gradients.
  std::vector<int> variable_gradients;
  /// Placements named by nodes, and the scopes open while the job is built (indices into them).
  std::vector<Placement> placements;
  std::vector<int> placement_scopes;
  /// The open quantization scopes (JobBuilder::PushQuantizationScope), innermost last.
  std::vector<bool> quantization_scopes;
  bool built = false;
  int next_auto_name = 0;
  int mixed_precision_ops = 0;  // ops the mixed-precision pass runs in 16 bits
  int quantized_values = 0;     // values the quantization-aware-training pass fake-quantizes
};

/// The placement of nodes added now: the innermost open scope, or -1 (the default).
inline int CurrentPlacement(const JobGraph& graph) {
  return graph.placement_scopes.empty() ? -1 : graph.placement_scopes.back();
}

/// While alive, nodes added to `graph` are placed with `placement` (gradient and update ops
/// inherit their forward op's or variable's placement this way).
class PlacementOverride {
 public:
  PlacementOverride(JobGraph& graph, int placement) : graph_(graph) { graph_.placement_scopes.push_back(placement); }
  ~PlacementOverride() { graph_.placement_scopes.pop_back(); }
  PlacementOverride(const PlacementOverride&) = delete;
  PlacementOverride& operator=(const PlacementOverride&) = delete;

 private:
  JobGraph& graph_;
};

/// Appends an op of `type` to the graph of `inputs` (all from one unbuilt job), infers its
/// outputs with the registered OpDef, and returns them. Throws std::invalid_argument.
std::vector<Blob> AddOp(std::string_view type, const std::vector<Blob>& inputs, std::any attrs,
                        std::string_view name);
/// Appends an op without inputs (a reader, random draws: OpDef::num_inputs 0) to `graph`.
std::vector<Blob> AddSourceOp(const std::shared_ptr<JobGraph>& graph, std::string_view type, std::any attrs,
                              std::string_view name);
/// The variable node `name` (one per name and job), its dtype defaulting to the job's.
Blob AddVariable(const std::shared_ptr<JobGraph>& graph, const std::string& name, VariableSpec spec);
/// A constant node holding a copy of `value` (a CPU tensor).
Blob AddConstant(const std::shared_ptr<JobGraph>& graph, const Tensor& value, std::string_view name);
/// AddOp for single-output ops.
Blob AddOp1(std::string_view type, const std::vector<Blob>& inputs, std::any attrs, std::string_view name);
/// After a rewrite appended ops that earlier nodes now read: restores producer-first order (depth
/// first from each node in the old order, so untouched parts keep their order).
void RestoreTopologicalOrder(JobGraph& graph);

}  // namespace weir::internal
