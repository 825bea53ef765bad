#pragma once
// Collectives between processes that hold one GPU each, on NCCL (common/nccl.hpp). The unique id
// travels through the control plane's store under the group's prefix (one group per job, as with
// Gloo). A watchdog thread aborts the communicator when the control plane reports a lost rank, when
// NCCL reports an error of its own, or when a queued collective is still running past the timeout:
// the queued work then ends, and the kernels' ThrowIfFailed fails their calls with the reason. No
// NCCL type appears here. Compiled in every build; joining throws without CUDA.
#include <chrono>
#include <memory>
#include <string>

#include "distributed/control_plane.hpp"
#include "kernels/collectives/process_group.hpp"

namespace weir::internal {

struct NcclGroupOptions {
  /// Keys of this group in the control plane's store ("weir/nccl/<job>").
  std::string prefix;
  /// The plan's device index of this process's GPU (0: its cuda:0).
  int device = 0;
  /// Bounds joining and each collective.
  std::chrono::milliseconds timeout{180000};
};

/// Joins every rank of the control plane into one NCCL communicator (every rank must make the same
/// group). Throws std::runtime_error when a rank does not come within the timeout, naming lost ranks.
/// The group keeps `control_plane` and must not outlive it.
std::unique_ptr<DeviceProcessGroup> MakeNcclProcessGroup(ControlPlaneClient& control_plane, const NcclGroupOptions& options);

}  // namespace weir::internal
