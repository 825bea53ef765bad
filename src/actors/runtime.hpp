#pragma once
// Hosts compiled plans on CAF. No CAF header leaks out of here.
#include <chrono>
#include <memory>
#include <string>

#include "actors/dispatcher.hpp"
#include "plan/plan.hpp"
#include "actors/registers.hpp"
#include "actors/trace.hpp"

namespace weir::internal {

/// How tasks map onto CAF actors. kActorPerStream multiplexes all tasks of a stream onto one CAF
/// actor (messages between them are local queue pushes); kActorPerTask gives every task its own
/// CAF actor (every message is a CAF message). bench/actor_overhead measures both.
enum class Hosting : std::uint8_t { kActorPerStream, kActorPerTask };

struct RuntimeOptions {
  /// CAF scheduler threads; 0 means one per core.
  int scheduler_threads = 0;
  Hosting hosting = Hosting::kActorPerStream;
  /// How long shutdown waits for the end-of-stream cascade before it stops actors by force.
  std::chrono::milliseconds shutdown_timeout{30000};
  /// One shared run queue whose every enqueue wakes an idle thread (CAF's work sharing), instead of
  /// per-thread queues (work stealing). Several devices need it: a message one device's thread
  /// sends lands on that thread's own queue under work stealing, where a sleeping peer finds it
  /// only after up to 10 ms, so the devices took turns instead of computing side by side.
  bool share_work = false;
  /// Runs the kernels of CPU compute streams through the asynchronous device path that CUDA devices
  /// take (common/device_stream.hpp): each stream's kernels on a thread of the stream's own, their
  /// completions through a poller. Tests use it to check that path without a GPU.
  bool async_cpu_streams = false;
  /// The actors mostly wait for devices (a GPU session, or CPU device streams standing in for one): an
  /// idle actor thread polls for a few microseconds, then sleeps until work arrives. Without it a
  /// thread polls for about 0.5 ms after each message, which keeps back-to-back CPU calls from ever
  /// paying a wake-up but holds a core through every GPU step.
  bool waits_on_devices = false;
  /// Where no handler of a job waits (every kernel submitted to a device stream, no collective), its
  /// executors run on the threads that hand them work (the caller launching a call, the poller that
  /// saw a device finish) instead of waking an actor thread for each hand-off (kActorPerStream only).
  bool lend_executors = false;
};

class JobRuntime;

/// Owns the CAF actor system; destroyed after every JobRuntime it instantiated.
class Runtime {
 public:
  explicit Runtime(RuntimeOptions options);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// Allocates the plan's registers, creates its kernels and spawns its executors.
  /// `variables` gives the storage of the session variables the plan uses.
  /// `processes`: the group the plan's cross-process collectives run over (Plan::process_collectives),
  /// kept alive by the job's runtime; null in a one-process session.
  std::unique_ptr<JobRuntime> Instantiate(std::shared_ptr<const Plan> plan, Dispatcher& dispatcher,
                                          const VariableResolver& variables,
                                          std::shared_ptr<ProcessGroup> processes = nullptr);
  const RuntimeOptions& Options() const { return options_; }
  int SchedulerThreads() const;

  struct Impl;

 private:
  RuntimeOptions options_;
  std::unique_ptr<Impl> impl_;
};

/// One instantiated plan. Calls enter through Launch; ~JobRuntime shuts it down (end-of-stream
/// cascade, then the executors exit).
class JobRuntime {
 public:
  ~JobRuntime();
  /// Feeds one admitted call to the source actor. Calls must arrive in call-id order.
  void Launch(const std::shared_ptr<CallRecord>& record);
  /// Ends the stream: the cascade runs through every actor after the calls already launched.
  /// Returns false if the actors did not all finish within the runtime's shutdown timeout (they
  /// are then stopped by force).
  bool Shutdown();
  const Plan& GetPlan() const;
  /// Calls launched and not yet through the final actor.
  int CallsInFlight() const;
  /// For a sync caller waiting for its call, where the job's executors are lent and it has one device
  /// stream: waits on the calling thread for that stream's next completion and handles it here (the
  /// executors run on this thread), instead of the stream's poller waking and then waking the caller.
  /// False when there is nothing to wait for this way (the caller then waits as usual).
  bool CompleteNext();
  /// Runs `hook` on the actor thread each time a call leaves the final actor.
  void SetCallDoneHook(std::function<void()> hook);
  /// What the job waits for (the watchdog's report): calls in flight and the oldest one's age, then
  /// per executor the kernel it is inside, or each actor that holds something and cannot fire:
  /// its consumed registers without a readable slot (and their producers) and its produced
  /// registers without a free slot (and the consumers holding them). Waits at most 1 s.
  std::string DescribeWaiting() const;
  /// Acts of all of this job's actors so far (the watchdog's sign of progress).
  std::int64_t Acts() const;
  /// Turning profiling on zeroes this job's counters first.
  void SetProfiling(bool on);
  /// Turning tracing on clears what was recorded. Call both only while no call is in flight.
  void SetTracing(bool on);
  /// The firings and calls recorded while tracing; only while no call is in flight.
  JobTrace Trace() const;
  /// The counters so far, actors in plan order.
  JobCounters Profile() const;

  struct Impl;
  explicit JobRuntime(std::shared_ptr<Impl> impl);

 private:
  friend class Runtime;
  std::shared_ptr<Impl> impl_;
  struct Executors;                      // strong CAF handles; released by Shutdown
  std::unique_ptr<Executors> executors_;
};

}  // namespace weir::internal
