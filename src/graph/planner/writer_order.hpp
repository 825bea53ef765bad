#pragma once
// The writer ordering pass: in-place writes after every other reader, and a call complete only once
// its writes are.
#include <vector>

#include "graph/planner/lowering.hpp"

namespace weir::internal {

/// Ops that write an input in place (optimizer updates) act after every other reader of that input
/// in the same call; and a call completes only once its writes are done, so that the next call, a
/// checkpoint or another job sees the updated values.
/// `placed` and `node_tasks` are the lowering's (lowering.hpp); the sink must exist. Throws
/// std::invalid_argument naming the op when it writes in place an input that is not a variable.
void OrderWriters(const JobGraph& graph, const std::vector<bool>& live, const std::vector<Placed>& placed,
                  const std::vector<std::vector<int>>& node_tasks, Plan& plan);

}  // namespace weir::internal
