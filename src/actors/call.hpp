#pragma once
// One call of a job as the runtime sees it: inputs in, outputs or an error out, and how the caller
// learns of completion (a promise for sync calls, a callback for async ones).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <mutex>
#include <vector>

#include "common/wait_interrupter.hpp"
#include "weir/tensor.hpp"

namespace weir::internal {

struct CallRecord {
  std::int64_t call_id = -1;
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;

  bool is_sync = true;
  bool issued_from_callback = false;  // a sync call made inside a callback completes without waiting for it
  std::promise<void> promise;                         // sync calls: see Fulfil and AwaitFulfilled
  std::function<void(CallRecord&)> callback;          // async calls; runs on the callback thread

  /// Records the first failure of this call; later ones are dropped. Any thread.
  void Fail(std::exception_ptr failure) {
    std::lock_guard lock(error_mutex_);
    if (!error_) error_ = std::move(failure);
  }
  std::exception_ptr Error() const {
    std::lock_guard lock(error_mutex_);
    return error_;
  }

  /// Sync calls: the dispatcher's way to complete the call.
  void Fulfil() {
    promise.set_value();
    fulfilled_.store(true, std::memory_order_release);
  }
  bool Fulfilled() const { return fulfilled_.load(std::memory_order_acquire); }
  /// Sync calls: returns once Fulfil ran. Spins for up to `spin` first, then sleeps on the promise: on
  /// small machines a futex wake-up costs tens of microseconds, more than a small job's whole call,
  /// while a spin sees the result within a fraction of a microsecond. The sleep polls the wait
  /// interrupter (common/wait_interrupter.hpp), which may throw to give the wait up.
  void AwaitFulfilled(std::chrono::nanoseconds spin) {
    std::future<void> done = promise.get_future();
    if (spin.count() > 0) {
      const auto until = std::chrono::steady_clock::now() + spin;
      for (std::uint32_t i = 1; !fulfilled_.load(std::memory_order_acquire); ++i) {
        CpuRelax();
        if (i % 64 == 0 && std::chrono::steady_clock::now() >= until) break;
      }
    }
    WaitInterruptibly(done, std::chrono::steady_clock::time_point::max());
    done.get();
  }

  bool completed = false;  // guarded by the dispatcher's mutex
  std::int64_t job_call = 0;  // this call's number among its job's calls (1 for the first)
  /// Set at launch while the job is profiled; the epoch otherwise.
  std::chrono::steady_clock::time_point profiled_launch{};
  /// Set at launch (the watchdog reports the oldest call's age).
  std::chrono::steady_clock::time_point launched{};

 private:
  static void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  std::atomic<bool> fulfilled_{false};
  mutable std::mutex error_mutex_;
  std::exception_ptr error_;
};

}  // namespace weir::internal
