#include "graph/layout_pass.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "weir/ops.hpp"

namespace weir::internal {

namespace {

const std::vector<int> kNchwToNhwc{0, 2, 3, 1};
const std::vector<int> kNhwcToNchw{0, 3, 1, 2};
// Where each NCHW axis sits in NHWC.
const std::vector<int> kNchwPositionInNhwc{0, 3, 1, 2};
// (out, in, kh, kw) -> (out, kh, kw, in): the NHWC conv2d's weight layout.
const std::vector<int> kOihwToOhwi{0, 2, 3, 1};

// Ops that act on every element alike, so they commute with a transpose.
bool IsLayoutFreeElementwise(std::string_view type) { return type == "unary"; }

class ChannelsLast {
 public:
  explicit ChannelsLast(const std::shared_ptr<JobGraph>& graph) : graph_(graph) {}

  void Run() {
    // A watched gradient is the gradient of that very value, so it must stay on the path to the
    // loss: such values stay NCHW (their consumers may start a new chain).
    for (const WatchSpec& watch : graph_->watches) {
      if (watch.diff) keep_nchw_.insert(watch.value);
    }
    const std::size_t original = graph_->nodes.size();
    for (std::size_t n = 0; n < original; ++n) {
      if (!Convert(n)) RewireInputs(n);
    }
    if (converted_.empty()) return;
    for (auto& [name, value] : graph_->outputs) value = Outside(value);
    for (WatchSpec& watch : graph_->watches) watch.value = Outside(watch.value);  // forward watches only
    if (graph_->loss_value >= 0) graph_->loss_value = Outside(graph_->loss_value);
    RestoreTopologicalOrder(*graph_);
  }

 private:
  const ValueInfo& Value(int value) const { return graph_->values[static_cast<std::size_t>(value)]; }
  Blob B(int value) const { return Blob(graph_, value); }
  bool IsF32Rank4(int value) const { return Value(value).meta.dtype == DType::kF32 && Value(value).meta.shape.Rank() == 4; }
  bool IsConverted(int value) const { return converted_.count(value) > 0; }

  // Replaces node n by its NHWC form when it has one and is worth it; returns whether it did.
  bool Convert(std::size_t n) {
    const OpNode node = graph_->nodes[n];  // a copy: adding ops reallocates the node table
    if (node.outputs.empty() || node.inputs.empty() || !IsF32Rank4(node.inputs[0])) return false;
    if (keep_nchw_.count(node.outputs[0]) > 0) return false;
    if (node.outputs.size() != 1 && node.type != "batch_norm") return false;
    const int x = node.inputs[0];
    int replacement = -1;
    if (node.type == "conv2d") {
      Conv2DAttrs attrs = std::any_cast<const Conv2DAttrs&>(node.attrs);
      if (attrs.data_format != DataFormat::kNCHW || attrs.groups != 1) return false;
      attrs.data_format = DataFormat::kNHWC;
      RenameReplaced(n);
      const Blob weight = Transpose(B(node.inputs[1]), {kOihwToOhwi}, node.name + "/weight_ohwi");
      replacement = Conv2D(B(Nhwc(x, node.name)), weight, attrs, node.name).ValueId();
    } else if (!IsConverted(x)) {
      return false;  // the rest only continue a chain: starting one would cost a transpose
    } else if (node.type == "max_pool2d" || node.type == "avg_pool2d") {
      Pool2DAttrs attrs = std::any_cast<const Pool2DAttrs&>(node.attrs);
      if (attrs.data_format != DataFormat::kNCHW) return false;
      attrs.data_format = DataFormat::kNHWC;
      RenameReplaced(n);
      replacement = AddOp1(node.type, {B(converted_.at(x))}, attrs, node.name).ValueId();
    } else if (node.type == "bias_add") {
      const int axis = std::any_cast<const BiasAddAttrs&>(node.attrs).axis;
      if (axis != 1 && axis != -3) return false;
      RenameReplaced(n);
      replacement = BiasAdd(B(converted_.at(x)), B(node.inputs[1]), {.axis = 3}, node.name).ValueId();
    } else if (IsLayoutFreeElementwise(node.type) && node.inputs.size() == 1) {
      RenameReplaced(n);
      replacement = AddOp1(node.type, {B(converted_.at(x))}, node.attrs, node.name).ValueId();
    } else if (node.type == "add" && node.inputs.size() == 2 && IsConverted(node.inputs[1]) &&
               Value(x).meta.shape == Value(node.inputs[1]).meta.shape) {  // a residual connection
      RenameReplaced(n);
      replacement = AddOp1("add", {B(converted_.at(x)), B(converted_.at(node.inputs[1]))}, node.attrs, node.name).ValueId();
    } else if (node.type == "batch_norm") {
      BatchNormAttrs attrs = std::any_cast<const BatchNormAttrs&>(node.attrs);
      if (attrs.axis != 1 && attrs.axis != -3) return false;
      attrs.axis = 3;
      RenameReplaced(n);
      std::vector<Blob> inputs{B(converted_.at(x))};
      for (std::size_t i = 1; i < node.inputs.size(); ++i) inputs.push_back(B(node.inputs[i]));
      const std::vector<Blob> outputs = AddOp("batch_norm", inputs, attrs, node.name);
      // The batch statistics (training) are per channel: the same values in either layout.
      for (std::size_t j = 1; j < node.outputs.size(); ++j) same_.emplace(node.outputs[j], outputs[j].ValueId());
      replacement = outputs[0].ValueId();
    } else if (node.type == "reduce_sum" || node.type == "reduce_mean") {
      // A reduction whose result keeps its axes in the same order in both layouts (a global pool over
      // height and width) reads the NHWC value and ends the chain without a transpose.
      ReduceAttrs attrs = std::any_cast<const ReduceAttrs&>(node.attrs);
      if (attrs.keep_dims || attrs.axes.empty()) return false;
      std::vector<bool> reduced(4, false);
      for (int axis : attrs.axes) {
        if (axis < -4 || axis > 3) return false;
        reduced[static_cast<std::size_t>(axis < 0 ? axis + 4 : axis)] = true;
      }
      std::vector<int> kept_positions;  // the kept NCHW axes' positions in NHWC, in NCHW order
      for (int axis = 0; axis < 4; ++axis) {
        if (!reduced[static_cast<std::size_t>(axis)]) kept_positions.push_back(kNchwPositionInNhwc[static_cast<std::size_t>(axis)]);
      }
      if (!std::is_sorted(kept_positions.begin(), kept_positions.end())) return false;
      attrs.axes.clear();
      for (int axis = 0; axis < 4; ++axis) {
        if (reduced[static_cast<std::size_t>(axis)]) attrs.axes.push_back(kNchwPositionInNhwc[static_cast<std::size_t>(axis)]);
      }
      std::sort(attrs.axes.begin(), attrs.axes.end());
      RenameReplaced(n);
      same_.emplace(node.outputs[0], AddOp1(node.type, {B(converted_.at(x))}, attrs, node.name).ValueId());
      return true;
    } else {
      return false;
    }
    converted_.emplace(node.outputs[0], replacement);
    return true;
  }

