#pragma once
// The commit pass: a failed call writes no variable.
#include <vector>

#include "graph/job_graph.hpp"
#include "plan/plan.hpp"

namespace weir::internal {

/// A call that fails leaves every variable as it was: the ops that write variables in place (optimizer
/// updates, the train step's increment, moving averages) act only after a barrier that every other
/// kernel of the call reaches first and that passes a failure on, so they skip their kernels when any
/// kernel of the call failed. The barrier joins the kernels whose outputs only writers or the sink read
/// (a failure anywhere upstream reaches one of them). Writes no longer overlap the backward pass; they
/// are a small part of a step on the CPU. Not done where a writer has outputs others read (none today).
/// The barrier runs on `stream` (the control stream).
void CommitBeforeWrites(const JobGraph& graph, const std::vector<bool>& live,
                        const std::vector<std::vector<int>>& node_tasks, int stream, Plan& plan);

}  // namespace weir::internal
