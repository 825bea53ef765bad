#pragma once
// Collectives between the processes of one machine through shared memory: each rank copies its buffer
// into its slot of one shared segment, every rank reduces its piece of all slots (into its own buffer
// and a shared result area), and every rank copies the others' reduced pieces out. Spinning barriers on shared counters make a small all-reduce cost a few
// microseconds where Gloo's TCP loopback costs about 180 (bench/multi_process.py); large buffers go in
// chunks of the slot size at memory speed. Point-to-point messages go through a mailbox per ordered
// pair of ranks.
//
// Every wait is bounded: a barrier gives up after the group's timeout, and (checked about every
// millisecond) as soon as the control plane reports a lost rank or loses the master, with an error
// naming the collective and the rank.
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "distributed/control_plane.hpp"
#include "kernels/collectives/process_group.hpp"

namespace weir::internal {

struct ShmGroupOptions {
  /// Keys of this group in the control plane's store; also names the segment.
  std::string prefix;
  /// Bounds every collective.
  std::chrono::milliseconds timeout{180000};
  /// Bytes of each rank's slot (a larger buffer goes in chunks of this size). 256 KB chunks stay in
  /// the caches between a rank's copy in and the others' reads: the MLP's 1.6 MB gradient all-reduce
  /// took 0.67 ms in training with them, 0.78 ms with 4 MB.
  std::size_t slot_bytes = std::size_t{256} << 10;
};

/// Rank 0 creates the segment (/dev/shm/weir-<machine>-<pid>-<random>) and publishes its name; the
/// others map it; the last rank to map it unlinks it, so nothing is left in /dev/shm whatever happens
/// later; a name left by a rank 0 killed before that is removed by the next group made on this machine
/// (RemoveStaleSegments). Every rank of the control
/// plane must be on this machine and make the same group. Throws ControlPlaneError when a rank does
/// not come or the segment cannot be made.
std::unique_ptr<HostProcessGroup> MakeShmProcessGroup(ControlPlaneClient& control_plane, const ShmGroupOptions& options);

/// Unlinks the segments in /dev/shm whose maker, a process of this machine, is gone.
void RemoveStaleSegments();


}  // namespace weir::internal