  // Node n stays NCHW: inputs that now live in NHWC come back through a transpose, inputs whose
  // producer was replaced by a layout-free one come from the replacement.
  void RewireInputs(std::size_t n) {
    const std::vector<int> inputs = graph_->nodes[n].inputs;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const int outside = Outside(inputs[i]);
      graph_->nodes[n].inputs[i] = outside;
    }
  }

  // What a consumer outside the chains reads in place of `value`.
  int Outside(int value) {
    if (const auto it = same_.find(value); it != same_.end()) return it->second;
    return Exported(value);
  }

  void RenameReplaced(std::size_t n) { graph_->nodes[n].name += "/nchw"; }

  // x in NHWC: the chain's value if x came out of one, else a transpose (made once per value).
  int Nhwc(int x, const std::string& consumer) {
    if (IsConverted(x)) return converted_.at(x);
    auto [it, added] = imported_.try_emplace(x, -1);
    if (added) it->second = Transpose(B(x), {kNchwToNhwc}, consumer + "/x_nhwc").ValueId();
    return it->second;
  }

  // The NCHW value that replaces a converted one for consumers outside the chain (made once).
  int Exported(int value) {
    if (!IsConverted(value)) return value;
    auto [it, added] = exported_.try_emplace(value, -1);
    if (added) {
      const std::string producer = graph_->nodes[static_cast<std::size_t>(Value(converted_.at(value)).producer)].name;
      it->second = Transpose(B(converted_.at(value)), {kNhwcToNchw}, producer + "/nchw_out").ValueId();
    }
    return it->second;
  }

  std::shared_ptr<JobGraph> graph_;
  std::unordered_map<int, int> converted_;  // NCHW value -> the NHWC value that replaces it
  std::unordered_map<int, int> imported_;   // NCHW value -> its NHWC transpose
  std::unordered_map<int, int> exported_;   // converted value -> its NCHW transpose
  std::unordered_map<int, int> same_;       // value -> its replacement in the same layout (per-channel statistics, reductions)
  std::unordered_set<int> keep_nchw_;       // values whose gradient is watched
};

}  // namespace

void UseChannelsLastConvolutions(const std::shared_ptr<JobGraph>& graph) { ChannelsLast(graph).Run(); }

}  // namespace weir::internal
