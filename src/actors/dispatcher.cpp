#include "actors/dispatcher.hpp"

#include "common/wait_interrupter.hpp"

#include <stdexcept>
#include <utility>

namespace weir::internal {

namespace {
constexpr std::chrono::seconds kDrainTimeout{60};
constexpr std::chrono::microseconds kCallbackSpin{50};
}  // namespace

Dispatcher::Dispatcher(int max_in_flight) : max_in_flight_(max_in_flight < 1 ? 1 : max_in_flight) {
  callback_thread_ = std::thread([this] { CallbackLoop(); });
}

Dispatcher::~Dispatcher() {
  Close();
  if (!WaitAllCompleted(kDrainTimeout)) {
    FailOutstanding(std::make_exception_ptr(std::runtime_error("[session] shut down before the call completed")));
  }
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  callback_cv_.notify_all();
  callback_thread_.join();
}

void Dispatcher::Admit(const std::shared_ptr<CallRecord>& record, const std::function<void()>& launch) {
  std::unique_lock lock(mutex_);
  // A callback that issues calls must not wait for room: room may only appear after it returns.
  if (!OnCallbackThread() && static_cast<int>(pending_.size()) >= max_in_flight_) {
    ++admission_waiters_;
    admitted_cv_.wait(lock, [&] { return closed_ || static_cast<int>(pending_.size()) < max_in_flight_; });
    --admission_waiters_;
  }
  if (closed_) throw std::runtime_error("[session] the session is shutting down; no new calls are accepted");
  const std::int64_t call_id = record->call_id = next_call_id_++;
  pending_.push_back(record);
  lock.unlock();
  // Launches keep call-id order, and run outside the dispatcher's lock, which the actors need to
  // complete calls: a launch may complete earlier calls on this thread (lent executors), so nothing
  // takes the launch lock while holding the dispatcher's.
  std::unique_lock launch_lock(launch_mutex_);
  launch_turn_.wait(launch_lock, [&] { return next_launch_id_ == call_id; });
  struct NextTurn {
    Dispatcher& dispatcher;
    ~NextTurn() {
      ++dispatcher.next_launch_id_;
      dispatcher.launch_turn_.notify_all();
    }
  } next_turn{*this};
  launch();
}

void Dispatcher::Complete(CallRecord* record) {
  std::unique_lock lock(mutex_);
  record->completed = true;
  Release(lock);
}

void Dispatcher::FailOutstanding(const std::exception_ptr& error) {
  std::unique_lock lock(mutex_);
  for (const auto& record : pending_) {
    if (record->completed) continue;
    record->Fail(error);
    record->completed = true;
  }
  Release(lock);
}

// Called with the lock held; releases the completed prefix of pending_ in call order.
void Dispatcher::Release(std::unique_lock<std::mutex>& lock) {
  std::vector<std::shared_ptr<CallRecord>> fulfil_now;
  bool released = false;
  while (!pending_.empty() && pending_.front()->completed) {
    std::shared_ptr<CallRecord> record = std::move(pending_.front());
    pending_.pop_front();
    released = true;
    // A sync call with no earlier callback outstanding completes at once; otherwise it queues
    // behind those callbacks so that its caller observes them as done.
    if (record->is_sync && (record->issued_from_callback || (callbacks_.empty() && running_call_id_ < 0))) {
      fulfil_now.push_back(std::move(record));
    } else {
      callbacks_.push_back(std::move(record));
      callbacks_queued_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (!released) return;
  // Blocked callers are woken once half the window is free, not per call: each wake-up costs a
  // futex round trip of tens of microseconds on small machines.
  const bool wake_admission = admission_waiters_ > 0 && static_cast<int>(pending_.size()) <= max_in_flight_ / 2;
  const bool wake_callbacks = !callbacks_.empty() && callback_waiting_;
  const bool wake_sync = sync_waiters_ > 0;
  lock.unlock();
  if (wake_admission) admitted_cv_.notify_all();
  if (wake_callbacks) callback_cv_.notify_one();
  if (wake_sync) finished_cv_.notify_all();
  for (auto& record : fulfil_now) record->Fulfil();
  lock.lock();
}

void Dispatcher::CallbackLoop() {
  std::unique_lock lock(mutex_);
  while (true) {
    if (callbacks_.empty() && !stopping_) {
      // Calls complete in bursts: spin briefly before paying for a sleep and a wake-up.
      lock.unlock();
      const auto until = std::chrono::steady_clock::now() + kCallbackSpin;
      while (callbacks_queued_.load(std::memory_order_relaxed) == 0 && std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
      }
      lock.lock();
    }
    callback_waiting_ = true;
    callback_cv_.wait(lock, [&] { return stopping_ || !callbacks_.empty(); });
    callback_waiting_ = false;
    if (callbacks_.empty()) return;  // stopping and drained
    std::shared_ptr<CallRecord> record = std::move(callbacks_.front());
    callbacks_.pop_front();
    callbacks_queued_.fetch_sub(1, std::memory_order_relaxed);
    running_call_id_ = record->call_id;
    lock.unlock();
    Finish(*record);
    record.reset();
    lock.lock();
    running_call_id_ = -1;
    if (sync_waiters_ > 0) finished_cv_.notify_all();
  }
}

void Dispatcher::Finish(CallRecord& record) {
  if (record.is_sync) {
    record.Fulfil();
  } else {
    try {
      record.callback(record);
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!callback_error_) callback_error_ = std::current_exception();
    }
  }
}

void Dispatcher::Sync() {
  if (OnCallbackThread()) {
    throw std::logic_error("[session] Sync() called from a callback would wait for that callback itself");
  }
  std::unique_lock lock(mutex_);
  const std::int64_t target = next_call_id_ - 1;
  ++sync_waiters_;
  // Done when no call <= target is still pending, queued for its callback, or in its callback.
  auto done = [&] {
    return (pending_.empty() || pending_.front()->call_id > target) &&
           (callbacks_.empty() || callbacks_.front()->call_id > target) &&
           (running_call_id_ < 0 || running_call_id_ > target);
  };
  while (!finished_cv_.wait_for(lock, kInterruptPoll, done)) {
    lock.unlock();  // the hook may take other locks (Python's GIL)
    try {
      PollWaitInterrupter();
    } catch (...) {
      lock.lock();
      --sync_waiters_;
      throw;
    }
    lock.lock();
  }
  --sync_waiters_;
  if (callback_error_) {
    std::exception_ptr error = std::exchange(callback_error_, nullptr);
    std::rethrow_exception(error);
  }
}

void Dispatcher::Close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  admitted_cv_.notify_all();
}

bool Dispatcher::WaitAllCompleted(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  ++admission_waiters_;
  const bool drained = admitted_cv_.wait_for(lock, timeout, [&] { return pending_.empty(); });
  --admission_waiters_;
  return drained;
}

}  // namespace weir::internal
