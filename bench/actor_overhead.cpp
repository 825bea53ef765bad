// Actor overhead: what one actor firing costs (one act, its register messages included) and how
// many calls per second a session sustains, for a chain of 20 no-op actors and a diamond graph,
// with 1 call in flight (sync calls) and up to 8 (async calls), under both ways of hosting actors
// on CAF, and with the kernels on asynchronous device streams (the GPU path). Not a timed test: run
// it with `make bench` or build/bench/actor_overhead [--repeats N].
// Also the latency of each sync call of the chain (default hosting): p50 and p99 per run, and the
// CPU an idle session uses from 100 ms after its last call (observability issue, part 4).
// Last line: one JSON object with the headline figures (default hosting, chain graph).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <sys/resource.h>

#include <fmt/format.h>

#include "weir/weir.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// x -> 20 identity actors -> y (plus the source tick, the input and the sink actors).
weir::Job Chain() {
  weir::JobBuilder builder("chain20");
  weir::Blob x = builder.Placeholder("x", weir::Shape{1});
  for (int i = 0; i < 20; ++i) x = weir::Identity(x);
  builder.Output("y", x);
  return builder.Build();
}

// x -> a -> {9 identities} and {9 identities} -> add -> y: fan-out and join, 20 op actors.
weir::Job Diamond() {
  weir::JobBuilder builder("diamond20");
  weir::Blob x = builder.Placeholder("x", weir::Shape{1});
  weir::Blob top = weir::Identity(x);
  weir::Blob left = top;
  weir::Blob right = top;
  for (int i = 0; i < 9; ++i) {
    left = weir::Identity(left);
    right = weir::Identity(right);
  }
  builder.Output("y", weir::Add(left, right));
  return builder.Build();
}

// Actors per call (source tick + input + ops + sink): the node lines of the compiled plan's dot.
int ActorsPerCall(weir::Session& session, const weir::Job& job) {
  const std::string dot = session.PlanDot(job);
  int actors = 0;
  for (std::size_t at = dot.find("\n    t"); at != std::string::npos; at = dot.find("\n    t", at + 1)) ++actors;
  return actors;
}

struct Measurement {
  double calls_per_s = 0;
  double per_act_ns = 0;
  double p50_us = 0;  // sync calls: latency percentiles of this run
  double p99_us = 0;
};

double Percentile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<std::size_t>(q * static_cast<double>(values.size())))];
}

Measurement RunSync(weir::Session& session, const weir::Job& job, int actors, int calls) {
  const weir::Tensor x = weir::Tensor::FromVector<float>({1}, {1.f});
  for (int i = 0; i < calls / 10; ++i) session.Call(job, {x});  // warm up
  std::vector<double> latency_us(static_cast<std::size_t>(calls));
  const auto start = Clock::now();
  auto before = start;
  for (int i = 0; i < calls; ++i) {
    session.Call(job, {x});
    const auto after = Clock::now();
    latency_us[static_cast<std::size_t>(i)] = std::chrono::duration<double, std::micro>(after - before).count();
    before = after;
  }
  const double seconds = std::chrono::duration<double>(before - start).count();
  return {calls / seconds, seconds * 1e9 / (static_cast<double>(calls) * actors), Percentile(latency_us, 0.5),
          Percentile(latency_us, 0.99)};
}

double ProcessCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

// Percent of one core this process uses over `window` while idle, starting 100 ms after the last call.
double IdleCpuPercent(std::chrono::milliseconds window) {
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const double cpu_before = ProcessCpuSeconds();
  const auto start = Clock::now();
  std::this_thread::sleep_for(window);
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  return 100.0 * (ProcessCpuSeconds() - cpu_before) / wall;
}

