#pragma once
// Compiles a built job into a Plan: prunes ops no output needs, places every remaining op on its
// devices (one replica per device in the mirrored view, with the gradients averaged by all-reduce
// actors before the updates), makes every op replica an actor, gives every value a register (2 slots
// on the source edges and between devices, 1 elsewhere), checks that a kernel exists for every
// (op, device, dtype), and assigns actors to their devices' streams.
#include <cstddef>
#include <memory>

#include "plan/plan.hpp"
#include "graph/job_graph.hpp"

namespace weir::internal {

/// 1 MiB moves in about 40 µs over PCIe 4, the cost of the host round trip that a hand-off between
/// streams adds.
inline constexpr std::size_t kDefaultCopyStreamBytes = std::size_t{1} << 20;

struct PlanOptions {
  /// CPU compute streams; kernel actors are spread over them round-robin. The source, input and
  /// sink actors share stream 0: bench/actor_overhead measured a separate control stream at
  /// 30-40 % fewer calls/s (two extra cross-executor hops per call).
  int compute_streams = 1;
  /// Slots on the source edges (tick and inputs): how many calls can be fed ahead.
  int source_register_num = 2;
  /// CPU devices of the session (machine 0). Each device has its own compute streams.
  int devices = 1;
  /// Intra-op threads of each device's kernels (its share of the cores); 0: every core.
  int threads_per_device = 0;
  /// Processes of a distributed session, each with `devices` devices. A mirrored job is data parallel
  /// across them: each compiles the same plan for its own devices, and the gradients (and whatever else
  /// the devices average) are averaged over every device of every process. A consistent job is planned
  /// for every process's devices, and each process runs its part (graph/planner/process_split.hpp).
  int processes = 1;
  /// This process's rank among `processes`.
  int rank = 0;
  /// The kind of the devices: kCuda places every kernel on CUDA devices, with copies between host and
  /// device memory and between the GPUs (graph/planner/device_copies.hpp).
  Device::Kind device_kind = Device::Kind::kCpu;
  /// The kernels of each device stream as one actor, on a CUDA device one CUDA graph
  /// (graph/planner/stream_graphs.hpp): CUDA devices' compute streams, and CPU compute streams when
  /// `async_cpu_streams` (the runtime runs them as device streams then).
  bool stream_graphs = false;
  /// On CUDA devices: a register copied between host and device runs its copy on the device's compute
  /// stream up to this size, on the copy streams above it (graph/planner/device_copies.hpp).
  std::size_t copy_stream_bytes = kDefaultCopyStreamBytes;
  /// Bucket bytes of a mirrored job's gradient averaging across processes (DistributedOptions::
  /// fusion_threshold_bytes); 0: an all-reduce actor per gradient.
  std::size_t fusion_threshold_bytes = 0;
  bool async_cpu_streams = false;
  /// A failed call writes no variable (SessionOptions::commit_before_writes; graph/planner/commit_barrier.hpp).
  bool commit_before_writes = true;
  /// f32 matmuls and convolutions on CUDA devices may use TF32 tensor cores (SessionOptions::tensor_float_32).
  bool tensor_float_32 = false;
};

/// Throws std::invalid_argument naming the op for anything that cannot run.
std::shared_ptr<const Plan> CompilePlan(const std::shared_ptr<const JobGraph>& graph, const PlanOptions& options);

}  // namespace weir::internal
