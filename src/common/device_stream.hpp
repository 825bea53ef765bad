#pragma once
// The asynchronous device path (docs/runtime.md, "Devices with streams"; OneFlow's design, the runtime
// reference 7.6): an actor on a device submits its kernel's work to the device's stream and records an
// event behind it; its messages leave once the event completes. A poller thread per stream waits for
// the events in order and hands each completion back to the actors' executor (or a sync caller waiting
// for its call does, CompletionPoller::CompleteNext).
//
// Two implementations of one interface: CUDA streams and events (common/cuda_runtime.hpp,
// MakeCudaDeviceStream), and CpuDeviceStream, where work runs on the stream's own thread and events
// are real completion flags. The second is not a mock: it runs real kernels, and it is how the runtime's
// asynchronous path is tested, under ASan and TSan, on machines without a GPU.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace weir::internal {

/// Completes once everything submitted to its stream before it was recorded has run.
class StreamEvent {
 public:
  virtual ~StreamEvent() = default;
  /// Waits for the event; true once it has completed, false when `timeout` passed first where the
  /// wait can be bounded (a CUDA event's cannot once it sleeps: the GPU's signal wakes it). Throws
  /// std::runtime_error naming the device for a failure of the device (a CUDA error in the work before
  /// the event).
  virtual bool WaitFor(std::chrono::milliseconds timeout) = 0;
};

class DeviceStream {
 public:
  virtual ~DeviceStream() = default;
  /// "cuda:0 compute", "cpu:1 compute (async)".
  virtual const std::string& Name() const = 0;
  /// Queues `work` behind everything submitted before. On a CUDA stream `work` runs now, on the caller's
  /// thread, and queues device work on the stream (kernel launches, async copies); on the CPU stream it
  /// runs later, on the stream's thread. `work` must not throw: it reports failures itself.
  virtual void Submit(std::function<void()> work) = 0;
  /// An event behind everything submitted so far.
  virtual std::unique_ptr<StreamEvent> Record() = 0;
  /// The cudaStream_t of a CUDA stream, for kernels to launch on; null for the CPU stream.
  virtual void* NativeHandle() const { return nullptr; }
};

/// Waits for events in the order they are watched, on a thread of its own, and calls each one's
/// `done` once it completes, with the device's error if it failed (then null). Destroying the poller
/// waits for the events watched so far.
class CompletionPoller {
 public:
  using Done = std::function<void(std::exception_ptr error)>;
  explicit CompletionPoller(std::string name);
  ~CompletionPoller();
  CompletionPoller(const CompletionPoller&) = delete;
  CompletionPoller& operator=(const CompletionPoller&) = delete;

  void Watch(std::unique_ptr<StreamEvent> event, Done done);
  /// Waits on the calling thread for the first event watched and calls its `done` here, unless the
  /// poller's thread gets to it first; the `done` calls keep the order watched, one at a time. False
  /// when nothing is watched. A sync caller that would sleep until the poller woke it (which the
  /// device's completion woke first) waits here instead: one wake-up where there were two.
  bool CompleteNext();

 private:
  struct Watched {
    std::unique_ptr<StreamEvent> event;
    Done done;
  };
  void Loop();
  /// Calls `watched`'s done with `error` if it is still the first watched (else a helper did).
  /// Under deliver_mutex_.
  void Deliver(const std::shared_ptr<Watched>& watched, std::exception_ptr error);

  std::string name_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Watched>> watched_;
  std::mutex deliver_mutex_;  // held from the wait for the first event through its done
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the rest is made
};

/// A stream of CPU work: a thread that runs the submitted work in order. Destroying it runs what was
/// submitted, then joins.
std::unique_ptr<DeviceStream> MakeCpuDeviceStream(std::string name);

}  // namespace weir::internal
