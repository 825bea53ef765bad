#include "graph/planner.hpp"

#include "graph/fusion.hpp"
#include "graph/op_registry.hpp"

#include <algorithm>
#include <any>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

namespace weir::internal {

namespace {

// Nodes an output depends on; everything else is dead code and gets no actor.
std::vector<bool> LiveNodes(const JobGraph& graph) {
  std::vector<bool> live(graph.nodes.size(), false);
  std::vector<int> stack;
  for (const auto& [name, value] : graph.outputs) stack.push_back(graph.values[static_cast<std::size_t>(value)].producer);
  // Ops without outputs exist for their side effect (optimizer updates): they are roots too.
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (graph.nodes[n].outputs.empty()) stack.push_back(static_cast<int>(n));
  }
  while (!stack.empty()) {
    const int node = stack.back();
    stack.pop_back();
    if (live[static_cast<std::size_t>(node)]) continue;
    live[static_cast<std::size_t>(node)] = true;
    for (int value : graph.nodes[static_cast<std::size_t>(node)].inputs) {
      stack.push_back(graph.values[static_cast<std::size_t>(value)].producer);
    }
  }
  return live;
}

int AddRegister(Plan& plan, std::string name, int producer, int register_num, TensorMeta meta) {
  RegisterDesc reg;
  reg.id = static_cast<int>(plan.registers.size());
  reg.name = std::move(name);
  reg.producer = producer;
  reg.register_num = register_num;
  reg.slot_bytes = meta.NumBytes();
  reg.meta = std::move(meta);
  plan.registers.push_back(std::move(reg));
  plan.tasks[static_cast<std::size_t>(producer)].produced.push_back(plan.registers.back().id);
  return plan.registers.back().id;
}

// Makes `task` consume `reg` (once, however often it reads it) and returns its consumed index.
int Consume(Plan& plan, int task, int reg) {
  TaskDesc& desc = plan.tasks[static_cast<std::size_t>(task)];
  const auto it = std::find(desc.consumed.begin(), desc.consumed.end(), reg);
  if (it != desc.consumed.end()) return static_cast<int>(it - desc.consumed.begin());
  desc.consumed.push_back(reg);
  plan.registers[static_cast<std::size_t>(reg)].consumers.push_back(task);
  return static_cast<int>(desc.consumed.size()) - 1;
}

int AddTask(Plan& plan, TaskKind kind, std::string name, int stream) {
  TaskDesc task;
  task.id = static_cast<int>(plan.tasks.size());
  task.kind = kind;
  task.name = std::move(name);
  task.stream = stream;
  plan.tasks.push_back(std::move(task));
  return plan.tasks.back().id;
}

// A kernel actor for `op_type` on the CPU; the caller wires its registers. Throws naming the op when
// no kernel exists for the dtype.
int AddKernelTask(Plan& plan, std::string_view op_type, std::string name, const std::any* attrs,
                  std::vector<TensorMeta> input_metas, std::vector<TensorMeta> output_metas, int stream) {
  const int task = AddTask(plan, TaskKind::kKernel, std::move(name), stream);
  TaskDesc& desc = plan.tasks[static_cast<std::size_t>(task)];
  desc.op_type = std::string(op_type);
  desc.attrs = attrs;
  desc.input_metas = std::move(input_metas);
  desc.output_metas = std::move(output_metas);
  const DType key_dtype = desc.input_metas.empty() ? desc.output_metas.at(0).dtype : desc.input_metas[0].dtype;
  desc.kernel_factory = FindKernel({desc.op_type, Device::Kind::kCpu, key_dtype});
  if (desc.kernel_factory == nullptr) {
    throw std::invalid_argument(fmt::format("[{}] op '{}' has no CPU kernel for {} (CPU kernels exist for: {})",
                                            op_type, desc.name, key_dtype, RegisteredDTypes(op_type, Device::Kind::kCpu)));
  }
  return task;
}

// A zero-byte register from `from` to `to`: `to` acts on a piece only after `from` has.
void AddControlEdge(Plan& plan, int from, int to) {
  const int reg = AddRegister(plan, fmt::format("ctrl:{}->{}", plan.tasks[static_cast<std::size_t>(from)].name,
                                                plan.tasks[static_cast<std::size_t>(to)].name),
                              from, 1, {Shape{0}, DType::kU8});
  Consume(plan, to, reg);
}

// Values that some live op writes in place (OrderWriters checks that they are variables).
std::vector<bool> WrittenValues(const JobGraph& graph, const std::vector<bool>& live) {
  std::vector<bool> written(graph.values.size(), false);
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    const OpNode& node = graph.nodes[n];
    if (!live[n] || node.type == kPlaceholderOp || node.type == kVariableOp || node.type == "constant") continue;
    for (int input : FindOp(node.type).mutates_inputs) {
      if (input >= static_cast<int>(node.inputs.size())) continue;  // an optional input left out
      written[static_cast<std::size_t>(node.inputs[static_cast<std::size_t>(input)])] = true;
    }
  }
  return written;
}

