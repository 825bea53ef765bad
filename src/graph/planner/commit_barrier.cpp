#include "graph/planner/commit_barrier.hpp"

#include "graph/op_registry.hpp"
#include "kernels/collectives/commit.hpp"

namespace weir::internal {

std::vector<bool> WriterTasks(const JobGraph& graph, const std::vector<bool>& live,
                              const std::vector<std::vector<int>>& node_tasks, const Plan& plan) {
  std::vector<bool> writer(plan.tasks.size(), false);
  bool any = false;
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    const OpNode& node = graph.nodes[n];
    if (!live[n] || node.type == kPlaceholderOp || node.type == kVariableOp || node.type == "constant") continue;
    if (FindOp(node.type).mutates_inputs.empty()) continue;
    if (!node.outputs.empty()) return {};
    for (int task : node_tasks[n]) writer[static_cast<std::size_t>(task)] = true;
    any = true;
  }
  return any ? writer : std::vector<bool>{};
}

void CommitBeforeWrites(const std::vector<bool>& writers, int control_stream, bool across_processes,
                        std::vector<int>& chain, Plan& plan) {
  static const std::any kNoAttrs;
  auto is_writer = [&](int task) {  // tasks added after WriterTasks (the commit) are not
    return static_cast<std::size_t>(task) < writers.size() && writers[static_cast<std::size_t>(task)];
  };
  const TensorMeta nothing{Shape{0}, DType::kU8};
  int commit = 0;
  if (across_processes) {
    const int stream = chain.empty() ? control_stream : plan.tasks[static_cast<std::size_t>(chain.back())].stream;
    commit = plan.AddTask(TaskKind::kKernel, "commit", stream);
    TaskDesc& task = plan.tasks[static_cast<std::size_t>(commit)];
    task.op_type = "commit";
    task.attrs = &kNoAttrs;
    task.output_metas = {nothing};
    task.kernel_factory = &MakeCommitAcrossProcessesKernel;
    task.collective = true;
    plan.process_collectives = true;
  } else {
    commit = plan.AddTask(TaskKind::kBarrier, "commit", control_stream);
  }
  plan.Consume(commit, plan.tasks[static_cast<std::size_t>(plan.source_task)].produced.front());  // never idle
  bool joined_chain = chain.empty() || !across_processes;
  for (int task = 0; task < commit; ++task) {
    const TaskDesc& desc = plan.tasks[static_cast<std::size_t>(task)];
    if (desc.kind != TaskKind::kKernel || is_writer(task)) continue;
    bool frontier = true;
    for (int reg : desc.produced) {
      for (int reader : plan.registers[static_cast<std::size_t>(reg)].consumers) {
        frontier = frontier && (reader == plan.sink_task || is_writer(reader));
      }
    }
    if (!frontier) continue;
    plan.AddControlEdge(task, commit);
    joined_chain = joined_chain || task == chain.back();
  }
  if (!joined_chain) plan.AddControlEdge(chain.back(), commit);
  if (across_processes) chain.push_back(commit);
  const int committed = plan.AddRegister("commit", commit, 1, nothing);
  for (int task = 0; task < commit; ++task) {
    if (is_writer(task)) plan.Consume(task, committed);
  }
}

}  // namespace weir::internal
