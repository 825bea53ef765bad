#pragma once
// A consistent job in a session of several processes: the planner plans it once for every process's
// devices (global device g is device g % devices of process g / devices, placements "<machine>:<device>"
// naming machine = process), then each process keeps its part of that whole plan:
// - a task on a device runs in that device's process; tasks marked `everywhere` (whatever every
//   process needs whole: variables, broadcast inputs, ops on whole values of a placement spanning every
//   process, the outputs, and every update, so that each process holds every variable up to date) and
//   the source and sink run in every process (on device g % devices);
// - a collective whose pieces are in every process runs in every process on its own pieces
//   (CollectiveAttrs::process_pieces); one whose pieces are all in one process stays there;
// - a register read in another process than its maker's gets a transfer actor (its bytes sent from the
//   maker's process to the ones that read it), so pipeline stages can sit in different processes.
// Every process's collectives and transfers are chained in one topological order of the whole plan,
// the same everywhere, and one call's chain starts only once the previous call's has ended
// (GateCollectiveCalls), so that no blocking collective waits on one another process has not reached,
// while the calls' other work overlaps.
#include <memory>
#include <vector>

#include "plan/plan.hpp"

namespace weir::internal {

struct ProcessSplit {
  int processes = 1;
  int rank = 0;
  int devices = 1;                // per process
  std::vector<bool> everywhere;   // by task id of the whole plan
  /// By task id of the whole plan: the tasks that write variables in place, which act after a commit
  /// across the processes (graph/planner/commit_barrier.hpp); empty: no commit.
  std::vector<bool> writers;
};

/// Throws std::invalid_argument naming the value for a collective over some processes but not all.
std::shared_ptr<Plan> SplitOverProcesses(Plan whole, const ProcessSplit& split);

/// Makes the first actor of `chain` (a process's collectives and transfers, chained by control edges
/// in the order every process issues them) act on a call only once the last has acted on the call
/// before: a gate actor on the first's stream, on each call's tick, fills a one-slot register that the
/// first and the last both read, so its slot comes back, and the gate fires again, only once the last
/// is done. So every process issues the collectives of consecutive calls in one order, and calls can
/// be in flight together (pipeline stages in different processes overlap).
void GateCollectiveCalls(Plan& plan, const std::vector<int>& chain);

}  // namespace weir::internal
