#include "graph/planner/liveness.hpp"

namespace weir::internal {

std::vector<bool> LiveNodes(const JobGraph& graph) {
  std::vector<bool> live(graph.nodes.size(), false);
  std::vector<int> stack;
  for (const auto& [name, value] : graph.outputs) stack.push_back(graph.values[static_cast<std::size_t>(value)].producer);
  // Ops without outputs exist for their side effect (optimizer updates): they are roots too.
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (graph.nodes[n].outputs.empty()) stack.push_back(static_cast<int>(n));
  }
  while (!stack.empty()) {
    const int node = stack.back();
    stack.pop_back();
    if (live[static_cast<std::size_t>(node)]) continue;
    live[static_cast<std::size_t>(node)] = true;
    for (int value : graph.nodes[static_cast<std::size_t>(node)].inputs) {
      stack.push_back(graph.values[static_cast<std::size_t>(value)].producer);
    }
  }
  return live;
}

}  // namespace weir::internal
