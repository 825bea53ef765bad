#pragma once
// A pass after the others: kernels whose results stay the same from call to call. An inference job
// under mixed precision casts every weight to bf16 at every call, and a CPU convolution transposes its
// weight to OHWI at every call, although the job never changes the weights. Such a kernel's slots keep
// their results, and it runs again only once a weight has changed: after a call of a job that writes
// it, or a checkpoint load (the session's variable versions).
#include "plan/plan.hpp"

namespace weir::internal {

/// Sets TaskDesc::constant_over on every kernel task of an op declared pure (OpDef::pure) that acts on
/// the host's actor threads and whose every input is a variable the plan never writes (Plan::
/// variables_written) or another such task's result. `device_streams`: the kernels of CPU streams run on
/// device streams (SessionOptions::async_cpu_streams); those, and CUDA devices' kernels, run every
/// call (their slots are written on the stream, after the act).
void MarkConstantResults(Plan& plan, bool cpu_device_streams);

}  // namespace weir::internal
