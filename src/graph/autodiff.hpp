#pragma once
// Reverse-mode automatic differentiation over the job IR: appends gradient ops to the job being
// built, using each op's gradient rule (OpDef::gradient, in the op's own file).
#include <vector>

#include "graph/job_graph.hpp"

namespace weir::internal {

/// d(sum(loss * seed))/d(wrt[i]) for every i, as blobs of loss's job; `seed` has loss's shape
/// (ones when undefined). An undefined Blob where wrt[i] does not reach the loss. Throws
/// std::invalid_argument naming the op when a path to the loss crosses an op without a gradient.
std::vector<Blob> BuildGradients(const Blob& loss, const std::vector<Blob>& wrt, const Blob& seed = Blob());

/// Sums blobs of one shape (undefined ones are skipped); undefined if all are.
Blob SumBlobs(const std::vector<Blob>& blobs);

}  // namespace weir::internal
