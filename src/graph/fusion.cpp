#include "graph/fusion.hpp"

#include "graph/op_registry.hpp"
#include "kernels/attrs/fused_attrs.hpp"
#include "kernels/attrs/update_attrs.hpp"

namespace weir::internal {

namespace {

// Who reads each value: the live nodes (one entry per input slot) and the job's outputs.
struct Readers {
  std::vector<int> count;
  std::vector<int> only;  // the reading node when count is 1 and it is a node

  Readers(const JobGraph& graph, const std::vector<bool>& live)
      : count(graph.values.size(), 0), only(graph.values.size(), -1) {
    for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
      if (!live[n]) continue;
      for (int value : graph.nodes[n].inputs) {
        ++count[static_cast<std::size_t>(value)];
        only[static_cast<std::size_t>(value)] = static_cast<int>(n);
      }
    }
    for (const auto& [name, value] : graph.outputs) count[static_cast<std::size_t>(value)] += 2;  // never fused
  }

  /// The single node that reads `value` (through its input `slot`), or -1.
  int Sole(const JobGraph& graph, int value, std::size_t slot) const {
    if (count[static_cast<std::size_t>(value)] != 1) return -1;
    const int node = only[static_cast<std::size_t>(value)];
    const std::vector<int>& inputs = graph.nodes[static_cast<std::size_t>(node)].inputs;
    return slot < inputs.size() && inputs[slot] == value ? node : -1;
  }
};

bool IsRelu(const OpNode& node) {
  return node.type == "unary" && std::any_cast<const UnaryAttrs&>(node.attrs).kind == UnaryOpKind::kRelu;
}

// The axis of the head's output that bias_add must add along, or -1 if the head cannot fuse.
int BiasAxis(const JobGraph& graph, const OpNode& head) {
  const Shape& out = graph.values[static_cast<std::size_t>(head.outputs[0])].meta.shape;
  if (out.NumElements() == 0) return -1;
  if (head.type == "conv2d") {
    return std::any_cast<const Conv2DAttrs&>(head.attrs).data_format == DataFormat::kNHWC ? 3 : 1;
  }
  if (head.type == "matmul") {
    const auto& attrs = std::any_cast<const MatMulAttrs&>(head.attrs);
    const Shape& a = graph.values[static_cast<std::size_t>(head.inputs[0])].meta.shape;
    const std::int64_t k = attrs.transpose_a ? a[0] : a[1];
    // oneDNN scales after adding the bias: only unscaled products fuse. An empty sum has no primitive.
    return attrs.alpha == 1.0 && k > 0 ? 1 : -1;
  }
  return -1;
}

// Whether every input of `node` has `dtype`.
bool AllOf(const JobGraph& graph, const OpNode& node, DType dtype) {
  for (int value : node.inputs) {
    if (graph.values[static_cast<std::size_t>(value)].meta.dtype != dtype) return false;
  }
  return true;
}

// Products whose CPU kernels take bf16 operands and write an f32 result (oneDNN's mixed data types).
bool IsLowPrecisionHead(const std::string& type) {
  return type == "matmul" || type == "batch_matmul" || type == "conv2d" || type == "conv2d_grad_data" ||
         type == "conv2d_grad_filter";
}

bool IsCastTo(const OpNode& node, DType dtype) {
  return node.type == "cast" && std::any_cast<const CastAttrs&>(node.attrs).dtype == dtype;
}

// An SGD step that only scales the gradient: what a matmul's output scale and sum post-op compute.
bool IsPlainSgd(const OpNode& node) {
  if (node.type != "sgd_update" || node.inputs.size() != 3) return false;
  const auto& attrs = std::any_cast<const UpdateAttrs&>(node.attrs);
  return attrs.regularizer.l1 == 0 && attrs.regularizer.l2 == 0;
}

// The bias_add that is the only reader of `value` and adds along its `axis`, or -1: of f32 values, or
// an f32 bias added to a bf16 value (a predict job's mixed precision).
int BiasAddAlong(const JobGraph& graph, const Readers& readers, int value, int axis) {
  const int node = readers.Sole(graph, value, 0);
  if (node < 0) return -1;
  const OpNode& add = graph.nodes[static_cast<std::size_t>(node)];
  if (add.type != "bias_add") return -1;
  if (graph.values[static_cast<std::size_t>(add.inputs[1])].meta.dtype != DType::kF32) return -1;
  const DType x = graph.values[static_cast<std::size_t>(value)].meta.dtype;
  if (x != DType::kF32 && x != DType::kBF16) return -1;
  const int rank = graph.values[static_cast<std::size_t>(value)].meta.shape.Rank();
  const int add_axis = std::any_cast<const BiasAddAttrs&>(add.attrs).axis;
  return (add_axis < 0 ? add_axis + rank : add_axis) == axis ? node : -1;
}

// The add that is the only reader of `value` and sums it with another value of its shape and dtype (a
// residual connection, no broadcast), or -1.
int ResidualSumOf(const JobGraph& graph, const Readers& readers, int value) {
  for (std::size_t slot = 0; slot < 2; ++slot) {
    const int node = readers.Sole(graph, value, slot);
    if (node < 0) continue;
    const OpNode& sum = graph.nodes[static_cast<std::size_t>(node)];
    if (sum.type != "add" || sum.inputs.size() != 2 || sum.inputs[0] == sum.inputs[1]) return -1;
    const TensorMeta& other = graph.values[static_cast<std::size_t>(sum.inputs[1 - slot])].meta;
    return other == graph.values[static_cast<std::size_t>(value)].meta ? node : -1;
  }
  return -1;
}

}  // namespace

