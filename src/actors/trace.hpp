#pragma once
// What a job's actors record while the session profiles (Session::StartProfiling) or traces
// (Session::StartTrace): plain data that the API turns into its Profile and into a Chrome trace
// (src/api/trace.cpp). Trace times are steady-clock nanoseconds since the clock's epoch.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace weir::internal {

/// What a job's tasks record, bits of the job's `instrument` flag: busy time (profiling) and every
/// firing's interval (tracing).
inline constexpr std::uint8_t kInstrumentProfile = 1;
inline constexpr std::uint8_t kInstrumentTrace = 2;

/// The trace's time stamp of `t`: steady-clock nanoseconds since the clock's epoch.
inline std::int64_t TraceNanos(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

/// One firing of an actor. An actor on a device stream records three pieces per act: the submission
/// on its executor, the device's work (from the end of the submission to when the stream's poller saw
/// the act's event complete), and the completion handled back on its executor. The gaps between them
/// are the hand-offs' latency.
struct TracedFiring {
  enum class Phase : std::uint8_t { kAct, kDevice, kCompletion };
  std::int64_t start_ns = 0;
  std::int64_t duration_ns = 0;
  std::int64_t call_id = -1;
  Phase phase = Phase::kAct;
};

/// One call, from its launch (after admission) to its completion by the final actor.
struct TracedCall {
  std::int64_t call_id = -1;
  std::int64_t launch_ns = 0;
  std::int64_t done_ns = 0;
};

/// An actor that fired while tracing.
struct TracedTask {
  int task_id = -1;  // in its plan
  /// Producers (task ids) of what this actor reads that run on another stream: the register hand-offs
  /// a trace draws as flow arrows between tracks.
  std::vector<int> fed_from_other_streams;
  std::string name;
  std::string kind;     // "kernel", "input", "variable", "sink", "source_tick"
  std::string op_type;  // kernels only
  std::string device;   // "cpu:0", or "cpu:0-1" for a collective actor
  std::string stream;   // its executor's stream, "cpu:0/compute0"
  bool collective = false;  // a collective (boxing) actor: all_reduce, reduce_scatter, ...
  std::int64_t bytes = 0;  // what one firing produces
  std::vector<TracedFiring> firings;
};

/// An actor's counters while profiling.
struct ProfiledTask {
  std::string name;
  std::string kind;
  std::string op_type;
  std::string device;
  std::int64_t firings = 0;
  std::int64_t busy_ns = 0;
  std::int64_t kept = 0;  // firings that kept earlier results (TaskDesc::constant_over)
};

struct JobCounters {
  std::string job;
  std::int64_t calls = 0;  // completed while profiling, launched after it started
  std::int64_t call_ns = 0;
  std::vector<ProfiledTask> tasks;
};

struct JobTrace {
  std::string job;
  std::vector<TracedCall> calls;
  std::vector<TracedTask> tasks;
};

}  // namespace weir::internal
