#include "graph/planner/outputs.hpp"

#include <any>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "graph/op_registry.hpp"

namespace weir::internal {

std::vector<std::vector<int>> OutputRegisters(Lowering& lowering, const std::vector<bool>& live, Boxing& boxing,
                                              GradientAveraging& averaging) {
  const JobGraph& graph = lowering.graph;
  Plan& plan = lowering.plan;
  const bool mirrored = lowering.topology.mirrored;
  // The sink cannot read a variable the job writes directly: it runs after the writes (a call
  // completes only once they are done), and ordering it before them would make a cycle. A variable the
  // job does not write needs no copy, nor a split variable the job writes, which is gathered into its
  // own buffer before the writes.
  const std::vector<bool> written = WrittenValues(graph, live);
  std::map<int, int> copies;  // written value -> its copy's register, however many outputs name it
  std::vector<std::vector<int>> output_registers;
  for (const auto& [name, value] : graph.outputs) {
    if (mirrored && lowering.PlacedOf(value).sbp.IsPartialSum()) averaging.AllReduce({value});
    // Split over processes, every process returns the whole result.
    Placed piece = lowering.PlacedOf(value);
    if (!mirrored && (!(piece.sbp.IsBroadcast() || (piece.sbp == Sbp::S(0) && lowering.topology.split_processes == 1)) ||
                      (written[static_cast<std::size_t>(value)] && piece.registers.size() > 1))) {
      piece = boxing.Box(value, Sbp::B(), piece.devices);
    }
    if (!written[static_cast<std::size_t>(value)] || lowering.Register(piece.registers.front()).variable.empty()) {
      output_registers.push_back(piece.registers);
      continue;
    }
    const auto [copy, inserted] = copies.try_emplace(value, -1);
    if (inserted) {
      static const std::any kNoAttrs;
      const ValueInfo& info = lowering.Value(value);
      const int task = lowering.AddKernelTask("identity", fmt::format("{}_copy", info.name), &kNoAttrs, {info.meta},
                                              {info.meta}, lowering.DeviceStream(piece.devices.front()));
      if (lowering.topology.split_processes > 1) lowering.everywhere.push_back(task);
      lowering.Task(task).input_slots.push_back(plan.Consume(task, piece.registers.front()));
      copy->second = plan.AddRegister(fmt::format("{}_copy/out", info.name), task, 1, info.meta);
    }
    output_registers.push_back({copy->second});
  }
  return output_registers;
}

void ConnectSink(Plan& plan, const JobGraph& graph, const std::vector<std::vector<int>>& registers) {
  for (std::size_t i = 0; i < graph.outputs.size(); ++i) {
    const auto& [name, value] = graph.outputs[i];
    const TensorMeta& meta = graph.values[static_cast<std::size_t>(value)].meta;
    const int pieces = static_cast<int>(registers[i].size());
    for (int r = 0; r < pieces; ++r) {
      const int reg = registers[i][static_cast<std::size_t>(r)];
      const int slot = plan.Consume(plan.sink_task, reg);
      TaskDesc& sink = plan.tasks[static_cast<std::size_t>(plan.sink_task)];
      sink.input_slots.push_back(slot);
      // The output's piece, in the output's shape: a reshape's register is its input's (an alias),
      // with the same bytes in another shape. A mirrored job's pieces are the per-device values.
      const TensorMeta piece{pieces == 1 || plan.mirrored ? meta.shape : PieceShape(meta.shape, Sbp::S(0), pieces, r),
                             meta.dtype};
      const RegisterDesc& held = plan.registers[static_cast<std::size_t>(reg)];
      if (piece.NumBytes() != held.meta.NumBytes()) {
        throw std::logic_error(fmt::format("[compile] job '{}': output '{}' piece {} is {} but its register '{}' holds {}",
                                           plan.job_name, name, r, piece.ToString(), held.name, held.meta.ToString()));
      }
      sink.input_metas.push_back(piece);
    }
    plan.output_names.push_back(name);
    plan.output_metas.push_back(graph.values[static_cast<std::size_t>(value)].meta);
    plan.output_pieces.push_back(static_cast<int>(registers[i].size()));
  }
}

}  // namespace weir::internal
