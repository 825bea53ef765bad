#include "plan/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace weir::internal {

std::string_view Name(TaskKind kind) {
  switch (kind) {
    case TaskKind::kSourceTick: return "source_tick";
    case TaskKind::kInput: return "input";
    case TaskKind::kKernel: return "kernel";
    case TaskKind::kSink: return "sink";
    case TaskKind::kVariable: return "variable";
    case TaskKind::kBarrier: return "barrier";
  }
  return "?";
}

int Plan::AddTask(TaskKind kind, std::string name, int stream) {
  TaskDesc task;
  task.id = static_cast<int>(tasks.size());
  task.kind = kind;
  task.name = std::move(name);
  task.stream = stream;
  tasks.push_back(std::move(task));
  return tasks.back().id;
}

int Plan::AddRegister(std::string name, int producer, int register_num, TensorMeta meta) {
  RegisterDesc reg;
  reg.id = static_cast<int>(registers.size());
  reg.name = std::move(name);
  reg.producer = producer;
  reg.register_num = register_num;
  reg.slot_bytes = meta.NumBytes();
  reg.meta = std::move(meta);
  registers.push_back(std::move(reg));
  tasks[static_cast<std::size_t>(producer)].produced.push_back(registers.back().id);
  return registers.back().id;
}

int Plan::Consume(int task, int reg) {
  TaskDesc& desc = tasks[static_cast<std::size_t>(task)];
  const auto it = std::find(desc.consumed.begin(), desc.consumed.end(), reg);
  if (it != desc.consumed.end()) return static_cast<int>(it - desc.consumed.begin());
  desc.consumed.push_back(reg);
  registers[static_cast<std::size_t>(reg)].consumers.push_back(task);
  return static_cast<int>(desc.consumed.size()) - 1;
}