// Ops that write an input in place (optimizer updates) act after every other reader of that input
// in the same call; and a call completes only once its writes are done, so that the next call, a
// checkpoint or another job sees the updated values.
void OrderWriters(const JobGraph& graph, const std::vector<bool>& live, const std::vector<int>& value_register,
                  const std::vector<int>& node_task, Plan& plan) {
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (!live[n]) continue;
    const OpNode& node = graph.nodes[n];
    const int writer = node_task[n];
    if (node.outputs.empty()) AddControlEdge(plan, writer, plan.sink_task);
    if (node.type == kPlaceholderOp || node.type == kVariableOp || node.type == "constant") continue;
    for (int input : FindOp(node.type).mutates_inputs) {
      if (input >= static_cast<int>(node.inputs.size())) continue;  // an optional input left out
      const int value = node.inputs[static_cast<std::size_t>(input)];
      const int reg = value_register[static_cast<std::size_t>(value)];
      const RegisterDesc& desc = plan.registers[static_cast<std::size_t>(reg)];
      if (desc.variable.empty()) {
        throw std::invalid_argument(fmt::format("[{}] op '{}' writes input {} in place, which must be a variable",
                                                node.type, node.name, input));
      }
      plan.variables_written.push_back(desc.variable);
      const std::vector<int> readers = desc.consumers;  // copy: control edges add registers
      for (int reader : readers) {
        if (reader != writer) AddControlEdge(plan, reader, writer);
      }
    }
  }
}

}  // namespace

