#include "graph/planner.hpp"

#include "common/split.hpp"
#include "graph/device_copies.hpp"
#include "graph/fusion.hpp"
#include "graph/op_registry.hpp"
#include "graph/process_split.hpp"
#include "graph/sbp.hpp"
#include "graph/stream_graphs.hpp"
#include "kernels/collectives/collective_attrs.hpp"
#include "kernels/attrs/fused_attrs.hpp"

#include <algorithm>
#include <any>
#include <map>
#include <limits>
#include <numeric>
#include <optional>
#include <tuple>
#include <stdexcept>

#include <fmt/format.h>

namespace weir::internal {

namespace {

// The first gradient bucket of a call closes once it holds this many bytes (or the fusion threshold,
// if smaller), as PyTorch DDP's first bucket does: its collective then overlaps the rest of the
// backward pass.
constexpr std::size_t kFirstBucketBytes = std::size_t{1} << 20;

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

// The host's compute stream of a plan on CUDA devices, where an op without a CUDA kernel runs.
int HostComputeStream(Plan& plan) {
  const StreamId host{Device::Cpu(), StreamKind::kCompute, 0};
  const auto it = std::find(plan.streams.begin(), plan.streams.end(), host);
  if (it != plan.streams.end()) return static_cast<int>(it - plan.streams.begin());
  plan.streams.push_back(host);
  return static_cast<int>(plan.streams.size()) - 1;
}

// A kernel actor for `op_type` on its stream's device; the caller wires its registers. An op with no
// CUDA kernel for its dtype but a CPU one (integer division) runs on the host, with a notice; the
// copies between the memories come with the others (graph/device_copies.hpp). Throws naming the op
// when no device has a kernel for the dtype.
int AddKernelTask(Plan& plan, std::string_view op_type, std::string name, const std::any* attrs,
                  std::vector<TensorMeta> input_metas, std::vector<TensorMeta> output_metas, int stream) {
  const int task = AddTask(plan, TaskKind::kKernel, std::move(name), stream);
  TaskDesc& desc = plan.tasks[static_cast<std::size_t>(task)];
  desc.op_type = std::string(op_type);
  desc.attrs = attrs;
  desc.input_metas = std::move(input_metas);
  desc.output_metas = std::move(output_metas);
  const DType key_dtype = desc.input_metas.empty() ? desc.output_metas.at(0).dtype : desc.input_metas[0].dtype;
  const Device::Kind device = plan.streams[static_cast<std::size_t>(stream)].device.kind;
  desc.kernel_factory = FindKernel({desc.op_type, device, key_dtype});
  if (desc.kernel_factory == nullptr && device == Device::Kind::kCuda && op_type != "device_copy") {
    if (const KernelFactory cpu = FindKernel({desc.op_type, Device::Kind::kCpu, key_dtype}); cpu != nullptr) {
      desc.kernel_factory = cpu;
      desc.stream = HostComputeStream(plan);  // may grow plan.streams; `desc` stays valid (plan.tasks)
      plan.notices.push_back(fmt::format("job '{}': op '{}' ({}) has no CUDA kernel for {}, so it runs on the CPU, with "
                                         "copies to and from the GPU", plan.job_name, desc.name, op_type, key_dtype));
      return task;
    }
  }
  if (desc.kernel_factory == nullptr) {
    const char* where = device == Device::Kind::kCuda ? "CUDA" : "CPU";
    std::string have = RegisteredDTypes(op_type, device);
    throw std::invalid_argument(fmt::format("[{}] op '{}' has no {} kernel for {} ({} kernels exist for: {})", op_type,
                                            desc.name, where, key_dtype, where, have.empty() ? "no dtype" : have));
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

// The registers of a value: one per replica (a mirrored value that differs per device), or one
// that every device reads.
struct Placed {
  std::vector<int> registers;
  std::vector<int> devices;
  bool PerDevice() const { return registers.size() > 1 || per_device; }
  bool per_device = false;  // a mirrored value on one device still differs from a broadcast one
  Sbp sbp;                  // consistent view: how the registers hold the logical value
  bool mean = false;        // partial pieces that are averaged, not summed (a mirrored job's gradients)
};

// Ops that write an input in place (optimizer updates) act after every other reader of that input
// in the same call; and a call completes only once its writes are done, so that the next call, a
// checkpoint or another job sees the updated values.
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
        AddControlEdge(plan, task, plan.sink_task);
      }
    }
    if (node.type == kPlaceholderOp || node.type == kVariableOp || node.type == "constant") continue;
    for (int input : FindOp(node.type).mutates_inputs) {
      if (input >= static_cast<int>(node.inputs.size())) continue;  // an optional input left out
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
              AddControlEdge(plan, reader, writer);
            }
          }
          if (static_cast<int>(r) != written) held.emplace_back(writer, static_cast<int>(r));
        }
      }
      for (const auto& [writer, reg] : held) Consume(plan, writer, reg);
      held.clear();
    }
  }
}

// A call that fails leaves every variable as it was: the ops that write variables in place (optimizer
// updates, the train step's increment, moving averages) act only after a barrier that every other
// kernel of the call reaches first and that passes a failure on, so they skip their kernels when any
// kernel of the call failed. The barrier joins the kernels whose outputs only writers or the sink read
// (a failure anywhere upstream reaches one of them). Writes no longer overlap the backward pass; they
// are a small part of a step on the CPU. Not done where a writer has outputs others read (none today).
void CommitBeforeWrites(const JobGraph& graph, const std::vector<bool>& live,
                        const std::vector<std::vector<int>>& node_tasks, int stream, Plan& plan) {
  std::vector<bool> writer(plan.tasks.size(), false);
  bool any = false;
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    const OpNode& node = graph.nodes[n];
    if (!live[n] || node.type == kPlaceholderOp || node.type == kVariableOp || node.type == "constant") continue;
    if (FindOp(node.type).mutates_inputs.empty()) continue;
    if (!node.outputs.empty()) return;
    for (int task : node_tasks[n]) writer[static_cast<std::size_t>(task)] = true;
    any = true;
  }
  if (!any) return;
  const int barrier = AddTask(plan, TaskKind::kBarrier, "commit", stream);
  Consume(plan, barrier, plan.tasks[static_cast<std::size_t>(plan.source_task)].produced.front());  // never idle
  for (int task = 0; task < barrier; ++task) {
    if (plan.tasks[static_cast<std::size_t>(task)].kind != TaskKind::kKernel || writer[static_cast<std::size_t>(task)]) continue;
    bool frontier = true;
    for (int reg : plan.tasks[static_cast<std::size_t>(task)].produced) {
      for (int reader : plan.registers[static_cast<std::size_t>(reg)].consumers) {
        frontier = frontier && (reader == plan.sink_task || writer[static_cast<std::size_t>(reader)]);
      }
    }
    if (frontier) AddControlEdge(plan, task, barrier);
  }
  const int committed = AddRegister(plan, "commit", barrier, 1, {Shape{0}, DType::kU8});
  for (int task = 0; task < barrier; ++task) {
    if (writer[static_cast<std::size_t>(task)]) Consume(plan, task, committed);
  }
}

