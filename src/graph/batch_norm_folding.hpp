#pragma once
// Folds inference-mode batch normalization into the convolution before it. A predict job's
// batch_norm (training false) after a conv2d computes y = (conv(x, w) - mean) · s + beta with
// s = gamma / sqrt(variance + epsilon) per output channel, which is conv(x, w · s) + (beta - mean · s):
// the convolution with a scaled weight and a bias. The bias then fuses into the convolution (with a
// relu after it: graph/fusion.hpp), so the normalization's pass over the activations, and the relu's,
// are gone. The scaled weight and the bias are pure ops of the job's variables, which a predict job
// never writes: they are computed once and kept across calls (graph/planner/constant_results.hpp).
// Results change only by float rounding (the products see w · s instead of w).
#include <memory>

#include "graph/job_graph.hpp"

namespace weir::internal {

/// Rewrites `graph` (unbuilt, a predict job; before the layout and mixed-precision passes): each
/// f32 conv2d whose only reader is an inference-mode batch_norm over its output channels becomes a
/// conv2d of the scaled weight and a bias_add, under the convolution's and the normalization's names;
/// the replaced nodes stay without readers, renamed "<name>/unfolded" (the planner drops them). Values
/// the job returns or watches are never folded away. Returns how many normalizations it folded.
int FoldBatchNormIntoConvolutions(const std::shared_ptr<JobGraph>& graph);

}  // namespace weir::internal
