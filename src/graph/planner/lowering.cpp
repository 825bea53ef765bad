#include "graph/planner/lowering.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "common/split.hpp"
#include "graph/op_registry.hpp"
#include "kernels/cpu/widened.hpp"

namespace weir::internal {

Topology Topology::Of(const JobGraph& graph, const PlanOptions& options) {
  if (options.compute_streams < 1) {
    throw std::invalid_argument(fmt::format("[compile] compute_streams must be at least 1, got {}", options.compute_streams));
  }
  if (options.devices < 1) {
    throw std::invalid_argument(fmt::format("[compile] devices must be at least 1, got {}", options.devices));
  }
  if (options.processes < 1) {
    throw std::invalid_argument(fmt::format("[compile] processes must be at least 1, got {}", options.processes));
  }
  Topology topology;
  topology.device_kind = options.device_kind;
  topology.devices = options.devices;
  topology.processes = options.processes;
  topology.mirrored = graph.config.view == LogicalView::kMirrored;
  topology.across_processes = topology.mirrored && options.processes > 1;
  topology.split_processes = topology.mirrored ? 1 : options.processes;
  topology.all_devices = options.devices * topology.split_processes;
  topology.shared_memory = options.device_kind == Device::Kind::kCpu;
  if (options.rank < 0 || options.rank >= options.processes) {
    throw std::invalid_argument(fmt::format("[compile] rank must be in [0, {}), got {}", options.processes, options.rank));
  }
  if (!topology.shared_memory && options.devices > 1 && topology.split_processes > 1) {
    throw std::invalid_argument(fmt::format(
        "[compile] job '{}' is consistent over {} processes with {} GPUs each: a consistent job spread over processes "
        "runs one GPU per process (weir-launch --nproc_per_node={} with gpu_device_num(1)), or use the mirrored view",
        graph.name, topology.split_processes, options.devices, options.devices));
  }
  return topology;
}

bool Topology::SpansEveryProcess(const std::vector<int>& devices_used) const {
  std::vector<bool> seen(static_cast<std::size_t>(split_processes), false);
  for (int device : devices_used) seen[static_cast<std::size_t>(device / devices)] = true;
  return split_processes > 1 && std::all_of(seen.begin(), seen.end(), [](bool s) { return s; });
}

std::vector<TensorMeta> PiecesOf(const TensorMeta& logical, const Sbp& sbp, std::size_t devices) {
  std::vector<TensorMeta> metas;
  for (std::size_t r = 0; r < devices; ++r) {
    metas.push_back({PieceShape(logical.shape, sbp, static_cast<int>(devices), static_cast<int>(r)), logical.dtype});
  }
  return metas;
}

std::size_t RowsOffset(const TensorMeta& meta, int devices, int rank) {
  return static_cast<std::size_t>(SplitBegin(meta.shape[0], devices, rank)) *
         (meta.NumBytes() / static_cast<std::size_t>(meta.shape[0]));
}

Lowering::Lowering(const JobGraph& graph_in, const PlanOptions& options_in, const Topology& topology_in, Plan& plan_in)
    : graph(graph_in), options(options_in), topology(topology_in), plan(plan_in), placed(graph_in.values.size()),
      node_tasks(graph_in.nodes.size()), stream_rotation_(static_cast<std::size_t>(topology_in.all_devices), 0) {
  for (int d = 0; d < topology.all_devices; ++d) {
    for (int s = 0; s < options.compute_streams; ++s) {
      plan.streams.push_back({Device{options.device_kind, d}, StreamKind::kCompute, s});
    }
  }
  // With several devices a call's source tick and sink get an executor of their own (a control
  // stream): on device 0's, a call could neither start nor complete while device 0 ran a kernel,
  // which held back the next call of a pipeline and every call's callback.
  if (topology.all_devices > 1) {
    plan.streams.push_back({Device::Cpu(), StreamKind::kControl, 0});
    control_stream = static_cast<int>(plan.streams.size()) - 1;
  }
  plan.source_task = plan.AddTask(TaskKind::kSourceTick, "source_tick", control_stream);
  tick = plan.AddRegister("tick", plan.source_task, options.source_register_num, {Shape{0}, DType::kU8});
}

int Lowering::DeviceStream(int device) {
  const int s = stream_rotation_[static_cast<std::size_t>(device)]++ % options.compute_streams;
  return device * options.compute_streams + s;
}

void Lowering::SetInputPieces(const std::vector<int>& pieces) {
  plan.input_pieces = pieces;
  input_base_.assign(pieces.size(), 0);
  std::exclusive_scan(pieces.begin(), pieces.end(), input_base_.begin(), 0);
}

int Lowering::HostComputeStream() {
  const StreamId host{Device::Cpu(), StreamKind::kCompute, 0};
  const auto it = std::find(plan.streams.begin(), plan.streams.end(), host);
  if (it != plan.streams.end()) return static_cast<int>(it - plan.streams.begin());
  plan.streams.push_back(host);
  return static_cast<int>(plan.streams.size()) - 1;
}

namespace {

/// The CPU kernel of op_type for dtype: its own, or for a float16/bfloat16 op with none, its float32
/// kernel between conversions (kernels/cpu/widened.hpp), unless the op writes an input in place
/// (the conversion would write a copy).
KernelFactory CpuKernel(std::string_view op_type, DType dtype) {
  if (const KernelFactory own = FindKernel({std::string(op_type), Device::Kind::kCpu, dtype}); own != nullptr) return own;
  const OpDef* def = TryFindOp(op_type);
  if (def != nullptr && def->mutates_inputs.empty() && RunsWidenedOnCpu(op_type, dtype)) return &MakeWidenedKernel;
  return nullptr;
}

}  // namespace

int Lowering::AddKernelTask(std::string_view op_type, std::string name, const std::any* attrs,
                            std::vector<TensorMeta> input_metas, std::vector<TensorMeta> output_metas, int stream) {
  const int task = plan.AddTask(TaskKind::kKernel, std::move(name), stream);
  TaskDesc& desc = Task(task);
  desc.op_type = std::string(op_type);
  desc.attrs = attrs;
  desc.input_metas = std::move(input_metas);
  desc.output_metas = std::move(output_metas);
  const DType key_dtype = desc.input_metas.empty() ? desc.output_metas.at(0).dtype : desc.input_metas[0].dtype;
  Device::Kind device = plan.streams[static_cast<std::size_t>(stream)].device.kind;
  const OpDef* def = TryFindOp(op_type);
  if (def != nullptr && def->host_only && device != Device::Kind::kCpu) {
    desc.stream = HostComputeStream();  // the data pipeline runs on the host in every session
    device = Device::Kind::kCpu;
  }
  desc.kernel_factory = FindKernel({desc.op_type, device, key_dtype});
  // An op that writes an input in place cannot run on the host's copy of a GPU tensor: the write would
  // not reach the GPU.
  const bool writes_inputs = def != nullptr && !def->mutates_inputs.empty();
  if (desc.kernel_factory == nullptr && device == Device::Kind::kCuda && op_type != "device_copy" && !writes_inputs) {
    if (const KernelFactory cpu = CpuKernel(op_type, key_dtype); cpu != nullptr) {
      desc.kernel_factory = cpu;
      desc.stream = HostComputeStream();  // may grow plan.streams; `desc` stays valid (plan.tasks)
      plan.notices.push_back(fmt::format("job '{}': op '{}' ({}) has no CUDA kernel for {}, so it runs on the CPU, with "
                                         "copies to and from the GPU", plan.job_name, desc.name, op_type, key_dtype));
      return task;
    }
  }
  if (desc.kernel_factory == nullptr && device == Device::Kind::kCpu) desc.kernel_factory = CpuKernel(op_type, key_dtype);
  if (desc.kernel_factory == nullptr) {
    const char* where = device == Device::Kind::kCuda ? "CUDA" : "CPU";
    std::string have = RegisteredDTypes(op_type, device);
    throw std::invalid_argument(fmt::format("[{}] op '{}' has no {} kernel for {} ({} kernels exist for: {}){}", op_type,
                                            desc.name, where, key_dtype, where, have.empty() ? "no dtype" : have,
                                            writes_inputs && device == Device::Kind::kCuda
                                                ? "; it writes its inputs in place, so it cannot run on the host's copies"
                                                : ""));
  }
  return task;
}

int Lowering::AddInputTask(std::string name, const std::string& value_name, int input_index, std::size_t offset,
                           const TensorMeta& meta, int device) {
  const int task = plan.AddTask(TaskKind::kInput, std::move(name), DeviceStream(device));
  Task(task).input_index = input_index;
  Task(task).input_offset = offset;
  plan.Consume(task, tick);
  plan.AddRegister(value_name, task, options.source_register_num, meta);
  return task;
}

int Lowering::AddVariableTask(std::string name, const std::string& value_name, const std::string& variable,
                              std::size_t offset, const TensorMeta& meta, int stream) {
  const int task = plan.AddTask(TaskKind::kVariable, std::move(name), stream);
  plan.Consume(task, tick);
  const int reg = plan.AddRegister(value_name, task, 1, meta);
  plan.registers[static_cast<std::size_t>(reg)].variable = variable;
  plan.registers[static_cast<std::size_t>(reg)].variable_offset = offset;
  return task;
}

}  // namespace weir::internal
