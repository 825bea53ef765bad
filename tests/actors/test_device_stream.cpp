// The asynchronous device path's parts without CAF: the CPU device stream runs work in order on a
// thread of its own, an event completes only after the work before it, the poller calls back in the
// order it was given events and passes a device's error on, and destroying either waits for what it
// was given.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common/device_stream.hpp"

using namespace weir::internal;
using namespace std::chrono_literals;

TEST_CASE("a CPU device stream runs work in submission order on its own thread") {
  auto stream = MakeCpuDeviceStream("cpu:0 compute (async)");
  CHECK(stream->Name() == "cpu:0 compute (async)");
  std::vector<int> order;  // written by the stream's thread only; read after its event
  std::thread::id worker;
  for (int i = 0; i < 100; ++i) {
    stream->Submit([&order, &worker, i] {
      worker = std::this_thread::get_id();
      order.push_back(i);
    });
  }
  REQUIRE(stream->Record()->WaitFor(10s));
  CHECK(worker != std::this_thread::get_id());
  REQUIRE(order.size() == 100);
  for (int i = 0; i < 100; ++i) CHECK(order[static_cast<std::size_t>(i)] == i);
}

TEST_CASE("an event completes only once the work submitted before it has run") {
  auto stream = MakeCpuDeviceStream("s");
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  stream->Submit([released] { released.wait(); });
  auto event = stream->Record();
  CHECK_FALSE(event->WaitFor(20ms));
  release.set_value();
  CHECK(event->WaitFor(10s));
  CHECK(event->WaitFor(0ms));  // stays complete
}

namespace {
// An event of a device that failed (a sticky CUDA error surfaces this way at the event).
class FailedEvent final : public StreamEvent {
 public:
  bool WaitFor(std::chrono::milliseconds) override { throw std::runtime_error("[cuda] device 0: an illegal memory access"); }
};
}  // namespace

TEST_CASE("the poller calls back in the order it was given events, with the device's error") {
  auto stream = MakeCpuDeviceStream("s");
  std::vector<std::string> seen;  // the poller's thread only, until it is destroyed
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  {
    CompletionPoller poller("s");
    stream->Submit([released] { released.wait(); });
    poller.Watch(stream->Record(), [&](std::exception_ptr error) { seen.push_back(error ? "error" : "first"); });
    poller.Watch(std::make_unique<FailedEvent>(), [&](std::exception_ptr error) {
      try {
        if (error) std::rethrow_exception(error);
        seen.push_back("no error");
      } catch (const std::runtime_error& e) {
        seen.push_back(e.what());
      }
    });
    poller.Watch(stream->Record(), [&](std::exception_ptr) { seen.push_back("third"); });
    std::this_thread::sleep_for(20ms);
    release.set_value();
  }  // destroying the poller waits for every watched event
  REQUIRE(seen.size() == 3);
  CHECK(seen[0] == "first");
  CHECK(seen[1] == "[cuda] device 0: an illegal memory access");
  CHECK(seen[2] == "third");
}

TEST_CASE("a waiting caller and the poller complete each event once, in the order watched, the error included") {
  // CompleteNext: a sync caller waits for the first event itself and calls its done on its own thread,
  // racing the poller's thread for the same events. Every done runs once, in order, never two at once.
  auto stream = MakeCpuDeviceStream("s");
  CompletionPoller poller("s");
  CHECK_FALSE(poller.CompleteNext());  // nothing watched
  std::mutex mutex;
  std::vector<int> seen;
  std::atomic<int> inside{0};
  std::atomic<bool> overlapped{false};
  std::atomic<int> on_caller{0};
  const auto caller = std::this_thread::get_id();
  constexpr int kEvents = 400;
  for (int i = 0; i < kEvents; ++i) {
    stream->Submit([] { std::this_thread::sleep_for(std::chrono::microseconds(20)); });
    auto done = [&, i](std::exception_ptr error) {
      if (inside.fetch_add(1) != 0) overlapped = true;
      if (std::this_thread::get_id() == caller) on_caller.fetch_add(1);
      {
        std::lock_guard lock(mutex);
        seen.push_back(error ? -i : i);
      }
      inside.fetch_sub(1);
    };
    if (i % 7 == 3) {
      poller.Watch(std::make_unique<FailedEvent>(), done);
    } else {
      poller.Watch(stream->Record(), done);
    }
  }
  for (;;) {
    {
      std::lock_guard lock(mutex);
      if (static_cast<int>(seen.size()) == kEvents) break;
    }
    poller.CompleteNext();
  }
  CHECK_FALSE(poller.CompleteNext());
  CHECK_FALSE(overlapped.load());
  CHECK(on_caller.load() > 0);  // the caller completed some (the 20 us of work each leave it time to)
  std::lock_guard lock(mutex);
  REQUIRE(seen.size() == kEvents);
  for (int i = 0; i < kEvents; ++i) CHECK(seen[static_cast<std::size_t>(i)] == (i % 7 == 3 ? -i : i));
}

TEST_CASE("destroying a CPU device stream runs what was submitted") {
  std::atomic<int> ran{0};
  {
    auto stream = MakeCpuDeviceStream("s");
    for (int i = 0; i < 50; ++i) {
      stream->Submit([&ran] {
        std::this_thread::sleep_for(100us);
        ran.fetch_add(1);
      });
    }
  }
  CHECK(ran.load() == 50);
}