// The signatures an op (or a fused kernel) declares besides all-broadcast; constants declare none.
std::vector<SbpSignature> SignaturesOf(std::string_view op_type, const SbpContext& ctx) {
  if (op_type == "matmul_bias_act") {  // the matmul's data-parallel signature, bias whole
    const int a_rows = ctx.Get<FusedMatMulAttrs>().matmul.transpose_a ? 1 : 0;
    return {{{Sbp::S(a_rows), Sbp::B(), Sbp::B()}, {Sbp::S(0)}}};
  }
  if (op_type == "conv2d_bias_act") return {{{Sbp::S(0), Sbp::B(), Sbp::B()}, {Sbp::S(0)}}};
  const OpDef* def = TryFindOp(op_type);  // constants have no OpDef
  return def != nullptr && def->sbp ? def->sbp(ctx) : std::vector<SbpSignature>{};
}

// Where each node runs: device indices of the session (device d of machine m is m * devices + d),
// checked against what the session has. A mirrored job in several processes is each process's own: a
// placement names the same devices on every machine ("0:0-1", "1:0-1"), or machine 0's only, and
// means those devices of each process.
struct Placer {
  const JobGraph& graph;
  int devices;    // per machine
  int machines;   // processes a consistent job spans
  int processes;  // of the session

  std::vector<int> Devices(const OpNode& node) {
    const Placement* placement = nullptr;
    if (node.placement >= 0) placement = &graph.placements[static_cast<std::size_t>(node.placement)];
    else if (graph.config.default_placement) placement = &*graph.config.default_placement;
    std::vector<int> ids;
    if (placement == nullptr) {
      for (int d = 0; d < devices * machines; ++d) ids.push_back(d);
      return ids;
    }
    const int named = machines > 1 ? machines : processes;
    std::vector<std::vector<int>> of_machine(static_cast<std::size_t>(named));
    for (const DeviceId& id : placement->Devices()) {
      if (id.machine >= named || id.device >= devices) {
        // A machine beyond the session's needs more processes; a device beyond them, more devices.
        const std::string remedy =
            id.machine >= named ? fmt::format("place it on machine{} or run {} processes (weir-launch --nproc_per_node "
                                              "or --nnodes, or flow.env.machine's list)",
                                              named == 1 ? " 0" : fmt::format("s 0-{}", named - 1), id.machine + 1)
                                : "set the device count with SessionOptions::cpu_devices (flow.config.cpu_device_num)";
        throw std::invalid_argument(fmt::format(
            "[placement] job '{}': op '{}' is placed on {}, but the session has {} with {} device{} {}({}:0{}); {}",
            graph.name, node.name, placement->ToString(),
            named == 1 ? std::string("one machine (0)") : fmt::format("{} machines (processes 0-{})", named, named - 1),
            devices, devices == 1 ? "" : "s", named == 1 ? "" : "each ", named == 1 ? "0" : "m",
            devices == 1 ? std::string() : fmt::format("-{}", devices - 1), remedy));
      }
      ids.push_back(id.machine * devices + id.device);
      of_machine[static_cast<std::size_t>(id.machine)].push_back(id.device);
    }
    if (machines > 1 || named == 1) return ids;
    // Mirrored across processes: each process's own devices.
    const bool machine_zero_only = std::all_of(of_machine.begin() + 1, of_machine.end(), [](const auto& d) { return d.empty(); });
    const bool same_everywhere = std::all_of(of_machine.begin(), of_machine.end(), [&](const auto& d) { return d == of_machine[0]; });
    if (!machine_zero_only && !same_everywhere) {
      throw std::invalid_argument(fmt::format(
          "[placement] job '{}': op '{}' is placed on {}, but a mirrored job runs in each of the {} processes on its own "
          "devices: name the same devices on every machine (\"0:0-1\", \"1:0-1\"), or machine 0's only",
          graph.name, node.name, placement->ToString(), processes));
    }
    return of_machine[0];
  }
};

