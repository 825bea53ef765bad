#include "graph/planner.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "graph/planner/boxing.hpp"
#include "graph/planner/commit_barrier.hpp"
#include "graph/planner/constant_results.hpp"
#include "graph/planner/device_copies.hpp"
#include "graph/planner/fused_kernels.hpp"
#include "graph/planner/gradient_averaging.hpp"
#include "graph/planner/liveness.hpp"
#include "graph/planner/lowering.hpp"
#include "graph/planner/node_lowering.hpp"
#include "graph/planner/outputs.hpp"
#include "graph/planner/placement.hpp"
#include "graph/planner/process_split.hpp"
#include "graph/planner/register_sizing.hpp"
#include "graph/planner/stream_graphs.hpp"
#include "graph/planner/unread_inputs.hpp"
#include "graph/planner/writer_order.hpp"

namespace weir::internal {

namespace {

void CheckJobType(const JobGraph& graph) {
  if (graph.type == JobType::kTrain && !graph.optimizer) {
    throw std::invalid_argument(fmt::format(
        "[compile] job '{}' is a train job but has no optimizer: train jobs need one to minimize a loss", graph.name));
  }
  if (graph.type == JobType::kPredict && graph.optimizer) {
    throw std::invalid_argument(fmt::format("[compile] job '{}' is a predict job but has an optimizer", graph.name));
  }
}

// Call inputs of each placeholder, live or not (the caller passes them all): one per device of a
// mirrored placeholder, else one.
std::vector<int> InputPieces(const JobGraph& graph, const std::vector<std::vector<int>>& devices, bool mirrored) {
  std::vector<int> pieces;
  for (int value : graph.placeholder_values) {
    const int node = graph.values[static_cast<std::size_t>(value)].producer;
    pieces.push_back(mirrored ? static_cast<int>(devices[static_cast<std::size_t>(node)].size()) : 1);
  }
  return pieces;
}

// Every update of a multi-tensor kernel writes through it: OrderWriters orders each variable's readers.
void AttributeMultiUpdates(const FusedKernels& fused, std::vector<std::vector<int>>& node_tasks) {
  for (const FusedChain& chain : fused.chains) {
    if (chain.op_type != "multi_update") continue;
    for (int node : chain.nodes) node_tasks[static_cast<std::size_t>(node)] = node_tasks[static_cast<std::size_t>(chain.Last())];
  }
}

void CheckPlan(const Plan& plan) {
  plan.CheckAcyclic();
  plan.CheckEveryTaskReachesSink();
}

}  // namespace

std::shared_ptr<const Plan> CompilePlan(const std::shared_ptr<const JobGraph>& graph_ptr, const PlanOptions& options) {
  const JobGraph& graph = *graph_ptr;
  CheckJobType(graph);
  const Topology topology = Topology::Of(graph, options);
  auto plan = std::make_shared<Plan>();
  plan->job_name = graph.name;
  plan->keep_alive = graph_ptr;
  plan->devices = options.devices;
  plan->tensor_float_32 = options.tensor_float_32;
  plan->mirrored = topology.mirrored;

  // Lowering: the job's nodes become tasks and registers.
  Lowering lowering(graph, options, topology, *plan);
  const std::vector<bool> live = LiveNodes(graph);
  const std::vector<std::vector<int>> devices = PlaceNodes(graph, live, topology);
  lowering.SetInputPieces(InputPieces(graph, devices, topology.mirrored));
  const FusedKernels fused = ChooseFusedKernels(graph, live, topology, options);
  Boxing boxing(lowering);
  GradientAveraging averaging(lowering, boxing);
  LowerNodes(lowering, live, devices, fused, boxing, averaging);
  averaging.CloseBucket();
  const std::vector<std::vector<int>> outputs = OutputRegisters(lowering, live, boxing, averaging);
  plan->sink_task = plan->AddTask(TaskKind::kSink, "sink", lowering.control_stream);
  AttributeMultiUpdates(fused, lowering.node_tasks);
  OrderWriters(graph, live, lowering.placed, lowering.node_tasks, *plan);
  ConnectSink(*plan, graph, outputs);

  // The in-place writers act after a commit that every other kernel of the call reaches first, and skip
  // their kernels when the call failed. Where kernels run on the host's actor threads (the CPU's
  // default), a kernel's failure is known when it returns. On device streams (a GPU's; the CPU's with
  // async_cpu_streams) it is known once the stream has run the kernel: the commit then waits for the
  // streams, one hand-off back to the host before each step's updates (on a GPU the step's CUDA graph
  // becomes two, the kernels before the commit and the writers after it).
  // Across processes the commit also waits for every other process's word, so that a call failing in
  // one process writes no variable in any. A plan split over processes gets it once split. Not yet for
  // CUDA devices across processes (the exchange has no CUDA kernel).
  const bool split = topology.split_processes > 1;
  const bool cuda = options.device_kind == Device::Kind::kCuda;
  const bool host_commit = options.commit_before_writes && !(cuda && options.processes > 1);
  const std::vector<bool> writers =
      host_commit ? WriterTasks(graph, live, lowering.node_tasks, *plan) : std::vector<bool>{};
  std::vector<int> chain = boxing.Collectives();
  if (!writers.empty() && !split) {
    CommitBeforeWrites(writers, lowering.control_stream, topology.across_processes, chain, *plan);
  }
  // Collectives across processes: each call's chain after the previous call's, so calls overlap.
  if (!split && plan->process_collectives) GateCollectiveCalls(*plan, chain);
  // On CUDA devices: the registers in device memory, with copy actors where a register crosses between
  // the host and a device. A plan split over processes gets them once split, in each process's part
  // (the transfers between processes are then there, and device indexes are the process's own).
  if (options.device_kind == Device::Kind::kCuda && !split) AddDeviceCopies(*plan, options.copy_stream_bytes);
  SizePipelineRegisters(*plan);
  if (options.stream_graphs && !split) FuseStreamGraphs(*plan, options.async_cpu_streams);
  if (split) {
    ProcessSplit process_split{topology.split_processes, options.rank, options.devices,
                               std::vector<bool>(plan->tasks.size(), false), writers};
    for (int task : lowering.everywhere) process_split.everywhere[static_cast<std::size_t>(task)] = true;
    std::shared_ptr<Plan> part = SplitOverProcesses(std::move(*plan), process_split);
    if (options.device_kind == Device::Kind::kCuda) AddDeviceCopies(*part, options.copy_stream_bytes);
    DropUnreadInputsAndVariables(*part);
    MarkConstantResults(*part, options.async_cpu_streams);
    CheckPlan(*part);
    return part;
  }
  DropUnreadInputsAndVariables(*plan);
  MarkConstantResults(*plan, options.async_cpu_streams);
  CheckPlan(*plan);
  return plan;
}

}  // namespace weir::internal
