#pragma once
// The commit pass: a failed call writes no variable.
#include <vector>

#include "graph/job_graph.hpp"
#include "plan/plan.hpp"

namespace weir::internal {

/// By task id of `plan`: the tasks of the ops that write variables in place (optimizer updates, the
/// train step's increment, moving averages). Empty when the job has none, or when a writer has outputs
/// others read (none today), where a commit before the writes cannot be placed.
std::vector<bool> WriterTasks(const JobGraph& graph, const std::vector<bool>& live,
                              const std::vector<std::vector<int>>& node_tasks, const Plan& plan);

/// A call that fails leaves every variable as it was: the `writers` (WriterTasks) act only after a
/// commit that every other kernel of the call reaches first and that passes a failure on, so they
/// skip their kernels when any kernel of the call failed. The commit joins the kernels whose outputs
/// only writers or the sink read (a failure anywhere upstream reaches one of them). Writes no longer
/// overlap the backward pass; they are a small part of a step on the CPU.
///
/// In one process the commit is a barrier on `control_stream`. Across processes
/// (`across_processes`) it is a commit actor (kernels/collectives/commit.hpp) that also asks every
/// other process whether its call failed, so that a call failing in one process writes no variable in
/// any (a failure no collective depends on included): it is the last of `chain`, the process's
/// collectives in the order every process issues them, and runs on their stream.
void CommitBeforeWrites(const std::vector<bool>& writers, int control_stream, bool across_processes,
                        std::vector<int>& chain, Plan& plan);

}  // namespace weir::internal
