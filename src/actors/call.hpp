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

#include "weir/tensor.hpp"

namespace weir::internal {

struct CallRecord {
  std::int64_t call_id = -1;
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;

  bool is_sync = true;
  bool issued_from_callback = false;  // a sync call made inside a callback completes without waiting for it
  std::promise<void> promise;                         // sync calls
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

  bool completed = false;  // guarded by the dispatcher's mutex
  /// Set at launch while the job is profiled; the epoch otherwise.
  std::chrono::steady_clock::time_point profiled_launch{};
  /// Set at launch (the watchdog reports the oldest call's age).
  std::chrono::steady_clock::time_point launched{};

 private:
  mutable std::mutex error_mutex_;
  std::exception_ptr error_;
};

}  // namespace weir::internal
