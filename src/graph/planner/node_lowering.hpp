#pragma once
// The node lowering pass: every live node (or the fused kernel it ends) becomes its actors and
// registers, in node order: placeholders become input actors, variables variable actors, reshapes and
// parallel casts aliases of their input's registers, and every other op one kernel actor per replica,
// its inputs boxed (consistent view) or averaged (mirrored view) as its signature needs.
#include <vector>

#include "graph/planner/boxing.hpp"
#include "graph/planner/fused_kernels.hpp"
#include "graph/planner/gradient_averaging.hpp"
#include "graph/planner/lowering.hpp"

namespace weir::internal {

/// Fills `lowering.placed` and `lowering.node_tasks`; `devices` is the placement pass's result.
/// Leaves the last gradient bucket open. Throws std::invalid_argument naming the op for what cannot run.
void LowerNodes(Lowering& lowering, const std::vector<bool>& live, const std::vector<std::vector<int>>& devices,
                const FusedKernels& fused, Boxing& boxing, GradientAveraging& averaging);

}  // namespace weir::internal
