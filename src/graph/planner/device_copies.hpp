#pragma once
// Memory placement for a plan whose kernels run on CUDA devices: each register's memory is its
// producer's (a CUDA kernel's results and the variables its device uses are in device memory; call
// inputs and the source's ticks are on the host), and where a consumer needs a register in another
// memory — a CUDA kernel reading a call input, the sink reading a result — the planner inserts a copy
// actor (op "device_copy") once per register and memory however many consumers read it: on the
// device's host-to-device or device-to-host stream, where it overlaps the kernels, or for a register
// of at most `copy_stream_bytes` on the device's compute stream, where it costs no hand-off. The host
// end of a copy is pinned memory, so that the copy runs asynchronously; a call input bound for a
// device is copied into it by the input actor.
// Between the GPUs of one process (each its own memory) a register read on another GPU than its
// producer's is copied there on that GPU's device-to-device stream: a variable read by every GPU's
// replica, a collective's pieces onto the collective's GPU and its results back, a pipeline's stage
// boundary.
#include <cstddef>

#include "plan/plan.hpp"

namespace weir::internal {

/// Places `plan`'s registers and adds the copies; the plan's kernels are already on their devices'
/// streams. Throws std::invalid_argument when the build has no device_copy kernel for the device.
void AddDeviceCopies(Plan& plan, std::size_t copy_stream_bytes);

}  // namespace weir::internal
