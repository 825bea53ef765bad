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
  std::string op_type;  // "conv2d_bias_act" or "matmul_bias_act"
  int head = -1;        // the conv2d or matmul node
  int bias_add = -1;
  int relu = -1;        // -1: no activation
  std::any attrs;       // FusedConv2DAttrs or FusedMatMulAttrs

  /// The node whose output the fused kernel produces.
  int Last() const { return relu >= 0 ? relu : bias_add; }
};

/// The fusable chains among the live nodes: f32, a head whose only reader is a bias_add along its
/// channels (columns), that bias_add's only reader a relu (taken when present), and no
/// intermediate value returned or watched by the job.
std::vector<FusedChain> FindFusedChains(const JobGraph& graph, const std::vector<bool>& live);

}  // namespace weir::internal
