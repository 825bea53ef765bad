#include "graph/planner/constant_results.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graph/op_registry.hpp"

namespace weir::internal {

void MarkConstantResults(Plan& plan, bool cpu_device_streams) {
  const std::set<std::string> written(plan.variables_written.begin(), plan.variables_written.end());
  // By register: the variables its contents are a function of; unset while unknown or not constant.
  std::vector<std::optional<std::set<std::string>>> constant_over(plan.registers.size());
  for (const RegisterDesc& reg : plan.registers) {
    if (!reg.variable.empty() && written.count(reg.variable) == 0) {
      constant_over[static_cast<std::size_t>(reg.id)] = std::set<std::string>{reg.variable};
    }
  }
  const auto on_actor_threads = [&](const TaskDesc& task) {
    const StreamId& stream = plan.streams[static_cast<std::size_t>(task.stream)];
    return stream.device.kind == Device::Kind::kCpu && !(cpu_device_streams && stream.kind == StreamKind::kCompute);
  };
  // Tasks need not be in order: repeat until a pass marks nothing new (chains are a few ops long).
  for (bool changed = true; changed;) {
    changed = false;
    for (TaskDesc& task : plan.tasks) {
      if (task.kind != TaskKind::kKernel || !task.constant_over.empty() || task.consumed.empty()) continue;
      const OpDef* def = TryFindOp(task.op_type);
      if (def == nullptr || !def->pure || !on_actor_threads(task)) continue;
      std::set<std::string> variables;
      const bool constant = std::all_of(task.consumed.begin(), task.consumed.end(), [&](int reg) {
        const auto& over = constant_over[static_cast<std::size_t>(reg)];
        if (over) variables.insert(over->begin(), over->end());
        return over.has_value();
      });
      if (!constant) continue;
      task.constant_over.assign(variables.begin(), variables.end());
      for (int reg : task.produced) constant_over[static_cast<std::size_t>(reg)] = variables;
      changed = true;
    }
  }
}

}  // namespace weir::internal
