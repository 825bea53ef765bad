#pragma once
// The job IR: values (typed edges) and op nodes, built by JobBuilder and the op functions.
#include <any>
#include <mutex>
#include <string>
#include <vector>

#include "common/tensor_meta.hpp"
#include "weir/job.hpp"

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
};

/// Node type of placeholders; their attrs are a PlaceholderInfo.
inline constexpr std::string_view kPlaceholderOp = "placeholder";

struct JobGraph {
  std::string name;
  JobType type = JobType::kPredict;
  JobConfig config;
  std::vector<ValueInfo> values;
  std::vector<OpNode> nodes;
  std::vector<PlaceholderInfo> placeholders;
  std::vector<int> placeholder_values;                        // value id per placeholder
  std::vector<std::pair<std::string, int>> outputs;           // (name, value id)
  bool built = false;
  int next_auto_name = 0;
};

/// Appends an op of `type` to the graph of `inputs` (all from one unbuilt job), infers its
/// outputs with the registered OpDef, and returns them. Throws std::invalid_argument.
std::vector<Blob> AddOp(std::string_view type, const std::vector<Blob>& inputs, std::any attrs,
                        std::string_view name);
/// AddOp for single-output ops.
Blob AddOp1(std::string_view type, const std::vector<Blob>& inputs, std::any attrs, std::string_view name);

}  // namespace weir::internal
