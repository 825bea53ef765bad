#pragma once
// The output pass: the registers the sink reads for each of the job's outputs, and the sink itself.
#include <vector>

#include "graph/planner/boxing.hpp"
#include "graph/planner/gradient_averaging.hpp"
#include "graph/planner/lowering.hpp"

namespace weir::internal {

/// The registers of each output (graph.outputs order), whose pieces the sink concatenates along axis
/// 0: a mirrored job's per-device results (partial sums averaged first); a consistent job's result
/// whole, or split along axis 0 on one process's devices (gathered first otherwise). Every job returns
/// a variable it writes in place as it was before the call's writes, through an identity copy that the
/// writers wait for (writer_order.hpp): the sink itself runs after the writes.
std::vector<std::vector<int>> OutputRegisters(Lowering& lowering, const std::vector<bool>& live, Boxing& boxing,
                                              GradientAveraging& averaging);

/// Makes the sink read `registers` (OutputRegisters's result) and records the outputs' names, metas
/// and pieces in the plan.
void ConnectSink(Plan& plan, const JobGraph& graph, const std::vector<std::vector<int>>& registers);

}  // namespace weir::internal