std::vector<FusedChain> FindFusedChains(const JobGraph& graph, const std::vector<bool>& live, bool fuse_casts) {
  const Readers readers(graph, live);
  const std::vector<bool> written = WrittenValues(graph, live);
  std::vector<FusedChain> chains;
  // Nodes in a chain already: a residual sum of two convolutions' biases (a ResNet block with a
  // projection shortcut) goes to the first chain that reaches it; the other chain ends at its bias.
  std::vector<bool> claimed(graph.nodes.size(), false);
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    const OpNode& head = graph.nodes[n];
    if (!live[n]) continue;
    // A bf16 product whose result is cast to f32 (mixed precision) writes f32 itself: the chain
    // starts with both, and what follows reads the cast's output. A bf16 conv2d or matmul without its
    // cast may still take the bias_add after it (the chain then writes bf16).
    int cast = -1;
    const bool low =
        fuse_casts && head.outputs.size() == 1 && AllOf(graph, head, DType::kBF16) && IsLowPrecisionHead(head.type);
    if (low) {
      cast = readers.Sole(graph, head.outputs[0], 0);
      if (cast >= 0 && !IsCastTo(graph.nodes[static_cast<std::size_t>(cast)], DType::kF32)) cast = -1;
      if (cast < 0 && head.type != "conv2d" && head.type != "matmul") continue;
    } else if ((head.type != "conv2d" && head.type != "matmul") || !AllOf(graph, head, DType::kF32)) {
      continue;
    }
    std::vector<int> nodes{static_cast<int>(n)};
    if (cast >= 0) nodes.push_back(cast);
    const int result = graph.nodes[static_cast<std::size_t>(nodes.back())].outputs[0];
    const int axis = BiasAxis(graph, head);
    if (axis >= 0 && head.type == "matmul" && !(low && cast < 0)) {
      const int update = readers.Sole(graph, result, 1);  // sgd_update(variable, gradient, lr)
      // A matmul fused with the update of one variable must not read another variable that some update
      // writes: that update waits for every reader of its variable, the fused kernel among them, and when
      // it is itself fused with a matmul reading the first variable (y = x @ w, both variables, plain
      // SGD), each waits for the other.
      auto written_elsewhere = [&](int operand) {
        return written[static_cast<std::size_t>(operand)] &&
               operand != graph.nodes[static_cast<std::size_t>(update)].inputs[0];
      };
      if (update >= 0 && IsPlainSgd(graph.nodes[static_cast<std::size_t>(update)]) &&
          !written_elsewhere(head.inputs[0]) && !written_elsewhere(head.inputs[1])) {
        const OpNode& sgd = graph.nodes[static_cast<std::size_t>(update)];
        const auto& update_attrs = std::any_cast<const UpdateAttrs&>(sgd.attrs);
        nodes.push_back(update);
        chains.push_back({"matmul_sgd_update",
                          nodes,
                          {head.inputs[0], head.inputs[1], sgd.inputs[0], sgd.inputs[2]},
                          FusedMatMulSgdAttrs{std::any_cast<const MatMulAttrs&>(head.attrs),
                                              update_attrs.gradient_scale}});
        continue;
      }
    }
    const int bias_add = axis < 0 ? -1 : BiasAddAlong(graph, readers, result, axis);
    if (bias_add < 0) {
      // Nothing to add: a bf16 product still takes in its cast, writing f32 itself.
      if (cast >= 0) chains.push_back({head.type, nodes, head.inputs, head.attrs});
      continue;
    }

    const OpNode& add = graph.nodes[static_cast<std::size_t>(bias_add)];
    FusedChain chain;
    nodes.push_back(bias_add);
    chain.nodes = nodes;
    chain.inputs = {head.inputs[0], head.inputs[1], add.inputs[1]};
    int last = add.outputs[0];
    // A residual sum after a CPU channels-last convolution's bias: oneDNN's binary post-op.
    int residual_sum = -1;
    if (fuse_casts && head.type == "conv2d" && axis == 3) residual_sum = ResidualSumOf(graph, readers, last);
    if (residual_sum >= 0 && claimed[static_cast<std::size_t>(residual_sum)]) residual_sum = -1;
    if (residual_sum >= 0) {
      const OpNode& sum = graph.nodes[static_cast<std::size_t>(residual_sum)];
      chain.nodes.push_back(residual_sum);
      chain.inputs.push_back(sum.inputs[0] == last ? sum.inputs[1] : sum.inputs[0]);
      last = sum.outputs[0];
    }
    const int relu = readers.Sole(graph, last, 0);
    const bool with_relu = relu >= 0 && IsRelu(graph.nodes[static_cast<std::size_t>(relu)]);
    if (with_relu) chain.nodes.push_back(relu);
    const FusedActivation activation = with_relu ? FusedActivation::kRelu : FusedActivation::kNone;
    if (head.type == "conv2d") {
      chain.op_type = "conv2d_bias_act";
      chain.attrs = FusedConv2DAttrs{std::any_cast<const Conv2DAttrs&>(head.attrs), activation, residual_sum >= 0};
    } else {
      chain.op_type = "matmul_bias_act";
      chain.attrs = FusedMatMulAttrs{std::any_cast<const MatMulAttrs&>(head.attrs), activation};
    }
    for (int node : chain.nodes) claimed[static_cast<std::size_t>(node)] = true;
    chains.push_back(std::move(chain));
  }
  return chains;
}

