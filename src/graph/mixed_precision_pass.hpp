#pragma once
// Automatic mixed precision (OneFlow's enable_auto_mixed_precision). Products (matmul,
// batch_matmul, conv2d) run in a 16-bit dtype where the device has kernels for them and for their
// gradients; everything else (softmax, losses, reductions, normalization statistics, elementwise
// ops, optimizer updates) stays f32. Casts are inserted once per value: a weight is cast to 16 bits
// once per step however many products read it, and a product's result is cast back to f32 once,
// whatever reads it. Ops that only move their input's elements (reshape, flatten, transpose,
// identity) keep a 16-bit value 16-bit. Variables stay f32 (the master weights); the backward pass
// follows the rewritten ops, so a weight's gradient arrives in f32 through the gradient of its cast.
#include <memory>

#include "graph/job_graph.hpp"

namespace weir::internal {

/// Rewrites `graph` (unbuilt, before autodiff) for `config.mixed_precision`. The replaced f32 ops
/// stay in the graph with no consumers (the planner drops them) under "<name>/f32_op"; their 16-bit
/// replacements take the original names. Values the job returns or watches keep their dtype; a
/// value whose gradient is watched stays f32. Nodes are left in topological order. Returns the
/// number of ops that now run in 16 bits.
int UseMixedPrecision(const std::shared_ptr<JobGraph>& graph);

}  // namespace weir::internal
