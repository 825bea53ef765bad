#include "graph/planner/process_split.hpp"

#include <algorithm>
#include <map>
#include <queue>
#include <set>
#include <tuple>
#include <stdexcept>

#include <fmt/format.h>

#include "graph/planner/commit_barrier.hpp"
#include "kernels/collectives/collective_attrs.hpp"

namespace weir::internal {

namespace {

constexpr int kEverywhere = -1;

bool OnCollectiveStream(const Plan& plan, const TaskDesc& task) {
  return plan.streams[static_cast<std::size_t>(task.stream)].kind == StreamKind::kCollective;
}

// The registers `task` reads as kernel inputs (not control edges, not held variables).
std::vector<int> DataInputs(const TaskDesc& task) {
  std::vector<int> registers;
  for (int slot : task.input_slots) registers.push_back(task.consumed[static_cast<std::size_t>(slot)]);
  return registers;
}

// Every task once, each after every task it reads from; of the tasks ready at once, the lowest id
// first. Deterministic: every process computes the same order from the same whole plan.
std::vector<int> TopologicalOrder(const Plan& plan) {
  std::vector<int> waiting(plan.tasks.size(), 0);
  for (const TaskDesc& task : plan.tasks) waiting[static_cast<std::size_t>(task.id)] = static_cast<int>(task.consumed.size());
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (const TaskDesc& task : plan.tasks) {
    if (task.consumed.empty()) ready.push(task.id);
  }
  std::vector<int> order;
  while (!ready.empty()) {
    const int task = ready.top();
    ready.pop();
    order.push_back(task);
    for (int reg : plan.tasks[static_cast<std::size_t>(task)].produced) {
      for (int consumer : plan.registers[static_cast<std::size_t>(reg)].consumers) {
        if (--waiting[static_cast<std::size_t>(consumer)] == 0) ready.push(consumer);
      }
    }
  }
  if (order.size() != plan.tasks.size()) {
    throw std::logic_error(fmt::format("[compile] job '{}': the plan has a cycle", plan.job_name));
  }
  return order;
}

// The process reading piece register `reg` of a collective (a device's piece is read on that device).
int PieceOwner(const Plan& plan, const std::vector<int>& process, int reg) {
  const std::vector<int>& readers = plan.registers[static_cast<std::size_t>(reg)].consumers;
  if (readers.empty()) {
    throw std::logic_error(fmt::format("[compile] job '{}': piece '{}' has no reader", plan.job_name,
                                       plan.registers[static_cast<std::size_t>(reg)].name));
  }
  return process[static_cast<std::size_t>(readers.front())];
}

// Where each task of the whole plan runs: its device's process, every process (kEverywhere), or, for a
// collective spread over the processes, every process on its own pieces.
struct Assignment {
  std::vector<int> process;
  std::vector<bool> spread;

