#pragma once
// A hang in a distributed test must fail it, not stall CI: a Watchdog ends the process when its scope
// is not left in time.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace weir::testing {

/// Ends the process (exit 124) when the scope is not left within `limit`.
class Watchdog {
 public:
  explicit Watchdog(std::chrono::seconds limit) : thread_([this, limit] {
      std::unique_lock lock(mu_);
      if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
        std::fprintf(stderr, "distributed test hung for %lld s: aborting\n", static_cast<long long>(limit.count()));
        std::_Exit(124);
      }
    }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace weir::testing
