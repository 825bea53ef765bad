#include "graph/planner/stream_graphs.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kernels/stream_graph.hpp"

namespace weir::internal {

namespace {

struct Dropped {
  std::vector<bool> tasks;
  std::vector<bool> registers;
};

// The members in an order that respects the registers between them (Kahn; ties in task order).
std::vector<int> MemberOrder(const Plan& plan, const std::vector<int>& members, const std::vector<bool>& member) {
  std::map<int, int> waiting;  // member -> members it still waits for (one per register)
  for (int m : members) {
    int count = 0;
    for (int reg : plan.tasks[static_cast<std::size_t>(m)].consumed) {
      if (member[static_cast<std::size_t>(plan.registers[static_cast<std::size_t>(reg)].producer)]) ++count;
    }
    waiting[m] = count;
  }
  std::set<int> ready;  // the lowest id first
  for (const auto& [m, count] : waiting) {
    if (count == 0) ready.insert(m);
  }
  std::vector<int> order;
  while (!ready.empty()) {  // the plan is acyclic, so every member becomes ready
    const int m = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(m);
    for (int reg : plan.tasks[static_cast<std::size_t>(m)].produced) {
      for (int consumer : plan.registers[static_cast<std::size_t>(reg)].consumers) {
        const auto it = waiting.find(consumer);
        if (it != waiting.end() && --it->second == 0) ready.insert(consumer);
      }
    }
  }
  return order;
}

// The members that a path from some member's result through a task outside reaches (one search from
// all those outside readers): they wait for that outside task (the commit before a call's writes,
// another device's kernels). None reached: the members can be one graph.
std::vector<bool> ReachedThroughOutside(const Plan& plan, const std::vector<int>& members, const std::vector<bool>& member) {
  std::vector<bool> seen(plan.tasks.size(), false);
  std::vector<int> stack;
  auto visit_consumers = [&](int task, bool only_outside) {
    for (int reg : plan.tasks[static_cast<std::size_t>(task)].produced) {
      for (int consumer : plan.registers[static_cast<std::size_t>(reg)].consumers) {
        if ((only_outside && member[static_cast<std::size_t>(consumer)]) || seen[static_cast<std::size_t>(consumer)]) continue;
        seen[static_cast<std::size_t>(consumer)] = true;
        stack.push_back(consumer);
      }
    }
  };
  for (int m : members) visit_consumers(m, true);
  while (!stack.empty()) {
    const int task = stack.back();
    stack.pop_back();
    visit_consumers(task, false);
  }
  std::vector<bool> reached(plan.tasks.size(), false);
  for (int m : members) reached[static_cast<std::size_t>(m)] = seen[static_cast<std::size_t>(m)];
  return reached;
}

// Replaces `members` (no path leaves them and comes back) with one stream_graph task.
void FuseGroup(Plan& plan, int stream, const std::vector<int>& members, const std::vector<bool>& member, Dropped& dropped) {
  const std::vector<int> order = MemberOrder(plan, members, member);

  // The graph's inputs (registers members read that others make), outputs (registers members make
  // that others read) and buffers (data members make for members only; control edges between
  // members need nothing: the order keeps them).
  const int graph_id = static_cast<int>(plan.tasks.size());
  std::map<int, GraphOperand> operand_of;  // register -> where members find it
  TaskDesc graph;
  graph.id = graph_id;
  graph.kind = TaskKind::kKernel;
  graph.stream = stream;
  graph.op_type = "stream_graph";
  graph.name = fmt::format("{} graph of {} kernels", plan.streams[static_cast<std::size_t>(stream)].ToString(), members.size());
  graph.kernel_factory = &MakeStreamGraphKernel;
  graph.intra_op_threads = plan.tasks[static_cast<std::size_t>(members.front())].intra_op_threads;
  StreamGraphAttrs attrs;
  for (int m : order) {
    const TaskDesc& task = plan.tasks[static_cast<std::size_t>(m)];
    for (int reg : task.consumed) {
      if (operand_of.count(reg) > 0) continue;  // an input already, or made by an earlier member
      if (member[static_cast<std::size_t>(plan.registers[static_cast<std::size_t>(reg)].producer)]) continue;
      operand_of[reg] = {GraphOperand::Kind::kInput, static_cast<int>(graph.consumed.size())};
      graph.input_slots.push_back(static_cast<int>(graph.consumed.size()));
      graph.consumed.push_back(reg);
      graph.input_metas.push_back(plan.registers[static_cast<std::size_t>(reg)].meta);
    }
    for (std::size_t j = 0; j < task.produced.size(); ++j) {
      const int reg = task.produced[j];
      RegisterDesc& desc = plan.registers[static_cast<std::size_t>(reg)];
      const bool read_outside = std::any_of(desc.consumers.begin(), desc.consumers.end(),
                                            [&](int c) { return !member[static_cast<std::size_t>(c)]; });
      if (read_outside) {
        operand_of[reg] = {GraphOperand::Kind::kOutput, static_cast<int>(graph.produced.size())};
        graph.produced.push_back(reg);
        graph.output_metas.push_back(desc.meta);
        desc.producer = graph_id;
        std::erase_if(desc.consumers, [&](int c) { return member[static_cast<std::size_t>(c)]; });
      } else {
        dropped.registers[static_cast<std::size_t>(reg)] = true;
        if (j < task.output_metas.size()) {  // a data output: a buffer of the graph
          operand_of[reg] = {GraphOperand::Kind::kBuffer, static_cast<int>(attrs.buffer_bytes.size())};
          attrs.buffer_bytes.push_back(desc.slot_bytes);
        }
      }
    }
  }
  for (int m : order) {
    const TaskDesc& task = plan.tasks[static_cast<std::size_t>(m)];
    StreamGraphMember fused{task.op_type,      task.name,           task.attrs, task.input_metas,
                            task.output_metas, task.kernel_factory, {},         {}};
    for (int slot : task.input_slots) fused.inputs.push_back(operand_of.at(task.consumed[static_cast<std::size_t>(slot)]));
    for (std::size_t j = 0; j < task.output_metas.size(); ++j) fused.outputs.push_back(operand_of.at(task.produced[j]));
    attrs.members.push_back(std::move(fused));
    dropped.tasks[static_cast<std::size_t>(m)] = true;
  }
  // The graph in the members' place as consumer of its inputs.
  for (int reg : graph.consumed) {
    std::vector<int>& consumers = plan.registers[static_cast<std::size_t>(reg)].consumers;
    std::erase_if(consumers, [&](int c) { return member[static_cast<std::size_t>(c)]; });
    consumers.push_back(graph_id);
  }
  graph.attrs = &plan.fused_attrs.emplace_back(std::move(attrs));
  plan.tasks.push_back(std::move(graph));
  dropped.tasks.push_back(false);
}

// The stream's kernels as one graph where no path leaves them and comes back; else the kernels no such
// path reaches as one graph (none of theirs can lead back), and the rest on their own terms: so the
// commit before a call's writes splits a stream into the kernels before it and the writes after it.
void FuseMembers(Plan& plan, int stream, const std::vector<int>& members, Dropped& dropped) {
  if (members.size() < 2) return;
  std::vector<bool> member(plan.tasks.size(), false);
  for (int m : members) member[static_cast<std::size_t>(m)] = true;
  const std::vector<bool> reached = ReachedThroughOutside(plan, members, member);
  std::vector<int> first, rest;
  for (int m : members) (reached[static_cast<std::size_t>(m)] ? rest : first).push_back(m);
  if (rest.empty()) {
    FuseGroup(plan, stream, members, member, dropped);
    return;
  }
  if (first.empty()) return;  // no split that helps
  FuseMembers(plan, stream, first, dropped);
  FuseMembers(plan, stream, rest, dropped);
}

void FuseStream(Plan& plan, int stream, Dropped& dropped) {
  std::vector<int> members;
  for (const TaskDesc& task : plan.tasks) {
    if (task.kind == TaskKind::kKernel && task.stream == stream && !dropped.tasks[static_cast<std::size_t>(task.id)]) {
      members.push_back(task.id);
    }
  }
  FuseMembers(plan, stream, members, dropped);
}

}  // namespace

void FuseStreamGraphs(Plan& plan, bool cpu_device_streams) {
  Dropped dropped{std::vector<bool>(plan.tasks.size(), false), std::vector<bool>(plan.registers.size(), false)};
  const int streams = static_cast<int>(plan.streams.size());
  for (int s = 0; s < streams; ++s) {
    const StreamId& id = plan.streams[static_cast<std::size_t>(s)];
    if (id.kind != StreamKind::kCompute) continue;
    if (id.device.kind == Device::Kind::kCpu && !cpu_device_streams) continue;
    FuseStream(plan, s, dropped);
  }
  plan.RemoveTasks(dropped.tasks, dropped.registers);
}

}  // namespace weir::internal
