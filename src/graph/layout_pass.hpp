#pragma once
// Chooses the memory layout of convolution chains for speed. Users (and OneFlow's defaults) write
// NCHW; oneDNN's CPU convolutions run fastest on blocked or channels-last data, and reordering
// NCHW registers to blocked layout and back around every convolution cost LeNet a fifth of its
// step. This pass runs each f32 NCHW conv2d as an NHWC conv2d and carries NHWC through the ops that
// follow it when they have an NHWC form (bias_add, relu, sigmoid, tanh, max/avg pooling, batch
// normalization over the channels, the sum of two chain values (a residual connection), further
// convolutions), transposing back to NCHW only where a value leaves the chain; a sum or mean over
// height and width (a global pool) ends a chain without one. Values the job
// returns or watches are unchanged; only the kernels that compute them differ. A value whose
// gradient is watched ends a chain (its gradient must be that of an NCHW value on the loss's path).
#include <memory>

#include "graph/job_graph.hpp"

namespace weir::internal {

/// Rewrites `graph` (unbuilt, before autodiff, so gradients follow the rewritten ops). The replaced
/// NCHW ops stay in the graph with no consumers (the planner drops them) under the name
/// "<name>/nchw"; their NHWC replacements take the original names. Nodes are left in topological
/// order. A graph without f32 NCHW conv2d is unchanged.
void UseChannelsLastConvolutions(const std::shared_ptr<JobGraph>& graph);

}  // namespace weir::internal
