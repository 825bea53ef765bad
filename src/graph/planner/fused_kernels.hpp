#pragma once
// The fusion pass: which of the fusable chains (graph/fusion.hpp) the plan runs as one kernel, given
// where it runs. Every node of a chain but the last runs inside the last one's kernel and gets no task.
#include <vector>

#include "graph/fusion.hpp"
#include "graph/planner/lowering.hpp"

namespace weir::internal {

struct FusedKernels {
  std::vector<FusedChain> chains;
  std::vector<int> chain_ending_at;  // by node: the chain whose kernel stands where it stood, or -1
  std::vector<bool> fused_away;      // by node: runs inside a later node's fused kernel

  /// The chain whose kernel runs in place of `node`, or nullptr.
  const FusedChain* EndingAt(std::size_t node) const {
    return chain_ending_at[node] >= 0 ? &chains[static_cast<std::size_t>(chain_ending_at[node])] : nullptr;
  }
};

/// On several devices (or processes) each weight gradient is averaged (mirrored) or summed
/// (consistent) before its update, so a gradient's matmul is not fused with the update there. On one
/// device stream (a GPU's, or the CPU's run as one with `async_cpu_streams`) the updates of one
/// optimizer run one after the other anyway: one multi-tensor kernel makes them all.
FusedKernels ChooseFusedKernels(const JobGraph& graph, const std::vector<bool>& live, const Topology& topology,
                                const PlanOptions& options);

}  // namespace weir::internal
