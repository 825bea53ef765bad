#pragma once
// The placement pass: the devices each node runs on, as indices of the plan's devices (device d of
// machine m is m * devices + d), checked against what the session has.
#include <vector>

#include "graph/job_graph.hpp"
#include "graph/planner/lowering.hpp"

namespace weir::internal {

/// Devices of each node (by node id) that the plan needs placed: every placeholder (the caller passes
/// them all, live or not) and every live node; empty for the others. A node without a placement runs
/// on the job's default placement, or on every device. A mirrored job in several processes is each
/// process's own: a placement names the same devices on every machine ("0:0-1", "1:0-1"), or machine
/// 0's only, and means those devices of each process. Throws std::invalid_argument naming the node,
/// its placement and what the session has, with the remedy, for a device the session lacks.
std::vector<std::vector<int>> PlaceNodes(const JobGraph& graph, const std::vector<bool>& live, const Topology& topology);

}  // namespace weir::internal
