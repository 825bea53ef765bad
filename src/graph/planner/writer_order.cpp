#include "graph/planner/writer_order.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "graph/op_registry.hpp"

namespace weir::internal {

void OrderWriters(const JobGraph& graph, const std::vector<bool>& live, const std::vector<Placed>& placed,
                  const std::vector<std::vector<int>>& node_tasks, Plan& plan) {
  std::vector<std::pair<int, int>> held;  // (writer, register it holds until its write is done)
  std::vector<bool> before_sink(plan.tasks.size(), false);  // a task one kernel makes for several nodes: one edge
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (!live[n]) continue;
    const OpNode& node = graph.nodes[n];
    if (node.outputs.empty()) {
      for (int task : node_tasks[n]) {
        if (before_sink[static_cast<std::size_t>(task)]) continue;
        before_sink[static_cast<std::size_t>(task)] = true;
        plan.AddControlEdge(task, plan.sink_task);
      }
    }
    if (node.type == kPlaceholderOp || node.type == kVariableOp || node.type == "constant") continue;
    for (int input : MutatedInputs(node.type, node.attrs, node.inputs.size())) {
      const int value = node.inputs[static_cast<std::size_t>(input)];
      if (plan.registers[static_cast<std::size_t>(placed[static_cast<std::size_t>(value)].registers.front())].variable.empty()) {
        throw std::invalid_argument(fmt::format("[{}] op '{}' writes input {} in place, which must be a variable",
                                                node.type, node.name, input));
      }
      const std::string variable =
          plan.registers[static_cast<std::size_t>(placed[static_cast<std::size_t>(value)].registers.front())].variable;
      for (const int writer : node_tasks[n]) {
        // The register the writer writes through: the variable, or its rows on the writer's device
        // (found by name: a fused kernel's inputs are not the update node's).
        const TaskDesc& task = plan.tasks[static_cast<std::size_t>(writer)];
        const auto through = std::find_if(task.consumed.begin(), task.consumed.end(), [&](int reg) {
          return plan.registers[static_cast<std::size_t>(reg)].variable == variable;
        });
        if (through == task.consumed.end()) {
          throw std::logic_error(fmt::format("[compile] op '{}' writes '{}' but reads no register of it", node.name, variable));
        }
        const int written = *through;
        const RegisterDesc desc = plan.registers[static_cast<std::size_t>(written)];
        if (writer == node_tasks[n].front()) plan.variables_written.push_back(desc.variable);
        // Every other reader of bytes the writer writes acts first, in this call; and the writer holds
        // every register of the variable that overlaps them (the whole one included), so that the
        // next call reads the variable only once the write is done.
        const std::size_t begin = desc.variable_offset;
        const std::size_t end = begin + desc.slot_bytes;
        for (std::size_t r = 0; r < plan.registers.size(); ++r) {
          const RegisterDesc& other = plan.registers[r];
          if (other.variable != desc.variable || other.variable_offset >= end ||
              other.variable_offset + other.slot_bytes <= begin) {
            continue;
          }
          const std::vector<int> readers = other.consumers;  // copy: control edges add registers
          for (int reader : readers) {
            // The op's other replicas write other rows: no order between them (it would be a cycle).
            if (std::find(node_tasks[n].begin(), node_tasks[n].end(), reader) == node_tasks[n].end()) {
              plan.AddControlEdge(reader, writer);
            }
          }
          if (static_cast<int>(r) != written) held.emplace_back(writer, static_cast<int>(r));
        }
      }
      for (const auto& [writer, reg] : held) plan.Consume(writer, reg);
      held.clear();
    }
  }
}

}  // namespace weir::internal