Measurement RunAsync(weir::Session& session, const weir::Job& job, int actors, int calls) {
  const weir::Tensor x = weir::Tensor::FromVector<float>({1}, {1.f});
  int done = 0;
  const auto count = [&done](weir::CallResult result) {
    result.ThrowIfError();
    ++done;  // callbacks run one at a time, on the callback thread
  };
  for (int i = 0; i < calls / 10; ++i) session.CallAsync(job, {x}, count);
  session.Sync();
  const auto start = Clock::now();
  for (int i = 0; i < calls; ++i) session.CallAsync(job, {x}, count);
  session.Sync();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (done != calls + calls / 10) throw std::runtime_error("lost callbacks");
  return {calls / seconds, seconds * 1e9 / (static_cast<double>(calls) * actors)};
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// A CPU stand-in for a GPU: the chain's stream graph on a CPU device stream whose every act holds the
// stream for `latency_us` without using a core (WEIR_CPU_STREAM_LATENCY_US). Returns the wall time and
// the process's CPU time per sync call, in µs.
std::pair<double, double> DeviceWait(const weir::Job& job, int latency_us, int calls) {
  setenv("WEIR_CPU_STREAM_LATENCY_US", std::to_string(latency_us).c_str(), 1);
  weir::SessionOptions options;
  options.async_cpu_streams = true;
  weir::Session session(options);
  const weir::Tensor x = weir::Tensor::FromVector<float>({1}, {1.f});
  for (int i = 0; i < calls / 10; ++i) session.Call(job, {x});  // warm up (the first call makes the stream)
  unsetenv("WEIR_CPU_STREAM_LATENCY_US");
  const double cpu_before = ProcessCpuSeconds();
  const auto start = Clock::now();
  for (int i = 0; i < calls; ++i) session.Call(job, {x});
  const double wall = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  return {wall / calls, (ProcessCpuSeconds() - cpu_before) * 1e6 / calls};
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 5;
  int calls = 20000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--repeats") == 0) repeats = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--calls") == 0) calls = std::max(100, std::atoi(argv[i + 1]));
  }
  const weir::Job jobs[] = {Chain(), Diamond()};
  // The last rows: the kernels on asynchronous (CPU) device streams, the path GPU kernels take: an
  // actor per kernel (what each act's submission, event and completion add), and the stream's kernels
  // as one graph actor (the default; on a GPU one CUDA graph). On device streams the executors are lent
  // to the threads that hand them work (the default); the last row has them as actors of the runtime's
  // threads instead (SessionOptions::lend_executors off).
  struct Hosting {
    const char* name;
    const char* json_prefix;
    weir::ActorHosting hosting;
    bool device_streams;
    bool stream_graphs;
    bool lend_executors = true;
  } hostings[] = {{"actor per stream", "", weir::ActorHosting::kActorPerStream, false, false},
                  {"actor per op", "per_op_", weir::ActorHosting::kActorPerOp, false, false},
                  {"device streams", "device_streams_", weir::ActorHosting::kActorPerStream, true, false},
                  {"device stream graph", "stream_graph_", weir::ActorHosting::kActorPerStream, true, true},
                  {"  on actor threads", "stream_graph_actor_threads_", weir::ActorHosting::kActorPerStream, true, true, false}};
  constexpr int kHostings = 5;

  fmt::print("actor overhead: {} calls per run, median of {} runs (alternating hostings)\n", calls, repeats);
  fmt::print("{:<20} {:<10} {:>7} {:>16} {:>16} {:>14} {:>14}\n", "hosting", "graph", "actors", "sync calls/s",
             "async calls/s", "ns/act (1)", "ns/act (8)");
  std::string json = "{";
  std::vector<double> p50_runs;  // chain, default hosting, one per run
  std::vector<double> p99_runs;
  std::vector<double> idle_runs;
  for (const weir::Job& job : jobs) {
    // [hosting][metric] -> samples
    std::vector<std::vector<std::vector<double>>> samples(kHostings, std::vector<std::vector<double>>(4));
    std::vector<int> actors(kHostings, 0);  // per call: a graph actor stands for the stream's kernels
    for (int r = 0; r < repeats; ++r) {
      for (int h = 0; h < kHostings; ++h) {
        weir::SessionOptions sync_options;
        sync_options.hosting = hostings[h].hosting;
        sync_options.async_cpu_streams = hostings[h].device_streams;
        sync_options.stream_graphs = hostings[h].stream_graphs;
        sync_options.lend_executors = hostings[h].lend_executors;
        weir::Session sync_session(sync_options);
        const int acting = actors[static_cast<std::size_t>(h)] = ActorsPerCall(sync_session, job);
        const Measurement sync = RunSync(sync_session, job, acting, calls);
        if (h == 0 && job.Name() == "chain20") {
          p50_runs.push_back(sync.p50_us);
          p99_runs.push_back(sync.p99_us);
          idle_runs.push_back(IdleCpuPercent(std::chrono::milliseconds(500)));  // the session is alive
        }
        weir::SessionOptions async_options = sync_options;
        async_options.max_calls_in_flight = 8;
        weir::Session async_session(async_options);
        const Measurement async = RunAsync(async_session, job, acting, calls);
        auto& s = samples[static_cast<std::size_t>(h)];
        s[0].push_back(sync.calls_per_s);
        s[1].push_back(async.calls_per_s);
        s[2].push_back(sync.per_act_ns);
        s[3].push_back(async.per_act_ns);
      }
    }
    for (int h = 0; h < kHostings; ++h) {
      const auto& s = samples[static_cast<std::size_t>(h)];
      fmt::print("{:<20} {:<10} {:>7} {:>16.0f} {:>16.0f} {:>14.0f} {:>14.0f}\n", hostings[h].name, job.Name(), actors[static_cast<std::size_t>(h)],
                 Median(s[0]), Median(s[1]), Median(s[2]), Median(s[3]));
      const std::string prefix = fmt::format("{}{}", job.Name() == "chain20" ? "" : "diamond_", hostings[h].json_prefix);
      json += fmt::format("{}\"{}calls_per_s_sync\": {:.0f}, \"{}calls_per_s_async\": {:.0f}, "
                          "\"{}per_act_ns_inflight1\": {:.1f}, \"{}per_act_ns_inflight8\": {:.1f}",
                          json.size() > 1 ? ", " : "", prefix, Median(s[0]), prefix, Median(s[1]), prefix,
                          Median(s[2]), prefix, Median(s[3]));
    }
  }
  // What the host spends while its actors wait for a device: the process's CPU per call beyond the same
  // call's with no device time, as a share of the device time (the core it keeps busy waiting).
  const int latencies[] = {0, 100, 1000};
  std::vector<std::vector<double>> wall_us(3), cpu_us(3);
  for (int r = 0; r < repeats; ++r) {
    for (int l = 0; l < 3; ++l) {
      const auto [wall, cpu] = DeviceWait(jobs[0], latencies[l], latencies[l] == 0 ? calls : 1000);
      wall_us[static_cast<std::size_t>(l)].push_back(wall);
      cpu_us[static_cast<std::size_t>(l)].push_back(cpu);
    }
  }
  fmt::print("device waits (chain20 as one stream graph on a CPU device stream whose acts take the device time "
             "without a core; sync calls):\n");
  fmt::print("{:>16} {:>16} {:>16} {:>22}\n", "device time us", "call wall us", "process CPU us", "waiting CPU % of core");
  const double base_cpu = Median(cpu_us[0]);
  for (int l = 0; l < 3; ++l) {
    const double cpu = Median(cpu_us[static_cast<std::size_t>(l)]);
    const double waiting = latencies[l] == 0 ? 0.0 : 100.0 * std::max(0.0, cpu - base_cpu) / latencies[l];
    fmt::print("{:>16} {:>16.1f} {:>16.1f} {:>22.1f}\n", latencies[l], Median(wall_us[static_cast<std::size_t>(l)]), cpu, waiting);
    json += fmt::format(", \"device_wait_{}us_call_us\": {:.1f}, \"device_wait_{}us_cpu_us\": {:.1f}", latencies[l],
                        Median(wall_us[static_cast<std::size_t>(l)]), latencies[l], cpu);
    if (latencies[l] > 0) json += fmt::format(", \"device_wait_{}us_waiting_cpu_percent\": {:.1f}", latencies[l], waiting);
  }
  auto list = [](const std::vector<double>& values) {
    std::string out;
    for (double v : values) out += fmt::format("{}{:.1f}", out.empty() ? "" : ", ", v);
    return out;
  };
  fmt::print("sync call latency (chain20, actor per stream), per run: p50 [{}] us, p99 [{}] us; idle session "
             "CPU from 100 ms after the last call [{}] % of a core\n",
             list(p50_runs), list(p99_runs), list(idle_runs));
  json += fmt::format(", \"sync_call_p50_us\": {:.2f}, \"sync_call_p99_us\": {:.2f}, \"sync_call_p50_us_runs\": [{}], "
                      "\"sync_call_p99_us_runs\": [{}], \"idle_cpu_percent\": {:.2f}",
                      Median(p50_runs), Median(p99_runs), list(p50_runs), list(p99_runs),
                      *std::max_element(idle_runs.begin(), idle_runs.end()));
  fmt::print("{}}}\n", json);
  return 0;
}
