#include "graph/planner/fused_kernels.hpp"

#include <algorithm>

namespace weir::internal {

FusedKernels ChooseFusedKernels(const JobGraph& graph, const std::vector<bool>& live, const Topology& topology,
                                const PlanOptions& options) {
  FusedKernels fused;
  fused.chains = FindFusedChains(graph, live, options.device_kind == Device::Kind::kCpu);
  if (topology.all_devices > 1 || topology.across_processes) {
    std::erase_if(fused.chains, [](const FusedChain& chain) { return chain.op_type == "matmul_sgd_update"; });
  }
  // One multi-tensor update kernel: one launch on a GPU instead of one per variable.
  if ((options.device_kind == Device::Kind::kCuda || options.async_cpu_streams) && topology.all_devices == 1 &&
      !topology.across_processes && options.compute_streams == 1) {
    std::vector<bool> taken(graph.nodes.size(), false);
    for (const FusedChain& chain : fused.chains) {
      for (int node : chain.nodes) taken[static_cast<std::size_t>(node)] = true;
    }
    for (FusedChain& group : FindMultiTensorUpdates(graph, live, taken)) fused.chains.push_back(std::move(group));
  }
  fused.chain_ending_at.assign(graph.nodes.size(), -1);
  fused.fused_away.assign(graph.nodes.size(), false);
  for (std::size_t c = 0; c < fused.chains.size(); ++c) {
    const FusedChain& chain = fused.chains[c];
    fused.chain_ending_at[static_cast<std::size_t>(chain.Last())] = static_cast<int>(c);
    for (int node : chain.nodes) {
      if (node != chain.Last()) fused.fused_away[static_cast<std::size_t>(node)] = true;
    }
  }
  return fused;
}

}  // namespace weir::internal