  bool Kept(int task, int rank) const {
    const int where = process[static_cast<std::size_t>(task)];
    return where == kEverywhere || where == rank;
  }
};

Assignment AssignProcesses(const Plan& plan, const ProcessSplit& split) {
  const int processes = split.processes;
  Assignment assignment{std::vector<int>(plan.tasks.size(), kEverywhere), std::vector<bool>(plan.tasks.size(), false)};
  std::vector<int>& process = assignment.process;
  std::vector<bool>& spread = assignment.spread;
  // Where each task runs: its device's process, or every process.
  for (const TaskDesc& task : plan.tasks) {
    const StreamId& stream = plan.streams[static_cast<std::size_t>(task.stream)];
    if (stream.kind == StreamKind::kCompute && !split.everywhere[static_cast<std::size_t>(task.id)]) {
      process[static_cast<std::size_t>(task.id)] = stream.device.index / split.devices;
    }
  }
  // A collective runs where its pieces are: in one process, or in every process on its own pieces (the
  // side of several pieces: the inputs, or a scatter's outputs).
  for (int t : TopologicalOrder(plan)) {
    const TaskDesc& task = plan.tasks[static_cast<std::size_t>(t)];
    if (!OnCollectiveStream(plan, task)) continue;
    std::set<int> holders;
    for (int reg : DataInputs(task)) holders.insert(process[static_cast<std::size_t>(plan.registers[static_cast<std::size_t>(reg)].producer)]);
    if (holders.count(kEverywhere) > 0 && task.produced.size() > 1) {  // a whole input to pieces
      holders.clear();
      for (int reg : task.produced) holders.insert(PieceOwner(plan, process, reg));
    }
    if (holders.count(kEverywhere) > 0) continue;
    if (holders.size() == 1) {
      process[static_cast<std::size_t>(t)] = *holders.begin();
    } else if (static_cast<int>(holders.size()) == processes) {
      spread[static_cast<std::size_t>(t)] = true;
    } else {
      throw std::invalid_argument(fmt::format(
          "[placement] job '{}': actor '{}' combines pieces held by processes {} of {}; a consistent job's values are "
          "split over one process's devices or over every process", plan.job_name, task.name, fmt::join(holders, ","),
          processes));
    }
  }
  return assignment;
}

// A register read in a process that did not make it: a transfer actor, in every process (so that every
// process chains the same collectives), sends its bytes from the maker's to the processes that read it.
// Collectives spread over the processes read their own pieces.
void AddTransfers(Plan& plan, int processes, Assignment& assignment) {
  std::vector<int>& process = assignment.process;
  std::vector<bool>& spread = assignment.spread;
  int collective_stream = -1;
  for (std::size_t s = 0; s < plan.streams.size(); ++s) {
    if (plan.streams[s].kind == StreamKind::kCollective) collective_stream = static_cast<int>(s);
  }
  // On GPUs (one per process) the transfers run on the GPU's collective stream, over NCCL.
  const bool on_gpus = std::any_of(plan.streams.begin(), plan.streams.end(),
                                   [](const StreamId& stream) { return stream.device.kind == Device::Kind::kCuda; });
  const Device collective_device = on_gpus ? Device{Device::Kind::kCuda, 0} : Device::Cpu();
  if (on_gpus) {
    for (const TaskDesc& task : plan.tasks) {
      const StreamId& stream = plan.streams[static_cast<std::size_t>(task.stream)];
      if (task.kind == TaskKind::kKernel && stream.kind == StreamKind::kCompute && stream.device.kind == Device::Kind::kCpu) {
        throw std::invalid_argument(fmt::format(
            "[placement] job '{}': op '{}' has no CUDA kernel for its dtype, and an op on the CPU beside the GPUs is "
            "not supported in a job split over processes", plan.job_name, task.name));
      }
    }
  }
  const std::size_t registers_before = plan.registers.size();
  for (std::size_t r = 0; r < registers_before; ++r) {
    const int maker = process[static_cast<std::size_t>(plan.registers[r].producer)];
    if (maker == kEverywhere) continue;
    std::vector<int> readers;  // consumers reading it as data in another process
    std::set<int> reading;     // their processes; kEverywhere: every process
    for (int consumer : plan.registers[r].consumers) {
      const TaskDesc& task = plan.tasks[static_cast<std::size_t>(consumer)];
      const std::vector<int> inputs = DataInputs(task);
      if (std::find(inputs.begin(), inputs.end(), static_cast<int>(r)) == inputs.end()) continue;
      const int where = process[static_cast<std::size_t>(consumer)];
      if (where == maker || spread[static_cast<std::size_t>(consumer)]) continue;
      readers.push_back(consumer);
      reading.insert(where);
    }
    if (readers.empty()) continue;
    // Sent point to point to the processes that read it; broadcast where every process does.
    std::vector<int> reader_processes;
    if (!reading.contains(kEverywhere) && static_cast<int>(reading.size()) < processes - 1) {
      reader_processes.assign(reading.begin(), reading.end());
    }
    if (collective_stream < 0) {
      collective_stream = static_cast<int>(plan.streams.size());
      plan.streams.push_back({collective_device, StreamKind::kCollective, 0});
    }
    const RegisterDesc source = plan.registers[r];
    TaskDesc transfer;
    transfer.id = static_cast<int>(plan.tasks.size());
    transfer.kind = TaskKind::kKernel;
    transfer.name = fmt::format("transfer({})", source.name);
    transfer.stream = collective_stream;
    transfer.op_type = "transfer";
    transfer.attrs = &plan.fused_attrs.emplace_back(CollectiveAttrs{.root = maker, .readers = reader_processes});
    transfer.collective = true;
    transfer.input_metas = {source.meta};
    transfer.output_metas = {source.meta};
    transfer.kernel_factory = FindKernel({"transfer", collective_device.kind, source.meta.dtype});
    if (transfer.kernel_factory == nullptr) {
      throw std::invalid_argument(fmt::format("[transfer] '{}' ({}) cannot move between processes", source.name, source.meta.dtype));
    }
    transfer.consumed = {source.id};
    transfer.input_slots = {0};
    RegisterDesc copy;
    copy.id = static_cast<int>(plan.registers.size());
    copy.name = transfer.name;
    copy.producer = transfer.id;
    copy.meta = source.meta;
    copy.slot_bytes = source.slot_bytes;
    copy.register_num = source.register_num;
    transfer.produced = {copy.id};
    for (int reader : readers) {
      TaskDesc& task = plan.tasks[static_cast<std::size_t>(reader)];
      std::replace(task.consumed.begin(), task.consumed.end(), source.id, copy.id);
      copy.consumers.push_back(reader);
      std::erase(plan.registers[r].consumers, reader);
    }
    plan.registers[r].consumers.push_back(transfer.id);
    plan.tasks.push_back(std::move(transfer));
    plan.registers.push_back(std::move(copy));
    process.push_back(kEverywhere);
    spread.push_back(false);
  }
}

// This process's part of the whole plan: its streams (its devices' and the shared ones), its tasks and
// the registers it makes (of a spread collective, its own pieces), renumbered; tasks' reads come after.
struct LocalPart {
  std::shared_ptr<Plan> plan;
  std::vector<int> task_map;      // whole plan's task -> this part's, or -1
  std::vector<int> register_map;  // whole plan's register -> this part's, or -1
};

LocalPart CopyLocalPart(Plan& plan, const ProcessSplit& split, const Assignment& assignment) {
  const int rank = split.rank;
  const std::vector<int>& process = assignment.process;
  const std::vector<bool>& spread = assignment.spread;
  auto kept = [&](int task) { return assignment.Kept(task, rank); };
  auto local = std::make_shared<Plan>();
  local->job_name = plan.job_name;
  // This process's streams: its devices' and the shared ones (control, collective); a task every
  // process runs on global device g runs on its device g % devices.
  auto of_a_device = [](const StreamId& stream) {  // a stream of one global device
    return stream.kind == StreamKind::kCompute || (stream.device.kind == Device::Kind::kCuda && stream.kind != StreamKind::kCollective);
  };
  auto local_device = [&](const StreamId& stream) {
    return stream.kind == StreamKind::kCompute || stream.device.kind == Device::Kind::kCuda ? stream.device.index % split.devices
                                                                                            : stream.device.index;
  };
  std::map<std::tuple<int, StreamKind, int>, int> local_streams;  // (device, kind, index) -> stream
  for (const StreamId& stream : plan.streams) {
    if (of_a_device(stream) && stream.device.index / split.devices != rank) continue;
    StreamId mine = stream;
    mine.device.index = local_device(stream);
    local_streams.emplace(std::make_tuple(mine.device.index, mine.kind, mine.index), static_cast<int>(local->streams.size()));
    local->streams.push_back(mine);
  }
  auto local_stream = [&](int stream) {
    const StreamId& id = plan.streams[static_cast<std::size_t>(stream)];
    return local_streams.at(std::make_tuple(local_device(id), id.kind, id.index));
  };
  std::vector<int> task_map(plan.tasks.size(), -1);
  for (const TaskDesc& task : plan.tasks) {
    if (!kept(task.id)) continue;
    task_map[static_cast<std::size_t>(task.id)] = static_cast<int>(local->tasks.size());
    TaskDesc mine = task;
    mine.id = task_map[static_cast<std::size_t>(task.id)];
    mine.stream = local_stream(task.stream);
    mine.consumed.clear();
    mine.produced.clear();
    local->tasks.push_back(std::move(mine));
  }
  // Which piece registers of a spread collective are this process's.
  auto mine_here = [&](const RegisterDesc& reg) {
    if (!kept(reg.producer)) return false;
    const TaskDesc& maker = plan.tasks[static_cast<std::size_t>(reg.producer)];
    return !spread[static_cast<std::size_t>(maker.id)] || maker.produced.size() == 1 ||
           PieceOwner(plan, process, reg.id) == rank;
  };
  std::vector<int> register_map(plan.registers.size(), -1);
  for (const RegisterDesc& reg : plan.registers) {
    if (!mine_here(reg)) continue;
    RegisterDesc mine = reg;
    mine.id = static_cast<int>(local->registers.size());
    mine.producer = task_map[static_cast<std::size_t>(reg.producer)];
    mine.consumers.clear();
    for (int consumer : reg.consumers) {
      if (kept(consumer)) mine.consumers.push_back(task_map[static_cast<std::size_t>(consumer)]);
    }
    register_map[static_cast<std::size_t>(reg.id)] = mine.id;
    local->tasks[static_cast<std::size_t>(mine.producer)].produced.push_back(mine.id);
    local->registers.push_back(std::move(mine));
  }
  local->fused_attrs = std::move(plan.fused_attrs);  // a deque: the tasks' pointers into it stay put
  return {local, std::move(task_map), std::move(register_map)};
}

// What each task of this part reads here (a spread collective: its own pieces), and a spread
// collective's attributes: which process holds which of its pieces, and the logical shape.
void ReadLocalRegisters(const Plan& plan, const ProcessSplit& split, const Assignment& assignment, LocalPart& part) {
  const int rank = split.rank;
  const int processes = split.processes;
  const std::vector<int>& process = assignment.process;
  const std::vector<bool>& spread = assignment.spread;
  Plan* local = part.plan.get();
  const std::vector<int>& task_map = part.task_map;
  const std::vector<int>& register_map = part.register_map;
  for (const TaskDesc& task : plan.tasks) {
    if (!assignment.Kept(task.id, rank)) continue;
    TaskDesc& mine = local->tasks[static_cast<std::size_t>(task_map[static_cast<std::size_t>(task.id)])];
    // What it reads here: registers of this process (a spread collective: its own pieces).
    std::vector<int> slot_map(task.consumed.size(), -1);
    for (std::size_t c = 0; c < task.consumed.size(); ++c) {
      const int reg = register_map[static_cast<std::size_t>(task.consumed[c])];
      if (reg < 0) continue;
      slot_map[c] = static_cast<int>(mine.consumed.size());
      mine.consumed.push_back(reg);
    }
    mine.input_slots.clear();
    mine.input_metas.clear();
    for (std::size_t i = 0; i < task.input_slots.size(); ++i) {
      const int slot = slot_map[static_cast<std::size_t>(task.input_slots[i])];
      if (slot < 0) continue;
      mine.input_slots.push_back(slot);
      mine.input_metas.push_back(task.input_metas[i]);
    }
    if (!spread[static_cast<std::size_t>(task.id)]) continue;
    // A spread collective: which process holds which of its pieces, and the logical shape.
    CollectiveAttrs attrs = std::any_cast<const CollectiveAttrs&>(*task.attrs);
    const bool pieces_out = task.produced.size() > 1;
    std::vector<int> owners;  // of each piece, in order
    if (pieces_out) {
      for (int reg : task.produced) owners.push_back(PieceOwner(plan, process, reg));
    } else {
      for (int reg : DataInputs(task)) owners.push_back(process[static_cast<std::size_t>(plan.registers[static_cast<std::size_t>(reg)].producer)]);
    }
    std::vector<int> count(static_cast<std::size_t>(processes), 0);
    for (std::size_t p = 0; p < owners.size(); ++p) {
      if (p > 0 && owners[p] < owners[p - 1]) {
        throw std::invalid_argument(fmt::format(
            "[placement] job '{}': actor '{}' has its pieces in processes {} (in piece order), but a placement "
            "spanning processes must list its devices machine by machine", plan.job_name, task.name, fmt::join(owners, ",")));
      }
      ++count[static_cast<std::size_t>(owners[p])];
    }
    attrs.process_pieces = {0};
    for (int c : count) attrs.process_pieces.push_back(attrs.process_pieces.back() + c);
    attrs.across_processes = true;
    if (task.op_type == "all_to_all") {
      std::vector<std::int64_t> dims = task.input_metas[0].shape.Dims();
      dims[static_cast<std::size_t>(attrs.axis)] = 0;
      for (const TensorMeta& piece : task.input_metas) dims[static_cast<std::size_t>(attrs.axis)] += piece.shape[attrs.axis];
      attrs.logical = Shape(dims);
    } else {
      const bool whole_out = task.op_type == "all_reduce" || task.op_type == "all_gather";
      attrs.logical = whole_out ? task.output_metas[0].shape : task.input_metas[0].shape;
    }
    mine.attrs = &local->fused_attrs.emplace_back(std::move(attrs));
    if (pieces_out) {
      mine.output_metas.clear();
      for (std::size_t j = 0; j < task.produced.size(); ++j) {
        if (owners[j] == rank) mine.output_metas.push_back(task.output_metas[j]);
      }
    }
  }
}

}  // namespace

std::shared_ptr<Plan> SplitOverProcesses(Plan whole, const ProcessSplit& split) {
  Plan& plan = whole;
  const std::string whole_dot = plan.ToDot();
  Assignment assignment = AssignProcesses(plan, split);
  AddTransfers(plan, split.processes, assignment);
  const std::vector<int> order = TopologicalOrder(plan);
  LocalPart part = CopyLocalPart(plan, split, assignment);
  ReadLocalRegisters(plan, split, assignment, part);
  const int rank = split.rank;
  const std::vector<bool>& spread = assignment.spread;
  const std::vector<int>& task_map = part.task_map;
  Plan* local = part.plan.get();
  auto kept = [&](int task) { return assignment.Kept(task, rank); };

  // This process's collectives and transfers, chained in the whole plan's order, call after call.
  std::vector<int> chain;
  for (int t : order) {
    if (!kept(t) || !OnCollectiveStream(plan, plan.tasks[static_cast<std::size_t>(t)])) continue;
    const int mine = task_map[static_cast<std::size_t>(t)];
    if (!chain.empty()) local->AddControlEdge(chain.back(), mine);
    chain.push_back(mine);
  }
  // A task nothing of this process triggers (a transfer received here) acts once per call, on the tick.
  const int source = task_map[static_cast<std::size_t>(plan.source_task)];
  const int tick = local->tasks[static_cast<std::size_t>(source)].produced.front();
  for (TaskDesc& task : local->tasks) {
    if (task.id == source || !task.consumed.empty()) continue;
    task.consumed.push_back(tick);
    local->registers[static_cast<std::size_t>(tick)].consumers.push_back(task.id);
  }

  local->source_task = source;
  local->sink_task = task_map[static_cast<std::size_t>(plan.sink_task)];
  if (!split.writers.empty()) {  // every process keeps every writer (each holds every variable)
    std::vector<bool> writers(local->tasks.size(), false);
    for (std::size_t t = 0; t < split.writers.size(); ++t) {
      if (split.writers[t] && kept(static_cast<int>(t))) writers[static_cast<std::size_t>(task_map[t])] = true;
    }
    const int control_stream = local->tasks[static_cast<std::size_t>(local->sink_task)].stream;
    CommitBeforeWrites(writers, control_stream, /*across_processes=*/true, chain, *local);
  }
  GateCollectiveCalls(*local, chain);
  local->output_names = std::move(plan.output_names);
  local->input_pieces = std::move(plan.input_pieces);
  local->output_pieces = std::move(plan.output_pieces);
  local->output_metas = std::move(plan.output_metas);
  local->devices = split.devices;
  local->mirrored = false;
  local->notices = std::move(plan.notices);
  local->variables_read = std::move(plan.variables_read);
  local->variables_written = std::move(plan.variables_written);
  local->keep_alive = std::move(plan.keep_alive);
  local->whole_plan_dot = whole_dot;
  for (const TaskDesc& task : plan.tasks) {
    if (kept(task.id) && (spread[static_cast<std::size_t>(task.id)] || task.op_type == "transfer")) {
      local->process_collectives = true;
    }
  }
  // Every actor here leads to this process's sink: one whose results only other processes read (a
  // transfer out, and what feeds only it) joins the sink by a control edge, so that a call completes
  // here once its work here is done; an actor acting after its call completed would find the call's
  // record freed. (An input whose pieces nobody reads is dropped instead, CompilePlan.)
  const std::vector<bool> reaches = local->TasksReachingSink();
  for (std::size_t t = 0; t < reaches.size(); ++t) {
    const TaskDesc& task = local->tasks[t];
    const bool leaf = std::all_of(task.produced.begin(), task.produced.end(), [&](int reg) {
      return local->registers[static_cast<std::size_t>(reg)].consumers.empty();
    });
    if (!reaches[t] && leaf && task.kind != TaskKind::kInput) local->AddControlEdge(static_cast<int>(t), local->sink_task);
  }
  return part.plan;
}

void GateCollectiveCalls(Plan& plan, const std::vector<int>& chain) {
  if (chain.empty()) return;
  static const std::any kNoAttrs;
  const TensorMeta nothing{Shape{0}, DType::kU8};
  const int first = chain.front();
  const int last = chain.back();
  const int tick = plan.tasks[static_cast<std::size_t>(plan.source_task)].produced.front();
  const int stream = plan.tasks[static_cast<std::size_t>(first)].stream;
  TaskDesc gate;
  gate.id = static_cast<int>(plan.tasks.size());
  gate.kind = TaskKind::kKernel;
  gate.name = "collective_gate";
  gate.stream = stream;
  gate.op_type = "identity";
  gate.attrs = &kNoAttrs;
  gate.input_metas = {nothing};
  gate.output_metas = {nothing};
  gate.kernel_factory = FindKernel({"identity", plan.streams[static_cast<std::size_t>(stream)].device.kind, DType::kU8});
  if (gate.kernel_factory == nullptr) throw std::logic_error("[compile] no identity kernel for the collective gate");
  gate.consumed = {tick};
  gate.input_slots = {0};
  plan.registers[static_cast<std::size_t>(tick)].consumers.push_back(gate.id);
  RegisterDesc open;
  open.id = static_cast<int>(plan.registers.size());
  open.name = "collective_gate/open";
  open.producer = gate.id;
  open.register_num = 1;  // the next call's gate waits for this call's last collective to give it back
  open.meta = nothing;
  open.consumers = {first};
  if (last != first) open.consumers.push_back(last);
  gate.produced = {open.id};
  for (int reader : open.consumers) plan.tasks[static_cast<std::size_t>(reader)].consumed.push_back(open.id);
  plan.tasks.push_back(std::move(gate));
  plan.registers.push_back(std::move(open));
}

}  // namespace weir::internal
