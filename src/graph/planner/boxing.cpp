#include "graph/planner/boxing.hpp"

#include <algorithm>
#include <any>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace weir::internal {

std::vector<int> Boxing::CollectiveTask(std::string_view op_type, const std::string& value_name, CollectiveAttrs collective,
                                        const std::vector<int>& from, std::vector<TensorMeta> in_metas,
                                        const std::vector<TensorMeta>& out_metas) {
  Plan& plan = lowering_.plan;
  if (collective_stream_ < 0) {
    // A CPU executor, or a CUDA stream of the process's GPU that NCCL queues on.
    const Device device = lowering_.options.device_kind == Device::Kind::kCuda ? Device{Device::Kind::kCuda, 0} : Device::Cpu();
    collective_stream_ = static_cast<int>(plan.streams.size());
    plan.streams.push_back({device, StreamKind::kCollective, 0});
  }
  plan.process_collectives = plan.process_collectives || collective.across_processes;
  const std::any& attrs = plan.fused_attrs.emplace_back(collective);
  const int task = lowering_.AddKernelTask(op_type, fmt::format("{}({})", op_type, value_name), &attrs,
                                           std::move(in_metas), out_metas, collective_stream_);
  lowering_.Task(task).collective = true;
  for (int reg : from) lowering_.Task(task).input_slots.push_back(plan.Consume(task, reg));
  // Split over processes, each process chains its own collectives (process_split.cpp).
  if (!collectives_.empty() && lowering_.topology.split_processes == 1) plan.AddControlEdge(collectives_.back(), task);
  collectives_.push_back(task);
  std::vector<int> registers;
  for (const TensorMeta& meta : out_metas) {
    registers.push_back(plan.AddRegister(fmt::format("{}({})", op_type, value_name), task, 1, meta));
  }
  return registers;
}

bool Boxing::IsWholeVariable(const Placed& value) const {
  return value.registers.size() == 1 && value.sbp.IsBroadcast() && !lowering_.Register(value.registers.front()).variable.empty();
}

// A whole variable seen as row ranges (S(0)) on `devices`: one variable register per device pointing
// into the one storage, no copy. Updates write their rows in place through them.
Placed Boxing::RowsOfVariable(int value, const std::vector<int>& devices) {
  const auto key = std::make_pair(value, devices);
  if (const auto it = variable_rows_.find(key); it != variable_rows_.end()) return it->second;
  const RegisterDesc whole = lowering_.Register(lowering_.PlacedOf(value).registers.front());
  const TensorMeta& meta = lowering_.Value(value).meta;
  const int k = static_cast<int>(devices.size());
  const std::vector<TensorMeta> metas = PiecesOf(meta, Sbp::S(0), devices.size());
  Placed rows{{}, devices, false, Sbp::S(0)};
  for (int r = 0; r < k; ++r) {
    const int device = devices[static_cast<std::size_t>(r)];
    const int task = lowering_.AddVariableTask(fmt::format("{}:rows{}", whole.name, device), whole.name, whole.variable,
                                               RowsOffset(meta, k, r), metas[static_cast<std::size_t>(r)],
                                               lowering_.DeviceStream(device));
    rows.registers.push_back(lowering_.Task(task).produced.front());
  }
  variable_rows_.emplace(key, rows);
  return rows;
}

// A consistent job's input wanted whole, or in rows, on other devices than it was read on: read again
// from the caller's tensor there, which every process has whole, rather than gathered from the devices
// that read it (no input bytes cross between devices or processes, and no collective holds up a
// pipeline's next call). Nothing when the rows do not split that way.
std::optional<Placed> Boxing::ReadInput(int value, const Sbp& to, const std::vector<int>& devices) {
  const auto key = std::make_tuple(value, to.ToString(), devices);
  if (const auto it = input_reads_.find(key); it != input_reads_.end()) return it->second;
  const JobGraph& graph = lowering_.graph;
  const ValueInfo& info = lowering_.Value(value);
  const int k = to.IsBroadcast() ? 1 : static_cast<int>(devices.size());
  if (to.IsSplit() && (info.meta.shape.Rank() == 0 || info.meta.shape[0] < k)) return std::nullopt;
  const auto placeholder = std::find(graph.placeholder_values.begin(), graph.placeholder_values.end(), value);
  const std::size_t index = static_cast<std::size_t>(placeholder - graph.placeholder_values.begin());
  const std::vector<TensorMeta> metas = PiecesOf(info.meta, to, static_cast<std::size_t>(k));
  Placed read{{}, {}, false, to};
  for (int r = 0; r < k; ++r) {
    const int device = devices[static_cast<std::size_t>(r)];
    const int task = lowering_.AddInputTask(fmt::format("{}@{}", info.name, device), info.name, lowering_.InputBase(index),
                                            to.IsSplit() ? RowsOffset(info.meta, k, r) : 0,
                                            metas[static_cast<std::size_t>(r)], device);
    if (k == 1 && lowering_.topology.SpansEveryProcess(devices)) lowering_.everywhere.push_back(task);
    read.registers.push_back(lowering_.Task(task).produced.front());
    read.devices.push_back(device);
  }
  input_reads_.emplace(key, read);
  return read;
}

