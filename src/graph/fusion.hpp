#pragma once
// Kernel fusion at plan time: conv2d or matmul, the bias_add after it and an optional relu run as
// one oneDNN primitive with a bias and a relu post-op (kernels/fused_attrs.hpp), saving two passes
// over the result and two actors. It runs after autodiff, on the graph as the planner sees it:
// the backward ops read the relu's output (or the bias_add's), which the fused kernel produces.
#include <any>
#include <string>
#include <vector>

#include "graph/job_graph.hpp"

namespace weir::internal {

struct FusedChain {
  std::string op_type;  // "conv2d_bias_act", "matmul_bias_act", "matmul_sgd_update" or "multi_update"
  std::vector<int> nodes;   // head first; the fused kernel stands where the last one stood
  std::vector<int> inputs;  // value ids: the fused kernel's inputs
  std::any attrs;           // FusedConv2DAttrs, FusedMatMulAttrs, FusedMatMulSgdAttrs or MultiUpdateAttrs

  /// The node whose outputs (none for an update) the fused kernel produces, and whose in-place
  /// writes it makes.
  int Last() const { return nodes.back(); }
};

/// The updates of one kind (sgd_update, momentum_update, adam_update or rmsprop_update), one
/// optimizer, one dtype, one learning rate and one train step among the live nodes not in `taken`
/// (already fused), grouped into one "multi_update" kernel per group of two or more (MultiUpdateAttrs):
/// on a GPU, one launch for every tensor, as PyTorch's foreach and fused optimizers and apex's
/// multi-tensor apply. The kernel stands where the group's last update stood; it waits for every
/// gradient of its group, so the planner asks for it only where updates do not overlap other work
/// anyway (one device stream).
std::vector<FusedChain> FindMultiTensorUpdates(const JobGraph& graph, const std::vector<bool>& live,
                                               const std::vector<bool>& taken);

/// The fusable chains among the live nodes, f32, with no intermediate value returned or watched:
/// a conv2d or matmul whose only reader is a bias_add along its channels (columns), that
/// bias_add's only reader a relu (taken when present); and a matmul whose only reader is a plain
/// sgd_update (no momentum, no regularization) taking it as the gradient, when neither of the
/// matmul's operands is a variable that another op writes in place. With `fuse_casts` (the CPU,
/// whose oneDNN kernels mix data types), the same with a bf16 product whose only reader is a cast to
/// f32 (mixed precision) between the product and the rest; a bf16 matmul, batch_matmul, conv2d or
/// convolution gradient followed by nothing else but that cast becomes that op writing f32 (chain op
/// type = the product's); and a bf16 conv2d or matmul whose bias_add kept the value bf16 (an f32 bias:
/// a predict job's mixed precision) with that bias_add and its relu, writing bf16. On the CPU a
/// channels-last conv2d's chain also takes an add of the bias_add's result and another value of its
/// shape and dtype (a residual connection), before the relu.
std::vector<FusedChain> FindFusedChains(const JobGraph& graph, const std::vector<bool>& live, bool fuse_casts);

}  // namespace weir::internal
