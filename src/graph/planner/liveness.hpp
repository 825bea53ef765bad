#pragma once
// The planner's first pass: the nodes some output, or some side effect (an optimizer update), needs.
// Everything else is dead code and gets no actor.
#include <vector>

#include "graph/job_graph.hpp"

namespace weir::internal {

/// For each node of `graph`: whether an output depends on it, or it is an op without outputs (which
/// exists for its side effect), or such an op depends on it.
std::vector<bool> LiveNodes(const JobGraph& graph);

}  // namespace weir::internal
