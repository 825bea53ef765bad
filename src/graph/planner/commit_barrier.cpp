#include "graph/planner/commit_barrier.hpp"

#include "graph/op_registry.hpp"

namespace weir::internal {

void CommitBeforeWrites(const JobGraph& graph, const std::vector<bool>& live,
                        const std::vector<std::vector<int>>& node_tasks, int stream, Plan& plan) {
  std::vector<bool> writer(plan.tasks.size(), false);
  bool any = false;
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    const OpNode& node = graph.nodes[n];
    if (!live[n] || node.type == kPlaceholderOp || node.type == kVariableOp || node.type == "constant") continue;
    if (FindOp(node.type).mutates_inputs.empty()) continue;
    if (!node.outputs.empty()) return;
    for (int task : node_tasks[n]) writer[static_cast<std::size_t>(task)] = true;
    any = true;
  }
  if (!any) return;
  const int barrier = plan.AddTask(TaskKind::kBarrier, "commit", stream);
  plan.Consume(barrier, plan.tasks[static_cast<std::size_t>(plan.source_task)].produced.front());  // never idle
  for (int task = 0; task < barrier; ++task) {
    if (plan.tasks[static_cast<std::size_t>(task)].kind != TaskKind::kKernel || writer[static_cast<std::size_t>(task)]) continue;
    bool frontier = true;
    for (int reg : plan.tasks[static_cast<std::size_t>(task)].produced) {
      for (int reader : plan.registers[static_cast<std::size_t>(reg)].consumers) {
        frontier = frontier && (reader == plan.sink_task || writer[static_cast<std::size_t>(reader)]);
      }
    }
    if (frontier) plan.AddControlEdge(task, barrier);
  }
  const int committed = plan.AddRegister("commit", barrier, 1, {Shape{0}, DType::kU8});
  for (int task = 0; task < barrier; ++task) {
    if (writer[static_cast<std::size_t>(task)]) plan.Consume(task, committed);
  }
}

}  // namespace weir::internal
