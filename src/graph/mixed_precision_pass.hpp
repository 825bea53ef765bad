#pragma once
// Automatic mixed precision (OneFlow's enable_auto_mixed_precision). Products (matmul,
// batch_matmul, conv2d) run in a 16-bit dtype where the device has kernels for them and for their
// gradients; everything else (softmax, losses, reductions, normalization statistics, most elementwise
// ops, optimizer updates) stays f32. Casts are inserted once per value: a weight is cast to 16 bits
// once per step however many products read it, and a 16-bit value is cast back to f32 once, whatever
// reads it. Some ops continue a 16-bit chain where the device has 16-bit kernels for them (and their
// gradients), but never start one: those that only move their input's elements (reshape, flatten,
// transpose, identity), max pooling, the activations relu, gelu, sigmoid and tanh, the sum of two 16-bit values
// of one shape, batch_norm (16-bit data, f32 parameters and statistics) and, in predict jobs,
// bias_add (an f32 bias added to 16-bit data). Variables stay f32 (the
// master weights); the backward pass follows the rewritten ops, so a weight's gradient arrives in f32
// through the gradient of its cast.
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
