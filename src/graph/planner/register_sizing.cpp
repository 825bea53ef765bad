#include "graph/planner/register_sizing.hpp"

namespace weir::internal {

void SizePipelineRegisters(Plan& plan) {
  for (RegisterDesc& reg : plan.registers) {
    if (reg.slot_bytes == 0 || !reg.variable.empty() || reg.register_num > 1) continue;
    const StreamId& from = plan.streams[static_cast<std::size_t>(plan.tasks[static_cast<std::size_t>(reg.producer)].stream)];
    for (int consumer : reg.consumers) {
      const StreamId& to = plan.streams[static_cast<std::size_t>(plan.tasks[static_cast<std::size_t>(consumer)].stream)];
      if (from.kind == StreamKind::kCompute && to.kind == StreamKind::kCompute && !(from.device == to.device)) {
        reg.register_num = 2;
      }
    }
  }
}

}  // namespace weir::internal
