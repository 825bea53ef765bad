#pragma once
// The commit of a call in a session of several processes (graph/planner/commit_barrier.hpp): the last
// actor of each process's collective chain, before the actors that write variables in place. Every
// process says whether its call failed; where one did, the call fails in every process, so that no
// process applies the updates of a call that another threw away.
#include <memory>

#include "kernels/kernel.hpp"

namespace weir::internal {

/// The commit actor's kernel: no inputs but the call's order, one zero-byte output its writers read.
/// Throws std::invalid_argument when the session has one process (KernelSetup::processes is null).
std::unique_ptr<Kernel> MakeCommitAcrossProcessesKernel(const KernelSetup& setup);

}  // namespace weir::internal