std::vector<FusedChain> FindMultiTensorUpdates(const JobGraph& graph, const std::vector<bool>& live,
                                               const std::vector<bool>& taken) {
  // The inputs every member of a group shares: the learning rate (input 2) and Adam's train step (5).
  auto shared_input = [&](const OpNode& node, std::size_t slot) { return slot < node.inputs.size() ? node.inputs[slot] : -1; };
  std::vector<FusedChain> groups;
  std::vector<const OpNode*> firsts;  // each group's first member: what the others must match
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    const OpNode& node = graph.nodes[n];
    if (!live[n] || taken[n]) continue;
    if (node.type != "sgd_update" && node.type != "momentum_update" && node.type != "adam_update" &&
        node.type != "rmsprop_update") {
      continue;
    }
    const auto& attrs = std::any_cast<const UpdateAttrs&>(node.attrs);
    if (attrs.skip_if) continue;  // dynamic loss scaling's updates: multi_update takes no skip flag
    const DType dtype = graph.values[static_cast<std::size_t>(node.inputs[0])].meta.dtype;
    std::size_t g = 0;
    for (; g < groups.size(); ++g) {
      const OpNode& first = *firsts[g];
      if (first.type == node.type && first.inputs.size() == node.inputs.size() &&
          graph.values[static_cast<std::size_t>(first.inputs[0])].meta.dtype == dtype &&
          std::any_cast<const UpdateAttrs&>(first.attrs).optimizer == attrs.optimizer &&
          shared_input(first, 2) == shared_input(node, 2) && shared_input(first, 5) == shared_input(node, 5)) {
        break;
      }
    }
    if (g == groups.size()) {
      groups.push_back({"multi_update", {}, {}, MultiUpdateAttrs{node.type, {}, {}}});
      firsts.push_back(&node);
    }
    FusedChain& group = groups[g];
    group.nodes.push_back(static_cast<int>(n));
    group.inputs.insert(group.inputs.end(), node.inputs.begin(), node.inputs.end());
    auto& multi = std::any_cast<MultiUpdateAttrs&>(group.attrs);
    multi.members.push_back(attrs);
    multi.arity.push_back(static_cast<int>(node.inputs.size()));
  }
  std::erase_if(groups, [](const FusedChain& group) { return group.nodes.size() < 2; });
  return groups;
}

}  // namespace weir::internal
