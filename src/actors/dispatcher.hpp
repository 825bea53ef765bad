#pragma once
// Completes calls in call order. Sync and async calls of every job of a session share one ordered
// stream: a call is released only after every earlier call, and callbacks run one at a time, in
// order, on a dedicated callback thread (never on an actor thread). A sync call's promise is
// fulfilled only once every earlier callback has run.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "actors/call.hpp"

namespace weir::internal {

class Dispatcher {
 public:
  /// At most `max_in_flight` calls between Admit and their completion.
  explicit Dispatcher(int max_in_flight);
  /// Drains: waits for admitted calls up to `drain_timeout` (then fails them) and runs every
  /// pending callback before joining the callback thread.
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  /// Assigns the next call id and takes the call in; blocks while `max_in_flight` calls are
  /// outstanding. Throws std::runtime_error once the dispatcher is closed. `launch` runs under the
  /// ordering lock, so launches reach the runtime in call-id order.
  void Admit(const std::shared_ptr<CallRecord>& record, const std::function<void()>& launch);
  /// The runtime finished `record` (successfully or with record->Error()). Any thread.
  void Complete(CallRecord* record);
  /// Fails every admitted, uncompleted call with `error` (used when a job's runtime breaks).
  void FailOutstanding(const std::exception_ptr& error);

  /// Waits until every call admitted before this point is completed and its callback has run;
  /// rethrows the first exception a callback threw since the last Sync. Throws std::logic_error
  /// when called from a callback (it would wait for itself).
  void Sync();
  /// Refuses new calls; subsequent Admit throws.
  void Close();
  bool OnCallbackThread() const { return std::this_thread::get_id() == callback_thread_.get_id(); }
  /// Waits up to `timeout` for all admitted calls to complete; false on timeout.
  bool WaitAllCompleted(std::chrono::milliseconds timeout);

 private:
  void Release(std::unique_lock<std::mutex>& lock);
  void CallbackLoop();
  void Finish(CallRecord& record);

  const int max_in_flight_;
  mutable std::mutex mutex_;
  std::mutex launch_mutex_;  // orders launches without holding mutex_
  std::condition_variable launch_turn_;  // the call whose turn it is to launch may
  std::int64_t next_launch_id_ = 0;      // under launch_mutex_
  std::condition_variable admitted_cv_;  // room for another call; calls completed
  std::condition_variable callback_cv_;  // callback queue non-empty or stopping
  std::condition_variable finished_cv_;  // a call was released or a callback finished
  std::deque<std::shared_ptr<CallRecord>> pending_;    // admitted, in call-id order
  std::deque<std::shared_ptr<CallRecord>> callbacks_;  // released, waiting for the callback thread
  std::int64_t running_call_id_ = -1;  // the call whose callback runs now, or -1
  std::int64_t next_call_id_ = 0;
  std::exception_ptr callback_error_;
  int admission_waiters_ = 0;  // threads waiting for room (or for the drain)
  int sync_waiters_ = 0;
  bool callback_waiting_ = false;
  std::atomic<int> callbacks_queued_{0};  // size of callbacks_, readable without the lock  // the callback thread sleeps on callback_cv_
  bool closed_ = false;
  bool stopping_ = false;
  std::thread callback_thread_;
};

}  // namespace weir::internal
