#include "common/device_stream.hpp"

#include <pthread.h>

#include <cstdlib>

#include <variant>

namespace weir::internal {

CompletionPoller::CompletionPoller(std::string name) : name_(std::move(name)), thread_([this] { Loop(); }) {}

CompletionPoller::~CompletionPoller() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void CompletionPoller::Watch(std::unique_ptr<StreamEvent> event, Done done) {
  {
    std::lock_guard lock(mutex_);
    watched_.push_back(std::make_shared<Watched>(Watched{std::move(event), std::move(done)}));
  }
  wake_.notify_one();
}

namespace {

// Waits for `event`; the device's failure, if it failed.
std::exception_ptr AwaitEvent(StreamEvent& event) {
  try {
    // Bounded waits, so that a device that never completes shows up in a stack dump here rather
    // than as a thread parked forever; the actors' watchdog reports the stalled actor.
    while (!event.WaitFor(std::chrono::milliseconds(100))) {
    }
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

}  // namespace

void CompletionPoller::Deliver(const std::shared_ptr<Watched>& watched, std::exception_ptr error) {
  {
    std::lock_guard lock(mutex_);
    if (watched_.empty() || watched_.front() != watched) return;
    watched_.pop_front();
  }
  watched->done(std::move(error));
}

bool CompletionPoller::CompleteNext() {
  std::lock_guard deliver(deliver_mutex_);
  std::shared_ptr<Watched> first;
  {
    std::lock_guard lock(mutex_);
    if (watched_.empty()) return false;
    first = watched_.front();
  }
  Deliver(first, AwaitEvent(*first->event));
  return true;
}

void CompletionPoller::Loop() {
  pthread_setname_np(pthread_self(), "weir-poller");
  for (;;) {
    std::shared_ptr<Watched> first;  // kept alive here while a helper may deliver and drop it
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !watched_.empty(); });
      if (watched_.empty()) return;  // stopping, and every watched event is done
      first = watched_.front();
    }
    std::exception_ptr error = AwaitEvent(*first->event);
    std::lock_guard deliver(deliver_mutex_);
    Deliver(first, std::move(error));
  }
}

namespace {

// Completion flag of the CPU stream: set by the stream's thread once it reaches the event.
struct CpuFlag {
  std::mutex mutex;
  std::condition_variable set;
  bool done = false;
};

class CpuStreamEvent final : public StreamEvent {
 public:
  explicit CpuStreamEvent(std::shared_ptr<CpuFlag> flag) : flag_(std::move(flag)) {}
  bool WaitFor(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(flag_->mutex);
    return flag_->set.wait_for(lock, timeout, [&] { return flag_->done; });
  }

 private:
  std::shared_ptr<CpuFlag> flag_;
};

// WEIR_CPU_STREAM_LATENCY_US: each piece of work on a CPU device stream is followed by this long a
// sleep, the stream busy and no core used, as a GPU computing: a stand-in that shows what the host
// spends while its actors wait for a device (bench/actor_overhead, "device waits").
std::chrono::microseconds StandInLatency() {
  const char* text = std::getenv("WEIR_CPU_STREAM_LATENCY_US");
  return std::chrono::microseconds(text != nullptr && *text != '\0' ? std::strtol(text, nullptr, 10) : 0);
}

class CpuDeviceStream final : public DeviceStream {
 public:
  explicit CpuDeviceStream(std::string name)
      : name_(std::move(name)), latency_(StandInLatency()), thread_([this] { Loop(); }) {}

  ~CpuDeviceStream() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  const std::string& Name() const override { return name_; }

  void Submit(std::function<void()> work) override { Push(std::move(work)); }

  std::unique_ptr<StreamEvent> Record() override {
    auto flag = std::make_shared<CpuFlag>();
    Push(flag);
    return std::make_unique<CpuStreamEvent>(std::move(flag));
  }

 private:
  using Item = std::variant<std::function<void()>, std::shared_ptr<CpuFlag>>;

  void Push(Item item) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(item));
    }
    wake_.notify_one();
  }

  void Loop() {
    pthread_setname_np(pthread_self(), "weir-stream");
    for (;;) {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything submitted has run
      Item item = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      if (auto* work = std::get_if<std::function<void()>>(&item)) {
        (*work)();
        if (latency_.count() > 0) std::this_thread::sleep_for(latency_);
      } else {
        const std::shared_ptr<CpuFlag>& flag = std::get<std::shared_ptr<CpuFlag>>(item);
        {
          std::lock_guard done(flag->mutex);
          flag->done = true;
        }
        flag->set.notify_all();
      }
    }
  }

  std::string name_;
  std::chrono::microseconds latency_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the rest is made
};

}  // namespace

std::unique_ptr<DeviceStream> MakeCpuDeviceStream(std::string name) {
  return std::make_unique<CpuDeviceStream>(std::move(name));
}

}  // namespace weir::internal
