#include "graph/batch_norm_folding.hpp"

#include <string>
#include <unordered_set>
#include <vector>

#include "weir/op_attrs.hpp"
#include "weir/ops.hpp"

namespace weir::internal {

namespace {

class Folding {
 public:
  explicit Folding(const std::shared_ptr<JobGraph>& graph) : graph_(graph), readers_(graph->values.size(), 0) {
    for (const OpNode& node : graph->nodes) {
      for (int value : node.inputs) ++readers_[static_cast<std::size_t>(value)];
    }
    for (const auto& [name, value] : graph->outputs) exported_.insert(value);
    for (const WatchSpec& watch : graph->watches) exported_.insert(watch.value);
    if (graph->loss_value >= 0) exported_.insert(graph->loss_value);
  }

  int Run() {
    int folded = 0;
    const std::size_t original = graph_->nodes.size();
    for (std::size_t n = 0; n < original; ++n) {
      if (Fold(n)) ++folded;
    }
    if (folded > 0) RestoreTopologicalOrder(*graph_);
    return folded;
  }

 private:
  const ValueInfo& Value(int value) const { return graph_->values[static_cast<std::size_t>(value)]; }
  Blob B(int value) const { return Blob(graph_, value); }

  // Folds batch_norm node n into the convolution before it when it can; returns whether it did.
  bool Fold(std::size_t n) {
    const OpNode norm = graph_->nodes[n];  // copies: adding ops reallocates the node table
    if (norm.type != "batch_norm" || norm.inputs.size() != 5 || norm.outputs.size() != 1) return false;
    const auto& norm_attrs = std::any_cast<const BatchNormAttrs&>(norm.attrs);
    if (norm_attrs.training) return false;
    const int y = norm.inputs[0];
    const auto conv_index = static_cast<std::size_t>(Value(y).producer);
    const OpNode conv = graph_->nodes[conv_index];
    // The convolution's result is needed only as the normalization's input.
    if (conv.type != "conv2d" || readers_[static_cast<std::size_t>(y)] != 1 || exported_.count(y) > 0) return false;
    for (int value : conv.inputs) {
      if (Value(value).meta.dtype != DType::kF32) return false;
    }
    for (int value : norm.inputs) {
      if (Value(value).meta.dtype != DType::kF32) return false;
    }
    const auto& conv_attrs = std::any_cast<const Conv2DAttrs&>(conv.attrs);
    const int channels = conv_attrs.data_format == DataFormat::kNCHW ? 1 : 3;
    if ((norm_attrs.axis < 0 ? norm_attrs.axis + 4 : norm_attrs.axis) != channels) return false;

    graph_->nodes[conv_index].name += "/unfolded";
    graph_->nodes[n].name += "/unfolded";
    const PlacementOverride placement(*graph_, conv.placement);
    const Blob gamma = B(norm.inputs[1]), beta = B(norm.inputs[2]);
    const Blob mean = B(norm.inputs[3]), variance = B(norm.inputs[4]);
    // s = gamma / sqrt(variance + epsilon), per output channel: the weight's first axis in both layouts.
    const Blob scale = Mul(gamma, Rsqrt(ScalarAdd(variance, norm_attrs.epsilon, norm.name + "/variance_eps"),
                                        norm.name + "/inv_std"),
                           norm.name + "/scale");
    const std::int64_t filters = Value(conv.inputs[1]).meta.shape[0];
    const Blob weight = Mul(B(conv.inputs[1]), Reshape(scale, {{filters, 1, 1, 1}}, norm.name + "/scale_oihw"),
                            conv.name + "/folded_weight");
    const Blob bias = Sub(beta, Mul(mean, scale, norm.name + "/mean_scaled"), norm.name + "/folded_bias");
    const Blob convolved = Conv2D(B(conv.inputs[0]), weight, conv_attrs, conv.name);
    const Blob folded = BiasAdd(convolved, bias, {.axis = channels}, norm.name);
    Replace(norm.outputs[0], folded.ValueId());
    return true;
  }

  // Every reader of `old_value` (nodes, outputs, watches, the loss) reads `new_value` instead.
  void Replace(int old_value, int new_value) {
    for (OpNode& node : graph_->nodes) {
      for (int& input : node.inputs) {
        if (input == old_value) input = new_value;
      }
    }
    for (auto& [name, value] : graph_->outputs) {
      if (value == old_value) value = new_value;
    }
    for (WatchSpec& watch : graph_->watches) {
      if (watch.value == old_value) watch.value = new_value;
    }
    if (graph_->loss_value == old_value) graph_->loss_value = new_value;
  }

  std::shared_ptr<JobGraph> graph_;
  std::vector<int> readers_;          // by value: how many node inputs read it
  std::unordered_set<int> exported_;  // values the job returns, watches or minimizes
};

}  // namespace

int FoldBatchNormIntoConvolutions(const std::shared_ptr<JobGraph>& graph) { return Folding(graph).Run(); }

}  // namespace weir::internal