// P -> S in shared memory: each device sums its own piece of every device's addend, all devices at
// once (no collective actor, no whole sum): the reduce-scatter of the in-process backend.
Placed Boxing::ReduceScatterInPlace(int value, const Placed& from, const Sbp& to, const std::vector<int>& devices) {
  Plan& plan = lowering_.plan;
  const ValueInfo& info = lowering_.Value(value);
  const int k = static_cast<int>(devices.size());
  const std::vector<TensorMeta> metas = PiecesOf(info.meta, to, devices.size());
  Placed pieces{{}, devices, false, to};
  for (int r = 0; r < k; ++r) {
    const int device = devices[static_cast<std::size_t>(r)];
    const std::any& attrs = plan.fused_attrs.emplace_back(
        CollectiveAttrs{.op = from.mean ? ReduceOp::kMean : ReduceOp::kSum, .devices = k, .axis = to.axis, .rank = r});
    const int task = lowering_.AddKernelTask("reduce_scatter", fmt::format("reduce_scatter({}):{}", info.name, device), &attrs,
                                             std::vector<TensorMeta>(static_cast<std::size_t>(k), info.meta),
                                             {metas[static_cast<std::size_t>(r)]}, lowering_.DeviceStream(device));
    lowering_.Task(task).intra_op_threads = lowering_.options.threads_per_device;
    lowering_.Task(task).collective = true;
    for (int reg : from.registers) lowering_.Task(task).input_slots.push_back(plan.Consume(task, reg));
    pieces.registers.push_back(
        plan.AddRegister(fmt::format("reduce_scatter({})", info.name), task, 1, metas[static_cast<std::size_t>(r)]));
  }
  return pieces;
}

Placed Boxing::Box(int value, const Sbp& to, const std::vector<int>& devices) {
  const Placed from = lowering_.PlacedOf(value);
  const ValueInfo& info = lowering_.Value(value);
  const Topology& topology = lowering_.topology;
  if (from.sbp == to && (to.IsBroadcast() || from.devices == devices)) return from;
  if (info.meta.dtype == DType::kTensorBuffer) {
    // Its items point into the memory of the op that made them (kernels/data/tensor_buffer.hpp).
    throw std::invalid_argument(fmt::format(
        "[placement] job '{}': '{}' is a tensor_buffer (records or images) laid out as {} on devices {}, and an op wants "
        "it as {} on devices {}; tensor_buffers are read where they are made: place the data ops that read it as the op "
        "that makes it", lowering_.graph.name, info.name, from.sbp.ToString(), fmt::join(from.devices, ","), to.ToString(),
        fmt::join(devices, ",")));
  }
  const int k_from = static_cast<int>(from.devices.size());
  const int k = static_cast<int>(devices.size());
  if (to.IsPartialSum()) {
    throw std::logic_error(fmt::format("[compile] job '{}': no boxing makes '{}' partial-sum from {}",
                                       lowering_.graph.name, info.name, from.sbp.ToString()));
  }
  if (to == Sbp::S(0) && IsWholeVariable(from) && info.meta.shape.Rank() >= 1 && topology.shared_memory) {
    return RowsOfVariable(value, devices);
  }
  if (!topology.mirrored && lowering_.graph.nodes[static_cast<std::size_t>(info.producer)].type == kPlaceholderOp &&
      (to.IsBroadcast() || to == Sbp::S(0))) {
    if (std::optional<Placed> read = ReadInput(value, to, devices)) return *read;
  }
  if (from.sbp.IsPartialSum() && to.IsSplit() && from.devices == devices && !topology.across_processes &&
      topology.split_processes == 1 && topology.shared_memory) {
    return ReduceScatterInPlace(value, from, to, devices);
  }
  if (!from.sbp.IsBroadcast() && to.IsSplit() && from.devices == devices) {  // piece to piece
    // Across processes a reduce-scatter is one actor on the collective stream, chained in plan order.
    const bool partial = from.sbp.IsPartialSum();
    const std::vector<int> registers = CollectiveTask(
        partial ? "reduce_scatter" : "all_to_all", info.name,
        {.op = from.mean ? ReduceOp::kMean : ReduceOp::kSum, .devices = k, .axis = partial ? to.axis : from.sbp.axis,
         .out_axis = to.axis, .across_processes = partial && topology.across_processes},
        from.registers,
        partial ? std::vector<TensorMeta>(static_cast<std::size_t>(k), info.meta) : PiecesOf(info.meta, from.sbp, from.registers.size()),
        PiecesOf(info.meta, to, devices.size()));
    return Placed{registers, devices, false, to};
  }
  Placed whole = from;
  if (!from.sbp.IsBroadcast()) {  // gather or sum the pieces into one buffer
    const bool partial = from.sbp.IsPartialSum();
    whole.registers = CollectiveTask(partial ? "all_reduce" : "all_gather", info.name,
                                     {.op = from.mean ? ReduceOp::kMean : ReduceOp::kSum, .devices = k_from,
                                      .axis = from.sbp.axis, .across_processes = partial && topology.across_processes},
                                     from.registers,
                                     partial ? std::vector<TensorMeta>(from.registers.size(), info.meta)
                                             : PiecesOf(info.meta, from.sbp, from.registers.size()),
                                     {info.meta});
    whole.devices = {from.devices.front()};
    whole.sbp = Sbp::B();
    whole.mean = false;
  }
  if (to.IsBroadcast()) return whole;
  const std::vector<int> registers = CollectiveTask("scatter", info.name, {.devices = k, .axis = to.axis},
                                                    whole.registers, {info.meta}, PiecesOf(info.meta, to, devices.size()));
  return Placed{registers, devices, false, to};
}

}  // namespace weir::internal
