#pragma once
// Fuses the kernels of each device stream into one "stream_graph" kernel actor (kernels/
// stream_graph.hpp): the stream runs them one after the other anyway, so they need not be separate
// actors, and on a CUDA device their launches become one CUDA graph. A value only members use becomes
// a buffer of the graph (no register); registers from and to other actors stay, now consumed and
// produced by the graph. A stream is left alone where fusing would make a cycle (its kernels feed an
// actor elsewhere, a collective say, whose result comes back to them in the same call) or where it
// has fewer than two kernels.
#include "plan/plan.hpp"

namespace weir::internal {

/// Fuses the kernel tasks of every stream of `plan` that has a device stream at run time: each CUDA
/// device's compute streams, and the CPU compute streams when `cpu_device_streams` (the runtime runs
/// them asynchronously: SessionOptions::async_cpu_streams).
void FuseStreamGraphs(Plan& plan, bool cpu_device_streams);

}  // namespace weir::internal