// Removes the input actors whose pieces nobody reads: a placeholder read whole, or in other rows, on
// other devices than its own pieces are on is read again there (read_input below), and the pieces
// first made for it may be left unread. Such an actor would not lead to the sink, and could act for a
// call that had already completed and freed its inputs.
void DropUnreadInputs(Plan& plan) {
  std::vector<bool> dropped_tasks(plan.tasks.size(), false), dropped_registers(plan.registers.size(), false);
  bool any = false;
  for (const TaskDesc& task : plan.tasks) {
    if (task.kind != TaskKind::kInput) continue;
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
  if (options.devices < 1) {
    throw std::invalid_argument(fmt::format("[compile] devices must be at least 1, got {}", options.devices));
  }
  if (options.processes < 1) {
    throw std::invalid_argument(fmt::format("[compile] processes must be at least 1, got {}", options.processes));
  }
  auto plan = std::make_shared<Plan>();
  plan->job_name = graph.name;
  plan->keep_alive = graph_ptr;
  plan->devices = options.devices;
  plan->mirrored = graph.config.view == LogicalView::kMirrored;
  // What the mirrored view averages over its devices it also averages over the processes; the
  // collective actors doing so run in one order (chained on the collective stream) in every process.
  const bool across_processes = plan->mirrored && options.processes > 1;
  // A consistent job is planned for every process's devices; each process then keeps its part.
  const int split_processes = plan->mirrored ? 1 : options.processes;
  const int all_devices = options.devices * split_processes;
  if (options.rank < 0 || options.rank >= options.processes) {
    throw std::invalid_argument(fmt::format("[compile] rank must be in [0, {}), got {}", options.processes, options.rank));
  }
  // The CPU devices of a process share its memory: a value made on one device is read where it is by
  // every other, a variable is one buffer that each device updates its rows of, and each device sums
  // its own rows of every device's gradient. Each GPU has its own memory: a value read on another GPU
  // is copied there (graph/device_copies.hpp), a collective combines copies of the pieces on one GPU,
  // and variables are updated whole, on the GPU that holds them.
  const bool shared_memory = options.device_kind == Device::Kind::kCpu;
  if (!shared_memory && options.devices > 1 && split_processes > 1) {
    throw std::invalid_argument(fmt::format(
        "[compile] job '{}' is consistent over {} processes with {} GPUs each: a consistent job spread over processes "
        "runs one GPU per process (weir-launch --nproc_per_node={} with gpu_device_num(1)), or use the mirrored view",
        graph.name, split_processes, options.devices, options.devices));
  }
  // Collective actors run on their own stream: a CPU executor, or a CUDA stream of the process's GPU
  // that NCCL queues on.
  const Device collective_device = options.device_kind == Device::Kind::kCuda ? Device{Device::Kind::kCuda, 0} : Device::Cpu();
  for (int d = 0; d < all_devices; ++d) {
    for (int s = 0; s < options.compute_streams; ++s) {
      plan->streams.push_back({Device{options.device_kind, d}, StreamKind::kCompute, s});
    }
  }
  int collective_stream = -1;  // created with the first collective
  std::vector<int> collectives;  // in plan order, chained by control edges
  const bool mirrored = graph.config.view == LogicalView::kMirrored;
  Placer placer{graph, options.devices, split_processes, options.processes};
  // Tasks every process runs (graph/process_split.hpp): what each needs whole, on its first device.
  std::vector<int> everywhere;
  auto spans_every_process = [&](const std::vector<int>& devices) {
    std::vector<bool> seen(static_cast<std::size_t>(split_processes), false);
    for (int device : devices) seen[static_cast<std::size_t>(device / options.devices)] = true;
    return split_processes > 1 && std::all_of(seen.begin(), seen.end(), [](bool s) { return s; });
  };

  const std::vector<bool> live = LiveNodes(graph);
  std::vector<Placed> placed(graph.values.size());
  std::vector<std::vector<int>> node_tasks(graph.nodes.size());
  std::vector<int> stream_rotation(static_cast<std::size_t>(all_devices), 0);
  auto device_stream = [&](int device) {
    const int s = stream_rotation[static_cast<std::size_t>(device)]++ % options.compute_streams;
    return device * options.compute_streams + s;
  };

  // With several devices a call's source tick and sink get an executor of their own (a control
  // stream): on device 0's, a call could neither start nor complete while device 0 ran a kernel,
  // which held back the next call of a pipeline and every call's callback.
  int control_stream = 0;
  if (all_devices > 1) {
    plan->streams.push_back({Device::Cpu(), StreamKind::kControl, 0});
    control_stream = static_cast<int>(plan->streams.size()) - 1;
  }
  plan->source_task = AddTask(*plan, TaskKind::kSourceTick, "source_tick", control_stream);
  const int tick = AddRegister(*plan, "tick", plan->source_task, options.source_register_num, {Shape{0}, DType::kU8});

  // Every placeholder's pieces, live or not: the caller passes them all.
  std::vector<int> input_base;
  for (std::size_t p = 0; p < graph.placeholders.size(); ++p) {
    const int node = graph.values[static_cast<std::size_t>(graph.placeholder_values[p])].producer;
    input_base.push_back(std::accumulate(plan->input_pieces.begin(), plan->input_pieces.end(), 0));
    plan->input_pieces.push_back(mirrored ? static_cast<int>(placer.Devices(graph.nodes[static_cast<std::size_t>(node)]).size()) : 1);
  }

  // Fused chains (graph/fusion.hpp): every node of a chain but the last runs inside the last one's
  // kernel and gets no task. On several devices (or processes) each weight gradient is averaged
  // (mirrored) or summed (consistent) before its update, so the gradient's matmul cannot be fused with
  // the update there.
  std::vector<FusedChain> chains = FindFusedChains(graph, live);
  if (all_devices > 1 || across_processes) {
    std::erase_if(chains, [](const FusedChain& chain) { return chain.op_type == "matmul_sgd_update"; });
  }
  // On one device stream (a GPU's, or the CPU's run as one with async_cpu_streams) the updates of one
  // optimizer run one after the other anyway: one multi-tensor kernel makes them all (on a GPU, one
  // launch instead of one per variable).
  if ((options.device_kind == Device::Kind::kCuda || options.async_cpu_streams) && all_devices == 1 &&
      !across_processes && options.compute_streams == 1) {
    std::vector<bool> taken(graph.nodes.size(), false);
    for (const FusedChain& chain : chains) {
      for (int node : chain.nodes) taken[static_cast<std::size_t>(node)] = true;
    }
    for (FusedChain& group : FindMultiTensorUpdates(graph, live, taken)) chains.push_back(std::move(group));
  }
  std::vector<int> chain_ending_at(graph.nodes.size(), -1);
  std::vector<bool> fused_away(graph.nodes.size(), false);
  for (std::size_t c = 0; c < chains.size(); ++c) {
    chain_ending_at[static_cast<std::size_t>(chains[c].Last())] = static_cast<int>(c);
    for (int node : chains[c].nodes) {
      if (node != chains[c].Last()) fused_away[static_cast<std::size_t>(node)] = true;
    }
  }

  // A collective (boxing) actor on the collective stream, chained after the previous collective.
  auto boxing_task = [&](std::string_view op_type, const std::string& value_name, CollectiveAttrs collective,
                         const std::vector<int>& from, std::vector<TensorMeta> in_metas,
                         std::vector<TensorMeta> out_metas) {
    if (collective_stream < 0) {
      collective_stream = static_cast<int>(plan->streams.size());
      plan->streams.push_back({collective_device, StreamKind::kCollective, 0});
    }
    plan->process_collectives = plan->process_collectives || collective.across_processes;
    const std::any& attrs = plan->fused_attrs.emplace_back(collective);
    const int task = AddKernelTask(*plan, op_type, fmt::format("{}({})", op_type, value_name), &attrs,
                                   std::move(in_metas), out_metas, collective_stream);
    plan->tasks[static_cast<std::size_t>(task)].collective = true;
    for (int reg : from) plan->tasks[static_cast<std::size_t>(task)].input_slots.push_back(Consume(*plan, task, reg));
    // Split over processes, each process chains its own collectives (process_split.cpp).
    if (!collectives.empty() && split_processes == 1) AddControlEdge(*plan, collectives.back(), task);
    collectives.push_back(task);
    std::vector<int> registers;
    for (const TensorMeta& meta : out_metas) {
      registers.push_back(AddRegister(*plan, fmt::format("{}({})", op_type, value_name), task, 1, meta));
    }
    return registers;
  };
  // Averages per-device values over their devices (and, across processes, over theirs): one all-reduce
  // actor on the collective stream for all of them (a fusion bucket crosses the processes as one
  // collective), whose one result per value every device reads (the devices of this process share
  // memory). The values have their pieces on the same devices.
  auto all_reduce = [&](std::vector<int> values) {
    std::erase_if(values, [&](int value) { return !placed[static_cast<std::size_t>(value)].PerDevice(); });
    if (values.empty()) return;
    const Placed first = placed[static_cast<std::size_t>(values.front())];
    if (first.registers.size() == 1 && !across_processes) {  // one device: the average is the value itself
      for (int value : values) {
        Placed& piece = placed[static_cast<std::size_t>(value)];
        piece = Placed{piece.registers, {piece.devices.front()}};
      }
      return;
    }
    const int devices = static_cast<int>(first.registers.size());
    std::vector<int> from;
    std::vector<TensorMeta> in_metas, out_metas;
    for (int value : values) {
      const Placed& piece = placed[static_cast<std::size_t>(value)];
      const TensorMeta& meta = graph.values[static_cast<std::size_t>(value)].meta;
      from.insert(from.end(), piece.registers.begin(), piece.registers.end());
      in_metas.insert(in_metas.end(), static_cast<std::size_t>(devices), meta);
      out_metas.push_back(meta);
    }
    const std::string& name = graph.values[static_cast<std::size_t>(values.front())].name;
    const std::vector<int> registers = boxing_task(
        "all_reduce", values.size() == 1 ? name : fmt::format("{} and {} more", name, values.size() - 1),
        {.op = ReduceOp::kMean, .devices = devices, .tensors = static_cast<int>(values.size()),
         .across_processes = across_processes},
        from, in_metas, out_metas);
    for (std::size_t j = 0; j < values.size(); ++j) {
      placed[static_cast<std::size_t>(values[j])] = Placed{{registers[j]}, {first.devices.front()}};
    }
  };
  // A mirrored job across processes averages its gradients in buckets (fusion), as PyTorch DDP
  // does: gradients join the open bucket, in the order they are made, until it holds the threshold's
  // bytes (the first bucket 1 MiB, so that the first collective starts early in the backward pass),
  // or until an op reads one of them; then one all-reduce actor averages the bucket, one collective
  // across the processes.
  std::vector<int> bucket;  // gradient values, in the order they were made
  std::size_t bucket_bytes = 0;
  bool first_bucket = true;
  auto close_bucket = [&] {
    if (bucket.empty()) return;
    all_reduce(bucket);
    first_bucket = false;
    bucket.clear();
    bucket_bytes = 0;
  };
  auto add_to_bucket = [&](int value) {
    const ValueInfo& info = graph.values[static_cast<std::size_t>(value)];
    if (!bucket.empty()) {  // a bucket holds one dtype on one device
      const int last = bucket.back();
      if (graph.values[static_cast<std::size_t>(last)].meta.dtype != info.meta.dtype ||
          placed[static_cast<std::size_t>(last)].devices != placed[static_cast<std::size_t>(value)].devices) {
        close_bucket();
      }
    }
    bucket.push_back(value);
    bucket_bytes += info.meta.NumBytes();
    const std::size_t cap = first_bucket ? std::min(kFirstBucketBytes, options.fusion_threshold_bytes) : options.fusion_threshold_bytes;
    if (bucket_bytes >= cap) close_bucket();
  };
  auto pieces_of = [&](const TensorMeta& logical, const Sbp& sbp, std::size_t devices) {
    std::vector<TensorMeta> metas;
    for (std::size_t r = 0; r < devices; ++r) {
      metas.push_back({PieceShape(logical.shape, sbp, static_cast<int>(devices), static_cast<int>(r)), logical.dtype});
    }
    return metas;
  };
  // The registers of `value` with SBP `to` on `devices`, boxing what it has into that (graph/sbp.hpp).
  // A broadcast value is one buffer every device reads, wherever it was made.
  // A whole variable seen as row ranges (S(0)) on `devices`: one variable register per device
  // pointing into the one storage, no copy. Updates write their rows in place through them.
  std::map<std::pair<int, std::vector<int>>, Placed> variable_rows;
  auto is_variable_register = [&](const Placed& value) {
    return value.registers.size() == 1 && value.sbp.IsBroadcast() &&
           !plan->registers[static_cast<std::size_t>(value.registers.front())].variable.empty();
  };
  auto rows_of_variable = [&](int value, const std::vector<int>& devices) -> Placed {
    const auto key = std::make_pair(value, devices);
    if (const auto it = variable_rows.find(key); it != variable_rows.end()) return it->second;
    const RegisterDesc whole = plan->registers[static_cast<std::size_t>(placed[static_cast<std::size_t>(value)].registers.front())];
    const TensorMeta& meta = graph.values[static_cast<std::size_t>(value)].meta;
    const int k = static_cast<int>(devices.size());
    const std::vector<TensorMeta> metas = pieces_of(meta, Sbp::S(0), devices.size());
    Placed rows{{}, devices, false, Sbp::S(0)};
    for (int r = 0; r < k; ++r) {
      const int device = devices[static_cast<std::size_t>(r)];
      const int task = AddTask(*plan, TaskKind::kVariable, fmt::format("{}:rows{}", whole.name, device), device_stream(device));
      Consume(*plan, task, tick);
      const int reg = AddRegister(*plan, whole.name, task, 1, metas[static_cast<std::size_t>(r)]);
      plan->registers[static_cast<std::size_t>(reg)].variable = whole.variable;
      plan->registers[static_cast<std::size_t>(reg)].variable_offset =
          static_cast<std::size_t>(SplitBegin(meta.shape[0], k, r)) * (meta.NumBytes() / static_cast<std::size_t>(meta.shape[0]));
      rows.registers.push_back(reg);
    }
    variable_rows.emplace(key, rows);
    return rows;
  };
  // A consistent job's input wanted whole, or in rows, on other devices than it was read on: read
  // again from the caller's tensor there, which every process has whole, rather than gathered from the
  // devices that read it (no input bytes cross between devices or processes, and no collective holds
  // up a pipeline's next call). Nothing when the rows do not split that way.
  std::map<std::tuple<int, std::string, std::vector<int>>, Placed> input_reads;
  auto read_input = [&](int value, const Sbp& to, const std::vector<int>& devices) -> std::optional<Placed> {
    const auto key = std::make_tuple(value, to.ToString(), devices);
    if (const auto it = input_reads.find(key); it != input_reads.end()) return it->second;
    const ValueInfo& info = graph.values[static_cast<std::size_t>(value)];
    const int k = to.IsBroadcast() ? 1 : static_cast<int>(devices.size());
    if (to.IsSplit() && (info.meta.shape.Rank() == 0 || info.meta.shape[0] < k)) return std::nullopt;
    const auto placeholder = std::find(graph.placeholder_values.begin(), graph.placeholder_values.end(), value);
    const std::size_t index = static_cast<std::size_t>(placeholder - graph.placeholder_values.begin());
    const std::vector<TensorMeta> metas = pieces_of(info.meta, to, static_cast<std::size_t>(k));
    Placed read{{}, {}, false, to};
    for (int r = 0; r < k; ++r) {
      const int device = devices[static_cast<std::size_t>(r)];
      const int task = AddTask(*plan, TaskKind::kInput, fmt::format("{}@{}", info.name, device), device_stream(device));
      TaskDesc& desc = plan->tasks[static_cast<std::size_t>(task)];
      desc.input_index = input_base[index];
      if (to.IsSplit()) {
        desc.input_offset = static_cast<std::size_t>(SplitBegin(info.meta.shape[0], k, r)) *
                            (info.meta.NumBytes() / static_cast<std::size_t>(info.meta.shape[0]));
      }
      Consume(*plan, task, tick);
      if (k == 1 && spans_every_process(devices)) everywhere.push_back(task);
      read.registers.push_back(
          AddRegister(*plan, info.name, task, options.source_register_num, metas[static_cast<std::size_t>(r)]));
      read.devices.push_back(device);
    }
    input_reads.emplace(key, read);
    return read;
  };
  auto box = [&](int value, const Sbp& to, const std::vector<int>& devices) -> Placed {
    const Placed from = placed[static_cast<std::size_t>(value)];
    const ValueInfo& info = graph.values[static_cast<std::size_t>(value)];
    if (from.sbp == to && (to.IsBroadcast() || from.devices == devices)) return from;
    const int k_from = static_cast<int>(from.devices.size());
    const int k = static_cast<int>(devices.size());
    if (to.IsPartialSum()) {
      throw std::logic_error(fmt::format("[compile] job '{}': no boxing makes '{}' partial-sum from {}", graph.name,
                                         info.name, from.sbp.ToString()));
    }
    if (to == Sbp::S(0) && is_variable_register(from) && info.meta.shape.Rank() >= 1 && shared_memory) {
      return rows_of_variable(value, devices);
    }
    if (!mirrored && graph.nodes[static_cast<std::size_t>(info.producer)].type == kPlaceholderOp &&
        (to.IsBroadcast() || to == Sbp::S(0))) {
      if (std::optional<Placed> read = read_input(value, to, devices)) return *read;
    }
    if (from.sbp.IsPartialSum() && to.IsSplit() && from.devices == devices && !across_processes && split_processes == 1 &&
        shared_memory) {
      // P -> S in shared memory: each device sums its own piece of every device's addend, all devices
      // at once (no collective actor, no whole sum): the reduce-scatter of the in-process backend.
      const std::vector<TensorMeta> metas = pieces_of(info.meta, to, devices.size());
      Placed pieces{{}, devices, false, to};
      for (int r = 0; r < k; ++r) {
        const int device = devices[static_cast<std::size_t>(r)];
        const std::any& attrs = plan->fused_attrs.emplace_back(
            CollectiveAttrs{.op = from.mean ? ReduceOp::kMean : ReduceOp::kSum, .devices = k, .axis = to.axis, .rank = r});
        const int task = AddKernelTask(*plan, "reduce_scatter", fmt::format("reduce_scatter({}):{}", info.name, device),
                                       &attrs, std::vector<TensorMeta>(static_cast<std::size_t>(k), info.meta),
                                       {metas[static_cast<std::size_t>(r)]}, device_stream(device));
        plan->tasks[static_cast<std::size_t>(task)].intra_op_threads = options.threads_per_device;
        plan->tasks[static_cast<std::size_t>(task)].collective = true;
        for (int reg : from.registers) plan->tasks[static_cast<std::size_t>(task)].input_slots.push_back(Consume(*plan, task, reg));
        pieces.registers.push_back(AddRegister(*plan, fmt::format("reduce_scatter({})", info.name), task, 1,
                                               metas[static_cast<std::size_t>(r)]));
      }
      return pieces;
    }
    if (!from.sbp.IsBroadcast() && to.IsSplit() && from.devices == devices) {  // piece to piece
      // Across processes a reduce-scatter is one actor on the collective stream, chained in plan order.
      const bool partial = from.sbp.IsPartialSum();
      const std::vector<int> registers = boxing_task(
          partial ? "reduce_scatter" : "all_to_all", info.name,
          {.op = from.mean ? ReduceOp::kMean : ReduceOp::kSum, .devices = k, .axis = partial ? to.axis : from.sbp.axis,
           .out_axis = to.axis, .across_processes = partial && across_processes},
          from.registers,
          partial ? std::vector<TensorMeta>(static_cast<std::size_t>(k), info.meta) : pieces_of(info.meta, from.sbp, from.registers.size()),
          pieces_of(info.meta, to, devices.size()));
      return Placed{registers, devices, false, to};
    }
    Placed whole = from;
    if (!from.sbp.IsBroadcast()) {  // gather or sum the pieces into one buffer
      const bool partial = from.sbp.IsPartialSum();
      whole.registers = boxing_task(partial ? "all_reduce" : "all_gather", info.name,
                                    {.op = from.mean ? ReduceOp::kMean : ReduceOp::kSum, .devices = k_from,
                                     .axis = from.sbp.axis, .across_processes = partial && across_processes},
                                    from.registers,
                                    partial ? std::vector<TensorMeta>(from.registers.size(), info.meta)
                                            : pieces_of(info.meta, from.sbp, from.registers.size()),
                                    {info.meta});
      whole.devices = {from.devices.front()};
      whole.sbp = Sbp::B();
      whole.mean = false;
    }
    if (to.IsBroadcast()) return whole;
    const std::vector<int> registers = boxing_task("scatter", info.name, {.devices = k, .axis = to.axis},
                                                   whole.registers, {info.meta}, pieces_of(info.meta, to, devices.size()));
    return Placed{registers, devices, false, to};
  };
  // Bytes that boxing `value` into `to` moves between devices (the choice's cost); a local slice of
  // a broadcast buffer costs a little, so that an op of broadcast inputs stays whole.
  auto boxing_cost = [&](int value, const Sbp& to, const std::vector<int>& devices) {
    const Placed& from = placed[static_cast<std::size_t>(value)];
    const double bytes = static_cast<double>(graph.values[static_cast<std::size_t>(value)].meta.NumBytes());
    if (from.sbp == to && (to.IsBroadcast() || from.devices == devices)) return 0.0;
    if (to.IsPartialSum()) return std::numeric_limits<double>::infinity();
    const double k = static_cast<double>(from.devices.size());
    if (!from.sbp.IsBroadcast() && to.IsSplit() && from.devices == devices) {
      return from.sbp.IsPartialSum() ? bytes * (k - 1) / k : bytes * (k - 1) / (k * k);
    }
    double cost = from.sbp.IsPartialSum() ? 2 * bytes * (k - 1) / k : from.sbp.IsSplit() ? bytes * (k - 1) / k : 0;
    if (to.IsSplit()) cost += 0.01 * bytes / static_cast<double>(devices.size());
    return cost;
  };
  // The signature a consistent op runs with: the declared one (then all-broadcast) that moves the
  // fewest bytes, the first declared on a tie. Splits need at least one element per device.
  auto choose = [&](std::string_view op_type, const std::any* attrs, const std::vector<int>& inputs,
                    const std::vector<int>& outputs, const std::vector<int>& devices) {
    SbpSignature all_broadcast{std::vector<Sbp>(inputs.size(), Sbp::B()), std::vector<Sbp>(outputs.size(), Sbp::B())};
    const int k = static_cast<int>(devices.size());
    if (k == 1) return all_broadcast;
    std::vector<TensorMeta> in_metas, out_metas;
    for (int value : inputs) in_metas.push_back(graph.values[static_cast<std::size_t>(value)].meta);
    for (int value : outputs) out_metas.push_back(graph.values[static_cast<std::size_t>(value)].meta);
    std::vector<SbpSignature> candidates = SignaturesOf(op_type, {op_type, attrs, in_metas, out_metas});
    auto fits = [k](const std::vector<Sbp>& sbps, const std::vector<TensorMeta>& metas) {
      if (sbps.size() != metas.size()) return false;
      for (std::size_t i = 0; i < sbps.size(); ++i) {
        if (!sbps[i].IsSplit()) continue;
        if (sbps[i].axis < 0 || sbps[i].axis >= metas[i].shape.Rank() || metas[i].shape[sbps[i].axis] < k) return false;
      }
      return true;
    };
    std::erase_if(candidates, [&](const SbpSignature& c) { return !fits(c.inputs, in_metas) || !fits(c.outputs, out_metas); });
    candidates.push_back(all_broadcast);
    // An op writing an input in place writes the variable where it is: no boxing of that input.
    if (const OpDef* def = TryFindOp(op_type); def != nullptr) {
      for (int m : def->mutates_inputs) {
        if (m >= static_cast<int>(inputs.size())) continue;
        const Placed& variable = placed[static_cast<std::size_t>(inputs[static_cast<std::size_t>(m)])];
        const Sbp& has = variable.sbp;
        // A whole variable is also its own rows (rows_of_variable): an update may write them per device.
        // Not across processes: every process keeps its whole copy of each variable, updated whole.
        const bool rows = is_variable_register(variable) && split_processes == 1 && shared_memory;
        std::erase_if(candidates, [&](const SbpSignature& c) {
          const Sbp& wants = c.inputs[static_cast<std::size_t>(m)];
          return !(wants == has || (rows && wants == Sbp::S(0)));
        });
        if (candidates.empty()) {
          throw std::invalid_argument(fmt::format(
              "[{}] cannot update '{}' in place: it is {} over {} devices and the op runs only whole (use an "
              "elementwise optimizer such as SGD, momentum, Adam or RMSProp with split variables)",
              op_type, graph.values[static_cast<std::size_t>(inputs[static_cast<std::size_t>(m)])].name, has.ToString(), k));
        }
      }
    }
    const SbpSignature* best = nullptr;
    double best_cost = std::numeric_limits<double>::infinity();
    for (const SbpSignature& candidate : candidates) {
      double cost = 0;
      for (std::size_t i = 0; i < inputs.size(); ++i) cost += boxing_cost(inputs[i], candidate.inputs[i], devices);
      if (best == nullptr || cost < best_cost) {
        best = &candidate;
        best_cost = cost;
      }
    }
    return *best;
  };

  std::vector<bool> gradient(graph.values.size(), false);
  for (int value : graph.variable_gradients) gradient[static_cast<std::size_t>(value)] = true;

  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (!live[n] || fused_away[n]) continue;
    const OpNode& node = graph.nodes[n];
    const std::vector<int> devices = placer.Devices(node);
    if (!bucket.empty()) {  // an op reading a gradient in the open bucket reads it averaged
      const std::vector<int>& reads = chain_ending_at[n] >= 0 ? chains[static_cast<std::size_t>(chain_ending_at[n])].inputs : node.inputs;
      if (std::any_of(reads.begin(), reads.end(), [&](int value) { return std::find(bucket.begin(), bucket.end(), value) != bucket.end(); })) {
        close_bucket();
      }
    }
    if (node.type == kPlaceholderOp) {
      const auto placeholder = std::find(graph.placeholder_values.begin(), graph.placeholder_values.end(), node.outputs[0]);
      const std::size_t index = static_cast<std::size_t>(placeholder - graph.placeholder_values.begin());
      const ValueInfo& value = graph.values[static_cast<std::size_t>(node.outputs[0])];
      Placed& out = placed[static_cast<std::size_t>(node.outputs[0])];
      out.per_device = mirrored;
      // Consistent: data parallel by default, the batch (axis 0) split over the placement. Each
      // piece is a range of the caller's tensor: no copy.
      const int k = static_cast<int>(devices.size());
      const bool split = !mirrored && k > 1 && value.meta.shape.Rank() >= 1 && value.meta.shape[0] >= k;
      out.sbp = split ? Sbp::S(0) : Sbp::B();
      const int pieces = mirrored ? plan->input_pieces[index] : split ? k : 1;
      const std::vector<TensorMeta> metas = pieces_of(value.meta, out.sbp, static_cast<std::size_t>(pieces));
      for (int r = 0; r < pieces; ++r) {
        const int device = devices[static_cast<std::size_t>(r)];
        const int task = AddTask(*plan, TaskKind::kInput, pieces == 1 ? node.name : fmt::format("{}:{}", node.name, device),
                                 device_stream(device));
        node_tasks[n].push_back(task);
        TaskDesc& desc = plan->tasks[static_cast<std::size_t>(task)];
        desc.input_index = input_base[index] + (mirrored ? r : 0);
        if (split) {
          desc.input_offset = static_cast<std::size_t>(SplitBegin(value.meta.shape[0], k, r)) *
                              (value.meta.NumBytes() / static_cast<std::size_t>(value.meta.shape[0]));
        }
        Consume(*plan, task, tick);
        if (pieces == 1 && spans_every_process(devices)) everywhere.push_back(task);  // every process passes it
        out.registers.push_back(
            AddRegister(*plan, value.name, task, options.source_register_num, metas[static_cast<std::size_t>(r)]));
        out.devices.push_back(device);
      }
      continue;
    }

    if (node.type == kVariableOp) {
      const auto& attrs = std::any_cast<const VariableAttrs&>(node.attrs);
      const Distribute& distribute = attrs.spec.distribute;
      const int k = static_cast<int>(devices.size());
      if (!mirrored && k > 1 && distribute.kind == Distribute::Kind::kSplit) {
        // Model parallelism: each device's register is its range of rows of the one variable.
        const ValueInfo& value = graph.values[static_cast<std::size_t>(node.outputs[0])];
        const Shape& shape = value.meta.shape;
        if (!shared_memory) {
          throw std::invalid_argument(fmt::format(
              "[variable] '{}' is split over {} GPUs: a split variable's rows are ranges of one buffer, which GPUs do "
              "not share; keep it whole (data parallelism) or split it on CPU devices", attrs.name, k));
        }
        if (split_processes > 1) {
          throw std::invalid_argument(fmt::format(
              "[variable] '{}' is split over the devices of {} processes: a split variable must stay in one process "
              "(place it on one machine's devices); every process holds whole variables", attrs.name, split_processes));
        }
        if (distribute.axis != 0) {
          throw std::invalid_argument(fmt::format(
              "[variable] '{}' is split along axis {}: Weir splits variables along axis 0 only (each device's "
              "rows are one range of the variable's storage)", attrs.name, distribute.axis));
        }
        if (shape.Rank() == 0 || shape[0] < k) {
          throw std::invalid_argument(fmt::format("[variable] '{}' {} split along axis 0 over {} devices needs at "
                                                  "least {} rows", attrs.name, shape, k, k));
        }
        const Sbp split = Sbp::S(0);
        const std::vector<TensorMeta> metas = pieces_of(value.meta, split, devices.size());
        Placed& out = placed[static_cast<std::size_t>(node.outputs[0])];
        out = Placed{{}, devices, false, split};
        for (int r = 0; r < k; ++r) {
          const int device = devices[static_cast<std::size_t>(r)];
          const int task = AddTask(*plan, TaskKind::kVariable, fmt::format("{}:{}", node.name, device), device_stream(device));
          node_tasks[n].push_back(task);
          Consume(*plan, task, tick);
          const int reg = AddRegister(*plan, value.name, task, 1, metas[static_cast<std::size_t>(r)]);
          plan->registers[static_cast<std::size_t>(reg)].variable = attrs.name;
          plan->registers[static_cast<std::size_t>(reg)].variable_offset =
              static_cast<std::size_t>(SplitBegin(shape[0], k, r)) * (value.meta.NumBytes() / static_cast<std::size_t>(shape[0]));
          out.registers.push_back(reg);
        }
        plan->variables_read.push_back(attrs.name);
        continue;
      }
      const int task = AddTask(*plan, TaskKind::kVariable, node.name, device_stream(devices.front()));
      if (split_processes > 1) everywhere.push_back(task);  // every process holds every variable
      node_tasks[n].push_back(task);
      Consume(*plan, task, tick);
      const ValueInfo& value = graph.values[static_cast<std::size_t>(node.outputs[0])];
      const int reg = AddRegister(*plan, value.name, task, 1, value.meta);
      plan->registers[static_cast<std::size_t>(reg)].variable = attrs.name;
      placed[static_cast<std::size_t>(node.outputs[0])] = Placed{{reg}, {devices.front()}};
      plan->variables_read.push_back(attrs.name);
      continue;
    }

    // A parallel_cast is a layout hint: its input boxed into the hinted SBP, aliased (not a variable's
    // register, which the reshape rule below explains).
    if (node.type == "parallel_cast") {
      const Distribute& hint = std::any_cast<const ParallelCastAttrs&>(node.attrs).value;
      Placed input = placed[static_cast<std::size_t>(node.inputs[0])];
      if (!mirrored && devices.size() > 1 && hint.kind != Distribute::Kind::kAuto) {
        const TensorMeta& meta = graph.values[static_cast<std::size_t>(node.inputs[0])].meta;
        const Sbp to = hint.kind == Distribute::Kind::kSplit ? Sbp::S(hint.axis) : Sbp::B();
        if (to.IsSplit() && meta.shape[to.axis] < static_cast<std::int64_t>(devices.size())) {
          throw std::invalid_argument(fmt::format("[parallel_cast] op '{}': {} cannot split along axis {} over {} devices",
                                                  node.name, meta.shape, to.axis, devices.size()));
        }
        input = box(node.inputs[0], to, devices);
      }
      if (plan->registers[static_cast<std::size_t>(input.registers.front())].variable.empty()) {
        placed[static_cast<std::size_t>(node.outputs[0])] = input;
        continue;
      }
    }

    // A reshape changes no byte: its readers read its input's register (no actor, no copy). Not a
    // variable's: an output naming the reshape must not alias a variable that a writer changes.
    if (node.type == "reshape") {
      Placed input = placed[static_cast<std::size_t>(node.inputs[0])];
      SbpSignature signature{{input.sbp}, {input.sbp}};
      if (!mirrored) {
        signature = choose(node.type, &node.attrs, node.inputs, node.outputs, devices);
        input = box(node.inputs[0], signature.inputs[0], devices);
      }
      if (plan->registers[static_cast<std::size_t>(input.registers.front())].variable.empty()) {
        input.sbp = signature.outputs[0];
        placed[static_cast<std::size_t>(node.outputs[0])] = input;
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
    // An op that writes in place (an optimizer update, a moving average).
    const bool writes = node.type != "constant" && !FindOp(node.type).mutates_inputs.empty();
    // Mirrored view on several devices: an update whose per-device inputs are all gradients (pieces
    // to average) runs as the consistent view runs it: each device averages its rows of every
    // device's gradient (the in-process reduce-scatter) and updates its rows of the variable in
    // place, rather than one device averaging whole gradients and updating whole variables.
    bool mirrored_update = false;
    if (mirrored && writes && devices.size() > 1 && shared_memory) {
      bool averaged = false;
      bool others_whole = true;
      for (int value : inputs) {
        const Placed& input = placed[static_cast<std::size_t>(value)];
        if (input.sbp.IsPartialSum() && input.devices == devices) {
          averaged = true;
        } else if (input.PerDevice()) {
          others_whole = false;
        }
      }
      mirrored_update = averaged && others_whole;
    }
    if (!mirrored || mirrored_update) {
      // Consistent view: the op's signature decides its replicas (one per device of the placement,
      // or one on its first device when everything is broadcast) and the boxing of its inputs.
      const SbpSignature signature = choose(op_type, attrs, inputs, node.outputs, devices);
      std::vector<Placed> boxed;
      for (std::size_t i = 0; i < inputs.size(); ++i) boxed.push_back(box(inputs[i], signature.inputs[i], devices));
      const bool whole = std::all_of(signature.inputs.begin(), signature.inputs.end(), [](const Sbp& s) { return s.IsBroadcast(); }) &&
                         std::all_of(signature.outputs.begin(), signature.outputs.end(), [](const Sbp& s) { return s.IsBroadcast(); });
      const std::vector<int> replicas = whole ? std::vector<int>{devices.front()} : devices;
      const int k = static_cast<int>(replicas.size());
      for (int r = 0; r < k; ++r) {
        const int device = replicas[static_cast<std::size_t>(r)];
        std::vector<TensorMeta> input_metas;
        std::vector<TensorMeta> output_metas;
        for (std::size_t i = 0; i < inputs.size(); ++i) {
          const TensorMeta& logical = graph.values[static_cast<std::size_t>(inputs[i])].meta;
          input_metas.push_back({PieceShape(logical.shape, signature.inputs[i], k, r), logical.dtype});
        }
        for (std::size_t j = 0; j < node.outputs.size(); ++j) {
          const TensorMeta& logical = graph.values[static_cast<std::size_t>(node.outputs[j])].meta;
          output_metas.push_back({PieceShape(logical.shape, signature.outputs[j], k, r), logical.dtype});
        }
        const int task = AddKernelTask(*plan, op_type, k == 1 ? name : fmt::format("{}:{}", name, device), attrs,
                                       input_metas, output_metas, device_stream(device));
        plan->tasks[static_cast<std::size_t>(task)].intra_op_threads = options.threads_per_device;
        // Every process makes every update (a pipeline stage's gradients come to it): each then holds
        // every variable up to date, for any job, checkpoint or read.
        if (whole && (spans_every_process(devices) || (split_processes > 1 && writes))) everywhere.push_back(task);
        node_tasks[n].push_back(task);
        if (inputs.empty()) Consume(*plan, task, tick);  // ops without inputs (constants) fire once per call
        for (const Placed& input : boxed) {
          const int reg = input.registers.size() == 1 ? input.registers.front() : input.registers[static_cast<std::size_t>(r)];
          plan->tasks[static_cast<std::size_t>(task)].input_slots.push_back(Consume(*plan, task, reg));
        }
        for (std::size_t j = 0; j < node.outputs.size(); ++j) {
          const ValueInfo& info = graph.values[static_cast<std::size_t>(node.outputs[j])];
          Placed& out = placed[static_cast<std::size_t>(node.outputs[j])];
          out.registers.push_back(AddRegister(*plan, info.name, task, 1, output_metas[j]));
          out.devices.push_back(device);
          out.sbp = signature.outputs[j];
        }
      }
      continue;
    }
    // Any other writer runs once: whatever of its inputs differs per device is averaged first. So
    // are gradients any other op reads.
    for (int value : inputs) {
      if (writes || placed[static_cast<std::size_t>(value)].sbp.IsPartialSum()) all_reduce({value});
    }
    bool per_device = false;
    for (int value : inputs) {
      const Placed& input = placed[static_cast<std::size_t>(value)];
      if (!input.PerDevice()) continue;
      per_device = true;
      if (input.devices != devices) {
        throw std::invalid_argument(fmt::format(
            "[placement] job '{}': op '{}' runs on devices {} but reads '{}', which the mirrored view holds per "
            "device on devices {}; mirrored ops and their per-device inputs need one placement",
            graph.name, node.name, fmt::join(devices, ","), graph.values[static_cast<std::size_t>(value)].name,
            fmt::join(input.devices, ",")));
      }
    }
    const std::vector<int> replicas = per_device ? devices : std::vector<int>{devices.front()};
    std::vector<TensorMeta> input_metas;
    std::vector<TensorMeta> output_metas;
    for (int value : inputs) input_metas.push_back(graph.values[static_cast<std::size_t>(value)].meta);
    for (int value : node.outputs) {
      output_metas.push_back(graph.values[static_cast<std::size_t>(value)].meta);
      placed[static_cast<std::size_t>(value)].per_device = per_device;
    }
    for (std::size_t r = 0; r < replicas.size(); ++r) {
      const int device = replicas[r];
      const int task = AddKernelTask(*plan, op_type, replicas.size() == 1 ? name : fmt::format("{}:{}", name, device),
                                     attrs, input_metas, output_metas, device_stream(device));
      plan->tasks[static_cast<std::size_t>(task)].intra_op_threads = options.threads_per_device;
      node_tasks[n].push_back(task);
      if (inputs.empty()) Consume(*plan, task, tick);  // ops without inputs (constants) fire once per call
      for (int value : inputs) {
        const Placed& input = placed[static_cast<std::size_t>(value)];
        const int reg = input.PerDevice() ? input.registers[r] : input.registers.front();
        plan->tasks[static_cast<std::size_t>(task)].input_slots.push_back(Consume(*plan, task, reg));
      }
      for (int value : node.outputs) {
        const ValueInfo& info = graph.values[static_cast<std::size_t>(value)];
        Placed& out = placed[static_cast<std::size_t>(value)];
        out.registers.push_back(AddRegister(*plan, info.name, task, 1, info.meta));
        out.devices.push_back(device);
      }
    }
    // The gradients of a mirrored job's variables are averaged as soon as they are ready, while the
    // backward pass goes on: by their updates' reduce-scatter (pieces to average until then), or by
    // an all-reduce when another op reads them.
    for (int value : node.outputs) {
      if (!gradient[static_cast<std::size_t>(value)]) continue;
      Placed& piece = placed[static_cast<std::size_t>(value)];
      if (piece.registers.size() > 1) {
        piece.sbp = Sbp::P();
        piece.mean = true;
      } else if (across_processes && options.fusion_threshold_bytes > 0 && piece.PerDevice()) {
        add_to_bucket(value);
      } else {
        all_reduce({value});
      }
    }
  }
  close_bucket();

  // Every job, predict or train, returns a variable it writes in place as it was before this call's
  // writes. The sink cannot read such a variable directly: it runs after the writes (a call completes
  // only once they are done), and ordering it before them would make a cycle. So the output reads an
  // identity copy, which OrderWriters orders before the writers like any other reader. A variable the
  // job does not write needs no copy: the sink reads it directly.
  const std::vector<bool> written = WrittenValues(graph, live);
  std::map<int, int> copies;  // written value -> its copy's register, however many outputs name it
  std::vector<std::vector<int>> output_registers;
  for (const auto& [name, value] : graph.outputs) {
    // The sink concatenates pieces along axis 0: a consistent result split otherwise (or partial)
    // is gathered first.
    // A split variable the job writes is gathered into its own buffer before the writes, so it needs
    // no copy either.
    if (mirrored && placed[static_cast<std::size_t>(value)].sbp.IsPartialSum()) all_reduce({value});
    // Split over processes, every process returns the whole result.
    Placed piece = placed[static_cast<std::size_t>(value)];
    if (!mirrored && (!(piece.sbp.IsBroadcast() || (piece.sbp == Sbp::S(0) && split_processes == 1)) ||
                      (written[static_cast<std::size_t>(value)] && piece.registers.size() > 1))) {
      piece = box(value, Sbp::B(), piece.devices);
    }
    if (!written[static_cast<std::size_t>(value)] ||
        plan->registers[static_cast<std::size_t>(piece.registers.front())].variable.empty()) {
      output_registers.push_back(piece.registers);
      continue;
    }
    const auto [copy, inserted] = copies.try_emplace(value, -1);
    if (inserted) {
      static const std::any kNoAttrs;
      const ValueInfo& info = graph.values[static_cast<std::size_t>(value)];
      const int task = AddKernelTask(*plan, "identity", fmt::format("{}_copy", info.name), &kNoAttrs, {info.meta},
                                     {info.meta}, device_stream(piece.devices.front()));
      if (split_processes > 1) everywhere.push_back(task);
      plan->tasks[static_cast<std::size_t>(task)].input_slots.push_back(Consume(*plan, task, piece.registers.front()));
      copy->second = AddRegister(*plan, fmt::format("{}_copy/out", info.name), task, 1, info.meta);
    }
    output_registers.push_back({copy->second});
  }

  plan->sink_task = AddTask(*plan, TaskKind::kSink, "sink", control_stream);
  // Every update of a multi-tensor kernel writes through it (OrderWriters orders each variable's readers).
  for (const FusedChain& chain : chains) {
    if (chain.op_type != "multi_update") continue;
    for (int node : chain.nodes) node_tasks[static_cast<std::size_t>(node)] = node_tasks[static_cast<std::size_t>(chain.Last())];
  }
  OrderWriters(graph, live, placed, node_tasks, *plan);
  for (std::size_t i = 0; i < graph.outputs.size(); ++i) {
    const auto& [name, value] = graph.outputs[i];
    TaskDesc& sink = plan->tasks[static_cast<std::size_t>(plan->sink_task)];
    for (int reg : output_registers[i]) {
      const int slot = Consume(*plan, plan->sink_task, reg);
      plan->tasks[static_cast<std::size_t>(plan->sink_task)].input_slots.push_back(slot);
      sink.input_metas.push_back(plan->registers[static_cast<std::size_t>(reg)].meta);  // a piece's
    }
    plan->output_names.push_back(name);
    plan->output_metas.push_back(graph.values[static_cast<std::size_t>(value)].meta);
    plan->output_pieces.push_back(static_cast<int>(output_registers[i].size()));
  }

  // Where kernels run on the host's actor threads (the CPU's default), a kernel's failure is known when
  // it returns. On a device stream (a GPU's, or the CPU's with async_cpu_streams) it is known only once
  // the stream has run it: the barrier would wait for the device before every step's updates and split
  // the stream's graph in two.
  if (options.device_kind == Device::Kind::kCpu && !options.async_cpu_streams && split_processes == 1) {
    CommitBeforeWrites(graph, live, node_tasks, control_stream, *plan);
  }
  // Collectives across processes: each call's chain after the previous call's, so calls overlap.
  if (split_processes == 1 && plan->process_collectives) GateCollectiveCalls(*plan, collectives);
  // On CUDA devices: the registers in device memory, with copy actors where a register crosses between
  // the host and a device. A plan split over processes gets them once split, in each process's part
  // (the transfers between processes are then there, and device indexes are the process's own).
  if (options.device_kind == Device::Kind::kCuda && split_processes == 1) AddDeviceCopies(*plan, options.copy_stream_bytes);
  // A register read on another device than its producer's is a pipeline-stage boundary: two slots,
  // so that the producer works on the next call while the consumer works on this one.
  for (RegisterDesc& reg : plan->registers) {
    if (reg.slot_bytes == 0 || !reg.variable.empty() || reg.register_num > 1) continue;
    const StreamId& from = plan->streams[static_cast<std::size_t>(plan->tasks[static_cast<std::size_t>(reg.producer)].stream)];
    for (int consumer : reg.consumers) {
      const StreamId& to = plan->streams[static_cast<std::size_t>(plan->tasks[static_cast<std::size_t>(consumer)].stream)];
      if (from.kind == StreamKind::kCompute && to.kind == StreamKind::kCompute && !(from.device == to.device)) {
        reg.register_num = 2;
      }
    }
  }
  if (options.stream_graphs && split_processes == 1) FuseStreamGraphs(*plan, options.async_cpu_streams);
  if (split_processes > 1) {
    ProcessSplit split{split_processes, options.rank, options.devices, std::vector<bool>(plan->tasks.size(), false)};
    for (int task : everywhere) split.everywhere[static_cast<std::size_t>(task)] = true;
    std::shared_ptr<Plan> part = SplitOverProcesses(std::move(*plan), split);
    if (options.device_kind == Device::Kind::kCuda) AddDeviceCopies(*part, options.copy_stream_bytes);
    DropUnreadInputs(*part);
    part->CheckAcyclic();
    part->CheckEveryTaskReachesSink();
    return part;
  }
  DropUnreadInputs(*plan);
  plan->CheckAcyclic();
  plan->CheckEveryTaskReachesSink();
  return plan;
}

}  // namespace weir::internal
