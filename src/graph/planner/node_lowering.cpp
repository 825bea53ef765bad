#include "graph/planner/node_lowering.hpp"

#include <algorithm>
#include <any>
#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "graph/op_registry.hpp"
#include "graph/planner/sbp_choice.hpp"

namespace weir::internal {

namespace {

// What a kernel actor runs for a node: the node's op, or the fused kernel of the chain it ends.
struct NodeKernel {
  std::string_view op_type;
  std::string name;
  const std::any* attrs = nullptr;
  std::vector<int> inputs;  // value ids
  bool writes = false;      // writes an input in place (an optimizer update, a moving average)
};

// Consistent view: data parallel by default, the batch (axis 0) split over the placement. Each piece
// is a range of the caller's tensor: no copy. Mirrored view: one piece per device.
void LowerPlaceholder(Lowering& lowering, std::size_t n, const std::vector<int>& devices) {
  const JobGraph& graph = lowering.graph;
  const OpNode& node = graph.nodes[n];
  const bool mirrored = lowering.topology.mirrored;
  const auto placeholder = std::find(graph.placeholder_values.begin(), graph.placeholder_values.end(), node.outputs[0]);
  const std::size_t index = static_cast<std::size_t>(placeholder - graph.placeholder_values.begin());
  const ValueInfo& value = lowering.Value(node.outputs[0]);
  Placed& out = lowering.PlacedOf(node.outputs[0]);
  out.per_device = mirrored;
  const int k = static_cast<int>(devices.size());
  const bool split = !mirrored && k > 1 && value.meta.shape.Rank() >= 1 && value.meta.shape[0] >= k;
  out.sbp = split ? Sbp::S(0) : Sbp::B();
  const int pieces = mirrored ? lowering.plan.input_pieces[index] : split ? k : 1;
  const std::vector<TensorMeta> metas = PiecesOf(value.meta, out.sbp, static_cast<std::size_t>(pieces));
  for (int r = 0; r < pieces; ++r) {
    const int device = devices[static_cast<std::size_t>(r)];
    const int task = lowering.AddInputTask(pieces == 1 ? node.name : fmt::format("{}:{}", node.name, device), value.name,
                                           lowering.InputBase(index) + (mirrored ? r : 0),
                                           split ? RowsOffset(value.meta, k, r) : 0, metas[static_cast<std::size_t>(r)], device);
    lowering.node_tasks[n].push_back(task);
    // Every process passes it.
    if (pieces == 1 && lowering.topology.SpansEveryProcess(devices)) lowering.everywhere.push_back(task);
    out.registers.push_back(lowering.Task(task).produced.front());
    out.devices.push_back(device);
  }
}

// Model parallelism: each device's register is its range of rows of the one variable.
void LowerSplitVariable(Lowering& lowering, std::size_t n, const std::vector<int>& devices) {
  const OpNode& node = lowering.graph.nodes[n];
  const auto& attrs = std::any_cast<const VariableAttrs&>(node.attrs);
  const Topology& topology = lowering.topology;
  const int k = static_cast<int>(devices.size());
  const ValueInfo& value = lowering.Value(node.outputs[0]);
  const Shape& shape = value.meta.shape;
  if (!topology.shared_memory) {
    throw std::invalid_argument(fmt::format(
        "[variable] '{}' is split over {} GPUs: a split variable's rows are ranges of one buffer, which GPUs do "
        "not share; keep it whole (data parallelism) or split it on CPU devices", attrs.name, k));
  }
  if (topology.split_processes > 1) {
    throw std::invalid_argument(fmt::format(
        "[variable] '{}' is split over the devices of {} processes: a split variable must stay in one process "
        "(place it on one machine's devices); every process holds whole variables", attrs.name, topology.split_processes));
  }
  if (shape.Rank() == 0 || shape[0] < k) {
    throw std::invalid_argument(fmt::format("[variable] '{}' {} split along axis 0 over {} devices needs at "
                                            "least {} rows", attrs.name, shape, k, k));
  }
  const std::vector<TensorMeta> metas = PiecesOf(value.meta, Sbp::S(0), devices.size());
  Placed& out = lowering.PlacedOf(node.outputs[0]);
  out = Placed{{}, devices, false, Sbp::S(0)};
  for (int r = 0; r < k; ++r) {
    const int device = devices[static_cast<std::size_t>(r)];
    const int task = lowering.AddVariableTask(fmt::format("{}:{}", node.name, device), value.name, attrs.name,
                                              RowsOffset(value.meta, k, r), metas[static_cast<std::size_t>(r)],
                                              lowering.DeviceStream(device));
    lowering.node_tasks[n].push_back(task);
    out.registers.push_back(lowering.Task(task).produced.front());
  }
  lowering.plan.variables_read.push_back(attrs.name);
}

void LowerVariable(Lowering& lowering, std::size_t n, const std::vector<int>& devices) {
  const OpNode& node = lowering.graph.nodes[n];
  const auto& attrs = std::any_cast<const VariableAttrs&>(node.attrs);
  if (!lowering.topology.mirrored && devices.size() > 1 && attrs.spec.distribute.kind == Distribute::Kind::kSplit) {
    if (attrs.spec.distribute.axis == 0) {
      LowerSplitVariable(lowering, n, devices);
      return;
    }
    // Each device's part of a split along another axis is not one range of the storage: the
    // variable is held whole on its first device, and boxing gives each op the part it reads (the
    // values are the same; the memory is not divided).
    lowering.plan.notices.push_back(fmt::format(
        "job '{}': variable '{}' is split along axis {} over {} devices; Weir divides a variable's storage along "
        "axis 0 only, so it is held whole on the first device and each op reads its part through boxing",
        lowering.plan.job_name, attrs.name, attrs.spec.distribute.axis, devices.size()));
  }
  const ValueInfo& value = lowering.Value(node.outputs[0]);
  const int task = lowering.AddVariableTask(node.name, value.name, attrs.name, 0, value.meta,
                                            lowering.DeviceStream(devices.front()));
  if (lowering.topology.split_processes > 1) lowering.everywhere.push_back(task);  // every process holds every variable
  lowering.node_tasks[n].push_back(task);
  lowering.PlacedOf(node.outputs[0]) = Placed{{lowering.Task(task).produced.front()}, {devices.front()}};
  lowering.plan.variables_read.push_back(attrs.name);
}

// The signature a consistent op runs with (sbp_choice.hpp), for its inputs as placed so far.
SbpSignature Choose(Lowering& lowering, const Boxing& boxing, std::string_view op_type, const std::any* attrs,
                    const std::vector<int>& inputs, const std::vector<int>& outputs, const std::vector<int>& devices) {
  SignatureQuery query{op_type, attrs, {}, {}, devices,
                       lowering.topology.split_processes == 1 && lowering.topology.shared_memory};
  for (int value : inputs) {
    const Placed& placed = lowering.PlacedOf(value);
    query.inputs.push_back({lowering.Value(value).name, lowering.Value(value).meta, placed, boxing.IsWholeVariable(placed)});
  }
  for (int value : outputs) query.outputs.push_back(lowering.Value(value).meta);
  return ChooseSignature(query);
}

// A parallel_cast (a layout hint: its input boxed into the hinted SBP) or a reshape (no byte changes)
// is an alias: its readers read its input's registers, no actor, no copy. Not a variable's register: an
// output naming the alias must not alias a variable that a writer changes; such a node runs as a kernel
// (returns false).
bool LowerAlias(Lowering& lowering, Boxing& boxing, const OpNode& node, const std::vector<int>& devices) {
  const bool mirrored = lowering.topology.mirrored;
  if (node.type == "parallel_cast") {
    const Distribute& hint = std::any_cast<const ParallelCastAttrs&>(node.attrs).value;
    Placed input = lowering.PlacedOf(node.inputs[0]);
    if (!mirrored && devices.size() > 1 && hint.kind != Distribute::Kind::kAuto) {
      const TensorMeta& meta = lowering.Value(node.inputs[0]).meta;
      const Sbp to = hint.kind == Distribute::Kind::kSplit ? Sbp::S(hint.axis) : Sbp::B();
      if (to.IsSplit() && meta.shape[to.axis] < static_cast<std::int64_t>(devices.size())) {
        throw std::invalid_argument(fmt::format("[parallel_cast] op '{}': {} cannot split along axis {} over {} devices",
                                                node.name, meta.shape, to.axis, devices.size()));
      }
      input = boxing.Box(node.inputs[0], to, devices);
    }
    if (!lowering.Register(input.registers.front()).variable.empty()) return false;
    lowering.PlacedOf(node.outputs[0]) = input;
    return true;
  }
  if (node.type == "reshape") {
    Placed input = lowering.PlacedOf(node.inputs[0]);
    SbpSignature signature{{input.sbp}, {input.sbp}};
    if (!mirrored) {
      signature = Choose(lowering, boxing, node.type, &node.attrs, node.inputs, node.outputs, devices);
      input = boxing.Box(node.inputs[0], signature.inputs[0], devices);
    }
    if (!lowering.Register(input.registers.front()).variable.empty()) return false;
    input.sbp = signature.outputs[0];
    lowering.PlacedOf(node.outputs[0]) = input;
    return true;
  }
  return false;
}

// Mirrored view on several devices: an update whose per-device inputs are all gradients (pieces to
// average) runs as the consistent view runs it: each device averages its rows of every device's
// gradient (the in-process reduce-scatter) and updates its rows of the variable in place, rather than
// one device averaging whole gradients and updating whole variables.
bool IsMirroredUpdateOfRows(Lowering& lowering, const NodeKernel& kernel, const std::vector<int>& devices) {
  if (!kernel.writes || devices.size() <= 1 || !lowering.topology.shared_memory) return false;
  bool averaged = false;
  bool others_whole = true;
  for (int value : kernel.inputs) {
    const Placed& input = lowering.PlacedOf(value);
    if (input.sbp.IsPartialSum() && input.devices == devices) {
      averaged = true;
    } else if (input.PerDevice()) {
      others_whole = false;
    }
  }
  return averaged && others_whole;
}

// Slots of an op's output registers: the data pipeline's ops (readers, decoders, image ops) get as
// many as the source's, so that while the job computes on one call's batch they make the next
// call's (as input tasks do for placeholders); every other op one.
int OutputSlots(const Lowering& lowering, const NodeKernel& kernel) {
  const OpDef* def = TryFindOp(kernel.op_type);
  return def != nullptr && def->host_only ? lowering.options.source_register_num : 1;
}

// Consistent view: the op's signature decides its replicas (one per device of the placement, or one
// on its first device when everything is broadcast) and the boxing of its inputs.
void LowerConsistentKernel(Lowering& lowering, Boxing& boxing, std::size_t n, const NodeKernel& kernel,
                           const std::vector<int>& devices) {
  const OpNode& node = lowering.graph.nodes[n];
  Plan& plan = lowering.plan;
  const SbpSignature signature = Choose(lowering, boxing, kernel.op_type, kernel.attrs, kernel.inputs, node.outputs, devices);
  std::vector<Placed> boxed;
  for (std::size_t i = 0; i < kernel.inputs.size(); ++i) boxed.push_back(boxing.Box(kernel.inputs[i], signature.inputs[i], devices));
  const auto broadcast = [](const Sbp& s) { return s.IsBroadcast(); };
  const bool whole = std::all_of(signature.inputs.begin(), signature.inputs.end(), broadcast) &&
                     std::all_of(signature.outputs.begin(), signature.outputs.end(), broadcast);
  const std::vector<int> replicas = whole ? std::vector<int>{devices.front()} : devices;
  const int k = static_cast<int>(replicas.size());
  for (int r = 0; r < k; ++r) {
    const int device = replicas[static_cast<std::size_t>(r)];
    std::vector<TensorMeta> input_metas;
    std::vector<TensorMeta> output_metas;
    for (std::size_t i = 0; i < kernel.inputs.size(); ++i) {
      const TensorMeta& logical = lowering.Value(kernel.inputs[i]).meta;
      input_metas.push_back({PieceShape(logical.shape, signature.inputs[i], k, r), logical.dtype});
    }
    for (std::size_t j = 0; j < node.outputs.size(); ++j) {
      const TensorMeta& logical = lowering.Value(node.outputs[j]).meta;
      output_metas.push_back({PieceShape(logical.shape, signature.outputs[j], k, r), logical.dtype});
    }
    const int task = lowering.AddKernelTask(kernel.op_type, k == 1 ? kernel.name : fmt::format("{}:{}", kernel.name, device),
                                            kernel.attrs, input_metas, output_metas, lowering.DeviceStream(device));
    lowering.Task(task).intra_op_threads = lowering.options.threads_per_device;
    lowering.Task(task).shard = r;  // the plan's devices are every process's (a consistent job)
    lowering.Task(task).shards = k;
    // Every process makes every update (a pipeline stage's gradients come to it): each then holds
    // every variable up to date, for any job, checkpoint or read.
    if (whole && (lowering.topology.SpansEveryProcess(devices) || (lowering.topology.split_processes > 1 && kernel.writes))) {
      lowering.everywhere.push_back(task);
    }
    lowering.node_tasks[n].push_back(task);
    if (kernel.inputs.empty()) plan.Consume(task, lowering.tick);  // ops without inputs (constants) fire once per call
    for (const Placed& input : boxed) {
      const int reg = input.registers.size() == 1 ? input.registers.front() : input.registers[static_cast<std::size_t>(r)];
      lowering.Task(task).input_slots.push_back(plan.Consume(task, reg));
    }
    for (std::size_t j = 0; j < node.outputs.size(); ++j) {
      Placed& out = lowering.PlacedOf(node.outputs[j]);
      out.registers.push_back(plan.AddRegister(lowering.Value(node.outputs[j]).name, task, OutputSlots(lowering, kernel), output_metas[j]));
      out.devices.push_back(device);
      out.sbp = signature.outputs[j];
    }
  }
}

// Mirrored view: one replica per device where an input differs per device, else one. A writer runs
// once: whatever of its inputs differs per device is averaged first; so are gradients any other op
// reads. A variable's gradient is averaged as soon as it is ready, while the backward pass goes on:
// by its update's reduce-scatter (pieces to average until then), or by an all-reduce (in a bucket
// across processes) when another op reads it.
void LowerMirroredKernel(Lowering& lowering, GradientAveraging& averaging, std::size_t n, const NodeKernel& kernel,
                         const std::vector<int>& devices, const std::vector<bool>& gradient) {
  const JobGraph& graph = lowering.graph;
  const OpNode& node = graph.nodes[n];
  Plan& plan = lowering.plan;
  for (int value : kernel.inputs) {
    if (kernel.writes || lowering.PlacedOf(value).sbp.IsPartialSum()) averaging.AllReduce({value});
  }
  bool per_device = false;
  for (int value : kernel.inputs) {
    const Placed& input = lowering.PlacedOf(value);
    if (!input.PerDevice()) continue;
    per_device = true;
    if (input.devices != devices) {
      throw std::invalid_argument(fmt::format(
          "[placement] job '{}': op '{}' runs on devices {} but reads '{}', which the mirrored view holds per "
          "device on devices {}; mirrored ops and their per-device inputs need one placement",
          graph.name, node.name, fmt::join(devices, ","), lowering.Value(value).name, fmt::join(input.devices, ",")));
    }
  }
  // A source runs on every device, its inputs (a reader's iteration variable) whole on each.
  if (const OpDef* def = TryFindOp(kernel.op_type); def != nullptr && def->per_device_source) {
    per_device = true;
  }
  const std::vector<int> replicas = per_device ? devices : std::vector<int>{devices.front()};
  // A mirrored job is planned per process: its replicas' shares count every process's devices.
  const int shards = static_cast<int>(replicas.size()) * (per_device ? lowering.topology.processes : 1);
  std::vector<TensorMeta> input_metas;
  std::vector<TensorMeta> output_metas;
  for (int value : kernel.inputs) input_metas.push_back(lowering.Value(value).meta);
  for (int value : node.outputs) {
    output_metas.push_back(lowering.Value(value).meta);
    lowering.PlacedOf(value).per_device = per_device;
  }
  for (std::size_t r = 0; r < replicas.size(); ++r) {
    const int device = replicas[r];
    const int task = lowering.AddKernelTask(kernel.op_type, replicas.size() == 1 ? kernel.name : fmt::format("{}:{}", kernel.name, device),
                                            kernel.attrs, input_metas, output_metas, lowering.DeviceStream(device));
    lowering.Task(task).intra_op_threads = lowering.options.threads_per_device;
    lowering.Task(task).shards = shards;
    lowering.Task(task).shard = static_cast<int>(r) + (per_device ? lowering.options.rank * static_cast<int>(replicas.size()) : 0);
    lowering.node_tasks[n].push_back(task);
    if (kernel.inputs.empty()) plan.Consume(task, lowering.tick);  // ops without inputs (constants) fire once per call
    for (int value : kernel.inputs) {
      const Placed& input = lowering.PlacedOf(value);
      const int reg = input.PerDevice() ? input.registers[r] : input.registers.front();
      lowering.Task(task).input_slots.push_back(plan.Consume(task, reg));
    }
    for (int value : node.outputs) {
      Placed& out = lowering.PlacedOf(value);
      out.registers.push_back(plan.AddRegister(lowering.Value(value).name, task, OutputSlots(lowering, kernel), lowering.Value(value).meta));
      out.devices.push_back(device);
    }
  }
  for (int value : node.outputs) {
    if (!gradient[static_cast<std::size_t>(value)]) continue;
    Placed& piece = lowering.PlacedOf(value);
    if (piece.registers.size() > 1) {
      piece.sbp = Sbp::P();
      piece.mean = true;
    } else if (lowering.topology.across_processes && lowering.options.fusion_threshold_bytes > 0 && piece.PerDevice()) {
      averaging.AddToBucket(value);
    } else {
      averaging.AllReduce({value});
    }
  }
}

}  // namespace

void LowerNodes(Lowering& lowering, const std::vector<bool>& live, const std::vector<std::vector<int>>& devices,
                const FusedKernels& fused, Boxing& boxing, GradientAveraging& averaging) {
  const JobGraph& graph = lowering.graph;
  std::vector<bool> gradient(graph.values.size(), false);
  for (int value : graph.variable_gradients) gradient[static_cast<std::size_t>(value)] = true;
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (!live[n] || fused.fused_away[n]) continue;
    const OpNode& node = graph.nodes[n];
    const std::vector<int>& node_devices = devices[n];
    const FusedChain* chain = fused.EndingAt(n);
    // An op reading a gradient in the open bucket reads it averaged.
    if (averaging.BucketHolds(chain != nullptr ? chain->inputs : node.inputs)) averaging.CloseBucket();
    if (node.type == kPlaceholderOp) {
      LowerPlaceholder(lowering, n, node_devices);
      continue;
    }
    if (node.type == kVariableOp) {
      LowerVariable(lowering, n, node_devices);
      continue;
    }
    if (LowerAlias(lowering, boxing, node, node_devices)) continue;
    NodeKernel kernel{node.type, node.name, &node.attrs, node.inputs,
                      node.type != "constant" && !FindOp(node.type).mutates_inputs.empty()};
    if (chain != nullptr) {  // the fused kernel, named after the chain's head
      kernel.op_type = chain->op_type;
      kernel.name = graph.nodes[static_cast<std::size_t>(chain->nodes.front())].name;
      kernel.attrs = &lowering.plan.fused_attrs.emplace_back(chain->attrs);
      kernel.inputs = chain->inputs;
    }
    if (!lowering.topology.mirrored || IsMirroredUpdateOfRows(lowering, kernel, node_devices)) {
      LowerConsistentKernel(lowering, boxing, n, kernel, node_devices);
    } else {
      LowerMirroredKernel(lowering, averaging, n, kernel, node_devices, gradient);
    }
  }
}

}  // namespace weir::internal
