#include "graph/planner/unread_inputs.hpp"

#include <algorithm>

namespace weir::internal {

void DropUnreadInputsAndVariables(Plan& plan) {
  std::vector<bool> dropped_tasks(plan.tasks.size(), false), dropped_registers(plan.registers.size(), false);
  bool any = false;
  for (const TaskDesc& task : plan.tasks) {
    if (task.kind != TaskKind::kInput && task.kind != TaskKind::kVariable) continue;
    const bool unread = std::all_of(task.produced.begin(), task.produced.end(), [&](int reg) {
      return plan.registers[static_cast<std::size_t>(reg)].consumers.empty();
    });
    if (!unread) continue;
    any = true;
    dropped_tasks[static_cast<std::size_t>(task.id)] = true;
    for (int reg : task.produced) dropped_registers[static_cast<std::size_t>(reg)] = true;
  }
  if (any) plan.RemoveTasks(dropped_tasks, dropped_registers);
}

}  // namespace weir::internal
