#include "actors/plan.hpp"

#include <fmt/format.h>

namespace weir::internal {

std::string_view Name(TaskKind kind) {
  switch (kind) {
    case TaskKind::kSourceTick: return "source_tick";
    case TaskKind::kInput: return "input";
    case TaskKind::kKernel: return "kernel";
    case TaskKind::kSink: return "sink";
    case TaskKind::kVariable: return "variable";
  }
  return "?";
}

std::string Plan::DeviceName(const TaskDesc& task) const {
  const StreamId& stream = streams[static_cast<std::size_t>(task.stream)];
  if (stream.kind == StreamKind::kCollective && stream.device.kind == Device::Kind::kCpu) {
    return fmt::format("cpu:0-{}", devices - 1);
  }
  // The source, input and sink actors of a device's stream work on the host.
  const bool host_task =
      task.kind == TaskKind::kSourceTick || task.kind == TaskKind::kInput || task.kind == TaskKind::kSink;
  return host_task && stream.device.kind == Device::Kind::kCuda ? std::string("host") : stream.device.ToString();
}

std::size_t Plan::RegisterBytes() const {
  std::size_t bytes = 0;
  for (const RegisterDesc& reg : registers) bytes += reg.slot_bytes * static_cast<std::size_t>(reg.register_num);
  return bytes;
}

namespace {

// Graphviz needs quotes and backslashes escaped inside labels.
std::string Escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string Plan::ToDot() const {
  std::string dot = fmt::format("digraph \"{}\" {{\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n",
                                Escape(job_name));
  for (std::size_t s = 0; s < streams.size(); ++s) {
    dot += fmt::format("  subgraph cluster_stream{} {{\n    label=\"{}\";\n", s, Escape(streams[s].ToString()));
    for (const TaskDesc& task : tasks) {
      if (task.stream != static_cast<int>(s)) continue;
      const std::string detail = task.kind == TaskKind::kKernel ? task.op_type : std::string(Name(task.kind));
      const std::string device = DeviceName(task);
      dot += fmt::format("    t{} [label=\"{}\\n{}\\n{}\"{}];\n", task.id, Escape(task.name), Escape(detail), device,
                         task.kind == TaskKind::kKernel ? "" : ", style=rounded");
    }
    dot += "  }\n";
  }
  for (const RegisterDesc& reg : registers) {
    for (int consumer : reg.consumers) {
      // Where the memory is, when not ordinary host memory: "cuda:0", "pinned".
      const std::string memory = reg.device.kind != Device::Kind::kCpu ? fmt::format("\\n{}", reg.device.ToString())
                                 : reg.pinned                          ? std::string("\\npinned")
                                                                       : std::string();
      dot += fmt::format("  t{} -> t{} [label=\"{}\\nregister_num={}\\n{} B{}\"];\n", reg.producer, consumer,
                         Escape(reg.name), reg.register_num, reg.slot_bytes, memory);
    }
  }
  return dot + "}\n";
}

}  // namespace weir::internal