void Plan::AddControlEdge(int from, int to) {
  const int reg = AddRegister(fmt::format("ctrl:{}->{}", tasks[static_cast<std::size_t>(from)].name,
                                          tasks[static_cast<std::size_t>(to)].name),
                              from, 1, {Shape{0}, DType::kU8});
  Consume(to, reg);
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

// A kernel's element types as a line of its label: "\nbf16" (its first input's), "\nf32->bf16" where
// its first output's differs (a cast); mixed precision shows in the plan this way.
std::string KernelDTypes(const TaskDesc& task) {
  if (task.kind != TaskKind::kKernel || task.input_metas.empty()) return "";
  const DType in = task.input_metas[0].dtype;
  if (task.output_metas.empty() || task.output_metas[0].dtype == in) return fmt::format("\\n{}", in);
  return fmt::format("\\n{}->{}", in, task.output_metas[0].dtype);
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
      // A kernel whose results stay from call to call while its variables do (TaskDesc::constant_over);
      // the dtypes stay the last line.
      const std::string_view kept = task.constant_over.empty() ? "" : "\\nkept across calls";
      dot += fmt::format("    t{} [label=\"{}\\n{}\\n{}{}{}\"{}];\n", task.id, Escape(task.name), Escape(detail), device,
                         kept, KernelDTypes(task), task.kind == TaskKind::kKernel ? "" : ", style=rounded");
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

void Plan::CheckAcyclic() const {
  // Kahn's algorithm over the tasks, an edge per register and consumer.
  std::vector<int> waiting_on(tasks.size(), 0);
  for (const RegisterDesc& reg : registers) {
    for (int consumer : reg.consumers) ++waiting_on[static_cast<std::size_t>(consumer)];
  }
  std::vector<int> ready;
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    if (waiting_on[t] == 0) ready.push_back(static_cast<int>(t));
  }
  std::size_t done = 0;
  while (!ready.empty()) {
    const int task = ready.back();
    ready.pop_back();
    ++done;
    for (int reg : tasks[static_cast<std::size_t>(task)].produced) {
      for (int consumer : registers[static_cast<std::size_t>(reg)].consumers) {
        if (--waiting_on[static_cast<std::size_t>(consumer)] == 0) ready.push_back(consumer);
      }
    }
  }
  if (done == tasks.size()) return;
  // Every task left waits on another one left: walk back through producers until one repeats.
  int task = 0;
  while (waiting_on[static_cast<std::size_t>(task)] == 0) ++task;
  std::vector<int> path;
  std::vector<int> position(tasks.size(), -1);
  while (position[static_cast<std::size_t>(task)] < 0) {
    position[static_cast<std::size_t>(task)] = static_cast<int>(path.size());
    path.push_back(task);
    for (int reg : tasks[static_cast<std::size_t>(task)].consumed) {
      const int producer = registers[static_cast<std::size_t>(reg)].producer;
      if (producer >= 0 && waiting_on[static_cast<std::size_t>(producer)] > 0) {
        task = producer;
        break;
      }
    }
  }
  std::string loop;
  for (std::size_t i = path.size(); i-- > static_cast<std::size_t>(position[static_cast<std::size_t>(task)]);) {
    loop += fmt::format("'{}' -> ", tasks[static_cast<std::size_t>(path[i])].name);
  }
  throw std::logic_error(fmt::format("[compile] job '{}': its plan waits on itself ({}'{}'): a call would never complete",
                                     job_name, loop, tasks[static_cast<std::size_t>(path.back())].name));
}

std::vector<bool> Plan::TasksReachingSink() const {
  std::vector<bool> reaches(tasks.size(), false);
  if (sink_task < 0) return reaches;
  std::vector<int> stack{sink_task};
  reaches[static_cast<std::size_t>(sink_task)] = true;
  while (!stack.empty()) {
    const int task = stack.back();
    stack.pop_back();
    for (int reg : tasks[static_cast<std::size_t>(task)].consumed) {
      const int producer = registers[static_cast<std::size_t>(reg)].producer;
      if (producer >= 0 && !reaches[static_cast<std::size_t>(producer)]) {
        reaches[static_cast<std::size_t>(producer)] = true;
        stack.push_back(producer);
      }
    }
  }
  return reaches;
}

void Plan::CheckEveryTaskReachesSink() const {
  if (sink_task < 0) return;
  const std::vector<bool> reaches = TasksReachingSink();
  for (const TaskDesc& task : tasks) {
    if (reaches[static_cast<std::size_t>(task.id)]) continue;
    throw std::logic_error(fmt::format("[compile] job '{}': actor '{}' ({}) does not lead to the sink, so it could act "
                                       "for a call that already completed",
                                       job_name, task.name, Name(task.kind)));
  }
}

void Plan::RemoveTasks(const std::vector<bool>& dropped_tasks, const std::vector<bool>& dropped_registers) {
  std::vector<int> task_id(tasks.size(), -1), register_id(registers.size(), -1);
  int next = 0;
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    if (!dropped_tasks[t]) task_id[t] = next++;
  }
  next = 0;
  for (std::size_t r = 0; r < registers.size(); ++r) {
    if (!dropped_registers[r]) register_id[r] = next++;
  }
  std::vector<TaskDesc> kept_tasks;
  for (TaskDesc& task : tasks) {
    if (dropped_tasks[static_cast<std::size_t>(task.id)]) continue;
    task.id = task_id[static_cast<std::size_t>(task.id)];
    for (int& reg : task.consumed) reg = register_id[static_cast<std::size_t>(reg)];
    for (int& reg : task.produced) reg = register_id[static_cast<std::size_t>(reg)];
    kept_tasks.push_back(std::move(task));
  }
  std::vector<RegisterDesc> kept_registers;
  for (RegisterDesc& reg : registers) {
    if (dropped_registers[static_cast<std::size_t>(reg.id)]) continue;
    reg.id = register_id[static_cast<std::size_t>(reg.id)];
    reg.producer = task_id[static_cast<std::size_t>(reg.producer)];
    std::erase_if(reg.consumers, [&](int consumer) { return dropped_tasks[static_cast<std::size_t>(consumer)]; });
    for (int& consumer : reg.consumers) consumer = task_id[static_cast<std::size_t>(consumer)];
    kept_registers.push_back(std::move(reg));
  }
  tasks = std::move(kept_tasks);
  registers = std::move(kept_registers);
  source_task = source_task < 0 ? -1 : task_id[static_cast<std::size_t>(source_task)];
  sink_task = sink_task < 0 ? -1 : task_id[static_cast<std::size_t>(sink_task)];
}

}  // namespace weir::internal
