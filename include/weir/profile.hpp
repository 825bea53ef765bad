#pragma once
/// \file Where a session's time goes: per-actor busy time and per-job call latency, gathered
/// between Session::StartProfiling and Session::StopProfiling.
#include <cstdint>
#include <string>
#include <vector>

namespace weir {

/// One actor of a compiled job: how often it fired and how long its firings took (the kernel for
/// an op, the copy for an input or the final actor). Time between firings (messages, waiting for
/// inputs or free registers) is not in it.
struct ActorProfile {
  std::string name;     ///< the op's name (or the placeholder's, "source_tick", "sink")
  std::string kind;     ///< "kernel", "input", "variable", "sink" or "source_tick"
  std::string op_type;  ///< the op's type for kernels ("conv2d"), else empty
  std::string device;   ///< where it runs: "cpu:0", or "cpu:0-1" for a collective actor
  std::int64_t firings = 0;
  double busy_seconds = 0;
  /// Firings that kept the results of an earlier call instead of running the kernel: a weight's cast
  /// or transpose in a job that never changes the weight, while no other job or load has changed it.
  std::int64_t kept = 0;
};

/// One job: its calls and its actors, busiest first.
struct JobProfile {
  std::string job;
  /// Calls that completed while profiling was on (launched after it started).
  std::int64_t calls = 0;
  /// Sum over those calls of the time from launch (after admission) to completion by the final
  /// actor. With one call in flight at a time it is the calls' wall time; pipelined calls overlap.
  double call_seconds = 0;
  std::vector<ActorProfile> actors;

  /// Sum of the actors' busy time.
  double BusySeconds() const;
};

struct Profile {
  /// Wall time between StartProfiling and StopProfiling.
  double wall_seconds = 0;
  /// Jobs that ran while profiling was on, in the order they were compiled.
  std::vector<JobProfile> jobs;

  /// A table per job: calls, mean latency, busy time per call, and the rest of a call's latency
  /// (runtime overhead and waiting when calls run one at a time), then one line per actor with its
  /// share of the busy time. Jobs on several devices also get each device's busy time a call.
  /// `max_actors` lines at most per job (0: all).
  std::string Format(std::size_t max_actors = 25) const;
};

}  // namespace weir
