// Actor overhead: what one actor firing costs (one act, its register messages included) and how
// many calls per second a session sustains, for a chain of 20 no-op actors and a diamond graph,
// with 1 call in flight (sync calls) and up to 8 (async calls), under both ways of hosting actors
// on CAF. Not a timed test: run it with `make bench` or build/bench/actor_overhead [--repeats N].
// Last line: one JSON object with the headline figures (default hosting, chain graph).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

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
};

Measurement RunSync(weir::Session& session, const weir::Job& job, int actors, int calls) {
  const weir::Tensor x = weir::Tensor::FromVector<float>({1}, {1.f});
  for (int i = 0; i < calls / 10; ++i) session.Call(job, {x});  // warm up
  const auto start = Clock::now();
  for (int i = 0; i < calls; ++i) session.Call(job, {x});
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return {calls / seconds, seconds * 1e9 / (static_cast<double>(calls) * actors)};
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

}  // namespace

int main(int argc, char** argv) {
  int repeats = 5;
  int calls = 20000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--repeats") == 0) repeats = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--calls") == 0) calls = std::max(100, std::atoi(argv[i + 1]));
  }
  const weir::Job jobs[] = {Chain(), Diamond()};
  struct Hosting {
    const char* name;
    weir::ActorHosting hosting;
  } hostings[] = {{"actor per stream", weir::ActorHosting::kActorPerStream},
                  {"actor per op", weir::ActorHosting::kActorPerOp}};

  fmt::print("actor overhead: {} calls per run, median of {} runs (alternating hostings)\n", calls, repeats);
  fmt::print("{:<18} {:<10} {:>7} {:>16} {:>16} {:>14} {:>14}\n", "hosting", "graph", "actors", "sync calls/s",
             "async calls/s", "ns/act (1)", "ns/act (8)");
  std::string json = "{";
  for (const weir::Job& job : jobs) {
    // [hosting][metric] -> samples
    std::vector<std::vector<std::vector<double>>> samples(2, std::vector<std::vector<double>>(4));
    int actors = 0;
    for (int r = 0; r < repeats; ++r) {
      for (int h = 0; h < 2; ++h) {
        weir::SessionOptions sync_options;
        sync_options.hosting = hostings[h].hosting;
        weir::Session sync_session(sync_options);
        actors = ActorsPerCall(sync_session, job);
        const Measurement sync = RunSync(sync_session, job, actors, calls);
        weir::SessionOptions async_options = sync_options;
        async_options.max_calls_in_flight = 8;
        weir::Session async_session(async_options);
        const Measurement async = RunAsync(async_session, job, actors, calls);
        auto& s = samples[static_cast<std::size_t>(h)];
        s[0].push_back(sync.calls_per_s);
        s[1].push_back(async.calls_per_s);
        s[2].push_back(sync.per_act_ns);
        s[3].push_back(async.per_act_ns);
      }
    }
    for (int h = 0; h < 2; ++h) {
      const auto& s = samples[static_cast<std::size_t>(h)];
      fmt::print("{:<18} {:<10} {:>7} {:>16.0f} {:>16.0f} {:>14.0f} {:>14.0f}\n", hostings[h].name, job.Name(), actors,
                 Median(s[0]), Median(s[1]), Median(s[2]), Median(s[3]));
      const std::string prefix = fmt::format("{}{}", job.Name() == "chain20" ? "" : "diamond_",
                                             h == 0 ? "" : "per_op_");
      json += fmt::format("{}\"{}calls_per_s_sync\": {:.0f}, \"{}calls_per_s_async\": {:.0f}, "
                          "\"{}per_act_ns_inflight1\": {:.1f}, \"{}per_act_ns_inflight8\": {:.1f}",
                          json.size() > 1 ? ", " : "", prefix, Median(s[0]), prefix, Median(s[1]), prefix,
                          Median(s[2]), prefix, Median(s[3]));
    }
  }
  fmt::print("{}}}\n", json);
  return 0;
}
