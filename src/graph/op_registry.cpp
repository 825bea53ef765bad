#include "graph/op_registry.hpp"

#include "graph/job_graph.hpp"
#include "kernels/attrs/update_attrs.hpp"

#include <mutex>
#include <string>

namespace weir::internal {

namespace {

std::vector<OpDef>& Defs() {
  static std::vector<OpDef> defs;
  return defs;
}
std::mutex& DefsMutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

void RegisterOp(OpDef def) {
  std::lock_guard lock(DefsMutex());
  Defs().push_back(std::move(def));
}

const OpDef* TryFindOp(std::string_view type) {
  std::lock_guard lock(DefsMutex());
  for (const OpDef& def : Defs()) {
    if (def.type == type) return &def;
  }
  return nullptr;
}

const OpDef& FindOp(std::string_view type) {
  std::lock_guard lock(DefsMutex());
  for (const OpDef& def : Defs()) {
    if (def.type == type) return def;
  }
  throw std::invalid_argument(fmt::format("[{}] unknown op type", type));
}

namespace {

std::any ReadAttrsByName(const OpDef& def, const AttrMap& attrs) {
  if (def.read_attrs) return def.read_attrs(def.type, attrs);
  CheckAttrNames(def.type, attrs, {});
  return {};
}

}  // namespace

std::vector<Blob> AddOpByName(std::string_view type, const std::vector<Blob>& inputs, const AttrMap& attrs,
                              std::string_view name) {
  const OpDef& def = FindOp(type);
  std::any value = ReadAttrsByName(def, attrs);
  return def.build ? def.build(inputs, value, name) : AddOp(def.type, inputs, std::move(value), name);
}

std::vector<Blob> AddSourceOpByName(const JobBuilder& job, std::string_view type, const AttrMap& attrs, std::string_view name) {
  const OpDef& def = FindOp(type);
  return AddSourceOp(job.Graph(), def.type, ReadAttrsByName(def, attrs), name);
}

std::vector<int> MutatedInputs(std::string_view type, const std::any& attrs, std::size_t input_count) {
  if (const auto* update = std::any_cast<UpdateAttrs>(&attrs); update != nullptr && update->skip_if && input_count > 0) {
    --input_count;
  }
  std::vector<int> mutated;
  for (int input : FindOp(type).mutates_inputs) {
    if (input < static_cast<int>(input_count)) mutated.push_back(input);
  }
  return mutated;
}

std::vector<bool> WrittenValues(const JobGraph& graph, const std::vector<bool>& live) {
  std::vector<bool> written(graph.values.size(), false);
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    const OpNode& node = graph.nodes[n];
    if (!live[n] || node.type == kPlaceholderOp || node.type == kVariableOp || node.type == "constant") continue;
    for (int input : MutatedInputs(node.type, node.attrs, node.inputs.size())) {
      written[static_cast<std::size_t>(node.inputs[static_cast<std::size_t>(input)])] = true;
    }
  }
  return written;
}

std::vector<std::string_view> RegisteredOpTypes() {
  std::lock_guard lock(DefsMutex());
  std::vector<std::string_view> types;
  for (const OpDef& def : Defs()) types.push_back(def.type);
  return types;
}

int ResolveAxis(std::string_view op_type, std::string_view what, int axis, int rank) {
  const int resolved = axis < 0 ? axis + rank : axis;
  if (resolved < 0 || resolved >= rank) {
    throw OpError(op_type, "{} {} out of range for rank {}", what, axis, rank);
  }
  return resolved;
}

Shape BroadcastShapes(std::string_view op_type, const Shape& a, const Shape& b) {
  const int rank = std::max(a.Rank(), b.Rank());
  std::vector<std::int64_t> dims(static_cast<std::size_t>(rank));
  for (int i = 0; i < rank; ++i) {
    const int ia = a.Rank() - rank + i;
    const int ib = b.Rank() - rank + i;
    const std::int64_t da = ia >= 0 ? a.Dims()[static_cast<std::size_t>(ia)] : 1;
    const std::int64_t db = ib >= 0 ? b.Dims()[static_cast<std::size_t>(ib)] : 1;
    if (da != db && da != 1 && db != 1) throw OpError(op_type, "shapes do not broadcast: {} vs {}", a, b);
    dims[static_cast<std::size_t>(i)] = da == 1 ? db : da;
  }
  return Shape(std::move(dims));
}

}  // namespace weir::internal
