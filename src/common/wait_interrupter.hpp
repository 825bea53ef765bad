#pragma once
// Waits that may last long (a sync call, Sync, the rendezvous, a control-plane request) give their thread a
// chance to give up: about every kInterruptPoll they call PollWaitInterrupter(), which runs the hook an
// embedding sets (weir::SetWaitInterrupter). The hook may throw; the wait then ends with that exception,
// and what it waited for goes on. The Python module's hook raises KeyboardInterrupt after Ctrl-C.
#include <algorithm>
#include <chrono>
#include <functional>
#include <future>

namespace weir::internal {

inline constexpr std::chrono::milliseconds kInterruptPoll{50};

void SetWaitInterrupter(std::function<void()> hook);
/// Runs the hook, if one is set; may throw what it throws.
void PollWaitInterrupter();

/// Waits for `future` until `deadline`, polling the hook every kInterruptPoll; true once it is ready.
template <typename Future>
bool WaitInterruptibly(Future& future, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return future.wait_for(std::chrono::milliseconds(0)) == std::future_status::ready;
    const auto slice = std::min<std::chrono::steady_clock::duration>(kInterruptPoll, deadline - now);
    if (future.wait_for(slice) == std::future_status::ready) return true;
    PollWaitInterrupter();
  }
}

}  // namespace weir::internal