std::shared_ptr<const Plan> CompilePlan(const std::shared_ptr<const JobGraph>& graph_ptr, const PlanOptions& options) {
  const JobGraph& graph = *graph_ptr;
  if (graph.type == JobType::kTrain && !graph.optimizer) {
    throw std::invalid_argument(fmt::format(
        "[compile] job '{}' is a train job but has no optimizer: train jobs need one to minimize a loss", graph.name));
  }
  if (graph.type == JobType::kPredict && graph.optimizer) {
    throw std::invalid_argument(fmt::format("[compile] job '{}' is a predict job but has an optimizer", graph.name));
  }
  if (options.compute_streams < 1) {
    throw std::invalid_argument(fmt::format("[compile] compute_streams must be at least 1, got {}", options.compute_streams));
  }
  auto plan = std::make_shared<Plan>();
  plan->job_name = graph.name;
  plan->keep_alive = graph_ptr;
  for (int s = 0; s < options.compute_streams; ++s) plan->streams.push_back({Device::Cpu(), StreamKind::kCompute, s});

  const std::vector<bool> live = LiveNodes(graph);
  std::vector<int> value_register(graph.values.size(), -1);
  std::vector<int> node_task(graph.nodes.size(), -1);

  plan->source_task = AddTask(*plan, TaskKind::kSourceTick, "source_tick", 0);
  const int tick = AddRegister(*plan, "tick", plan->source_task, options.source_register_num, {Shape{0}, DType::kU8});

  // Fused chains (graph/fusion.hpp): every node of a chain but the last runs inside the last one's
  // kernel and gets no task.
  const std::vector<FusedChain> chains = FindFusedChains(graph, live);
  std::vector<int> chain_ending_at(graph.nodes.size(), -1);
  std::vector<bool> fused_away(graph.nodes.size(), false);
  for (std::size_t c = 0; c < chains.size(); ++c) {
    chain_ending_at[static_cast<std::size_t>(chains[c].Last())] = static_cast<int>(c);
    for (int node : chains[c].nodes) {
      if (node != chains[c].Last()) fused_away[static_cast<std::size_t>(node)] = true;
    }
  }

  int kernel_count = 0;
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (!live[n] || fused_away[n]) continue;
    const OpNode& node = graph.nodes[n];
    if (node.type == kPlaceholderOp) {
      const int task = AddTask(*plan, TaskKind::kInput, node.name, 0);
      node_task[n] = task;
      const auto placeholder = std::find(graph.placeholder_values.begin(), graph.placeholder_values.end(), node.outputs[0]);
      plan->tasks[static_cast<std::size_t>(task)].input_index =
          static_cast<int>(placeholder - graph.placeholder_values.begin());
      Consume(*plan, task, tick);
      const ValueInfo& value = graph.values[static_cast<std::size_t>(node.outputs[0])];
      value_register[static_cast<std::size_t>(node.outputs[0])] =
          AddRegister(*plan, value.name, task, options.source_register_num, value.meta);
      continue;
    }

    if (node.type == kVariableOp) {
      const auto& attrs = std::any_cast<const VariableAttrs&>(node.attrs);
      const int task = AddTask(*plan, TaskKind::kVariable, node.name, 0);
      node_task[n] = task;
      Consume(*plan, task, tick);
      const ValueInfo& value = graph.values[static_cast<std::size_t>(node.outputs[0])];
      const int reg = AddRegister(*plan, value.name, task, 1, value.meta);
      plan->registers[static_cast<std::size_t>(reg)].variable = attrs.name;
      value_register[static_cast<std::size_t>(node.outputs[0])] = reg;
      plan->variables_read.push_back(attrs.name);
      continue;
    }

    // A reshape changes no byte: its readers read its input's register (no actor, no copy). Not a
    // variable's: an output naming the reshape must not alias a variable that a writer changes.
    if (node.type == "reshape") {
      const int input = value_register[static_cast<std::size_t>(node.inputs[0])];
      if (plan->registers[static_cast<std::size_t>(input)].variable.empty()) {
        value_register[static_cast<std::size_t>(node.outputs[0])] = input;
        continue;
      }
    }

    std::string_view op_type = node.type;
    std::string name = node.name;
    const std::any* attrs = &node.attrs;
    std::vector<int> inputs = node.inputs;
    if (const int c = chain_ending_at[n]; c >= 0) {  // the fused kernel, named after the chain's head
      const FusedChain& chain = chains[static_cast<std::size_t>(c)];
      op_type = chain.op_type;
      name = graph.nodes[static_cast<std::size_t>(chain.nodes.front())].name;
      attrs = &plan->fused_attrs.emplace_back(chain.attrs);
      inputs = chain.inputs;
    }
    std::vector<TensorMeta> input_metas;
    std::vector<TensorMeta> output_metas;
    for (int value : inputs) input_metas.push_back(graph.values[static_cast<std::size_t>(value)].meta);
    for (int value : node.outputs) output_metas.push_back(graph.values[static_cast<std::size_t>(value)].meta);
    const int task = AddKernelTask(*plan, op_type, std::move(name), attrs, std::move(input_metas),
                                   std::move(output_metas), kernel_count++ % options.compute_streams);
    node_task[n] = task;
    if (inputs.empty()) {
      Consume(*plan, task, tick);  // ops without inputs (constants) fire once per call
    }
    for (int value : inputs) {
      const int slot = Consume(*plan, task, value_register[static_cast<std::size_t>(value)]);
      plan->tasks[static_cast<std::size_t>(task)].input_slots.push_back(slot);
    }
    for (int value : node.outputs) {
      const ValueInfo& info = graph.values[static_cast<std::size_t>(value)];
      value_register[static_cast<std::size_t>(value)] = AddRegister(*plan, info.name, task, 1, info.meta);
    }
  }

  // Every job, predict or train, returns a variable it writes in place as it was before this call's
  // writes. The sink cannot read such a variable directly: it runs after the writes (a call completes
  // only once they are done), and ordering it before them would make a cycle. So the output reads an
  // identity copy, which OrderWriters orders before the writers like any other reader. A variable the
  // job does not write needs no copy: the sink reads it directly.
  static const std::any kNoAttrs;
  const std::vector<bool> written = WrittenValues(graph, live);
  std::map<int, int> copies;  // written value -> its copy's register, however many outputs name it
  std::vector<int> output_registers;
  for (const auto& [name, value] : graph.outputs) {
    const int reg = value_register[static_cast<std::size_t>(value)];
    if (!written[static_cast<std::size_t>(value)]) {
      output_registers.push_back(reg);
      continue;
    }
    const auto [copy, inserted] = copies.try_emplace(value, -1);
    if (inserted) {
      const ValueInfo& info = graph.values[static_cast<std::size_t>(value)];
      const int task = AddKernelTask(*plan, "identity", fmt::format("{}_copy", info.name), &kNoAttrs, {info.meta},
                                     {info.meta}, kernel_count++ % options.compute_streams);
      plan->tasks[static_cast<std::size_t>(task)].input_slots.push_back(Consume(*plan, task, reg));
      copy->second = AddRegister(*plan, fmt::format("{}_copy/out", info.name), task, 1, info.meta);
    }
    output_registers.push_back(copy->second);
  }

  plan->sink_task = AddTask(*plan, TaskKind::kSink, "sink", 0);
  OrderWriters(graph, live, value_register, node_task, *plan);
  for (std::size_t i = 0; i < graph.outputs.size(); ++i) {
    const auto& [name, value] = graph.outputs[i];
    const int slot = Consume(*plan, plan->sink_task, output_registers[i]);
    TaskDesc& sink = plan->tasks[static_cast<std::size_t>(plan->sink_task)];
    sink.input_slots.push_back(slot);
    sink.input_metas.push_back(graph.values[static_cast<std::size_t>(value)].meta);
    plan->output_names.push_back(name);
    plan->output_metas.push_back(graph.values[static_cast<std::size_t>(value)].meta);
  }
  return plan;
}

}  // namespace weir::internal
