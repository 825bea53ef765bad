#pragma once
// What the planner's lowering passes share while they turn a job's nodes into a plan's tasks and
// registers: what the plan is for (Topology), where each value's registers are (Placed), and the
// plan under construction with its streams and source tick (Lowering). The passes that use it:
// placement.hpp, boxing.hpp, gradient_averaging.hpp, node_lowering.hpp and outputs.hpp.
#include <cstddef>
#include <string>
#include <vector>

#include "graph/job_graph.hpp"
#include "graph/planner.hpp"
#include "graph/sbp.hpp"
#include "plan/plan.hpp"

namespace weir::internal {

/// The session's devices and processes as the job's view sees them.
struct Topology {
  Device::Kind device_kind = Device::Kind::kCpu;
  int devices = 1;          // per process
  int processes = 1;        // of the session
  /// A consistent job is planned for every process's devices (each process then keeps its part,
  /// process_split.hpp); a mirrored job for its own process's: 1.
  int split_processes = 1;
  int all_devices = 1;      // the plan's devices: devices * split_processes
  bool mirrored = false;
  /// What the mirrored view averages over its devices it also averages over the processes; the
  /// collective actors doing so run in one order (chained on the collective stream) in every process.
  bool across_processes = false;
  /// The CPU devices of a process share its memory: a value made on one device is read where it is by
  /// every other, a variable is one buffer that each device updates its rows of, and each device sums
  /// its own rows of every device's gradient. Each GPU has its own memory: a value read on another GPU
  /// is copied there (device_copies.hpp), a collective combines copies of the pieces on one GPU, and
  /// variables are updated whole, on the GPU that holds them.
  bool shared_memory = true;

  /// Throws std::invalid_argument for options no plan can have.
  static Topology Of(const JobGraph& graph, const PlanOptions& options);
  /// Whether `devices` (the plan's device indices) include a device of every process of a split plan.
  bool SpansEveryProcess(const std::vector<int>& devices) const;
};

/// The registers of a value: one per replica (a mirrored value that differs per device), or one
/// that every device reads.
struct Placed {
  std::vector<int> registers;
  std::vector<int> devices;
  bool PerDevice() const { return registers.size() > 1 || per_device; }
  bool per_device = false;  // a mirrored value on one device still differs from a broadcast one
  Sbp sbp;                  // consistent view: how the registers hold the logical value
  bool mean = false;        // partial pieces that are averaged, not summed (a mirrored job's gradients)
};

/// The metas of the pieces of `logical` held with `sbp` over `devices` devices.
std::vector<TensorMeta> PiecesOf(const TensorMeta& logical, const Sbp& sbp, std::size_t devices);
/// Where piece `rank` of `meta` split along axis 0 over `devices` starts in its buffer, in bytes.
std::size_t RowsOffset(const TensorMeta& meta, int devices, int rank);

/// The plan under construction: its streams, the source tick, and where the nodes' tasks and the
/// values' registers are so far.
class Lowering {
 public:
  /// Adds the devices' compute streams, the control stream and the source tick.
  Lowering(const JobGraph& graph, const PlanOptions& options, const Topology& topology, Plan& plan);

  const JobGraph& graph;
  const PlanOptions& options;
  const Topology topology;
  Plan& plan;
  /// The stream of the source tick and the sink.
  int control_stream = 0;
  /// The source tick's register: every input, variable and constant acts once per tick.
  int tick = -1;
  /// Registers of each value (by value id), as the passes so far placed it.
  std::vector<Placed> placed;
  /// Tasks of each node (by node id): its replicas, or the fused kernel it runs in.
  std::vector<std::vector<int>> node_tasks;
  /// Tasks that every process of a split plan runs (process_split.hpp): what each needs whole.
  std::vector<int> everywhere;

  const ValueInfo& Value(int value) const { return graph.values[static_cast<std::size_t>(value)]; }
  Placed& PlacedOf(int value) { return placed[static_cast<std::size_t>(value)]; }
  const RegisterDesc& Register(int reg) const { return plan.registers[static_cast<std::size_t>(reg)]; }
  TaskDesc& Task(int task) { return plan.tasks[static_cast<std::size_t>(task)]; }
  /// The next compute stream of `device`: kernels are spread over a device's streams round-robin.
  int DeviceStream(int device);
  /// The first call input of each placeholder (graph.placeholders order).
  int InputBase(std::size_t placeholder) const { return input_base_[placeholder]; }
  /// Records how many pieces (call inputs) each placeholder has, in order.
  void SetInputPieces(const std::vector<int>& pieces);
  /// A kernel actor for `op_type` on its stream's device; the caller wires its registers. An op with
  /// no CUDA kernel for its dtype but a CPU one (integer division) runs on the host, with a notice; the
  /// copies between the memories come with the others (device_copies.hpp). Throws naming the op when
  /// no device has a kernel for the dtype.
  int AddKernelTask(std::string_view op_type, std::string name, const std::any* attrs,
                    std::vector<TensorMeta> input_metas, std::vector<TensorMeta> output_metas, int stream);
  /// An input actor copying call input `input_index` (from byte `offset`) into a register of `meta`
  /// (its one produced register), on a stream of `device`, once per tick.
  int AddInputTask(std::string name, const std::string& value_name, int input_index, std::size_t offset,
                   const TensorMeta& meta, int device);
  /// A variable actor presenting `variable` (from byte `offset` of its storage) as a register of `meta`
  /// (its one produced register), on `stream`, once per tick.
  int AddVariableTask(std::string name, const std::string& value_name, const std::string& variable,
                      std::size_t offset, const TensorMeta& meta, int stream);

 private:
  int HostComputeStream();

  std::vector<int> stream_rotation_;
  std::vector<int> input_base_;
};

}  // namespace weir::internal
