// Session end to end: sync and async calls, call order, threads, bad input, failing kernels,
// callback errors and shutdown with calls in flight.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>

#include "api/test_ops_for_tests.hpp"
#include "api/text_file_util.hpp"
#include "kernels/kernel.hpp"
#include "weir/weir.hpp"

using namespace weir;
using testing::Probe;
using testing::ProbeAttrs;
using testing::ProbeRuns;

namespace {

Tensor Filled(Shape shape, float value) {
  Tensor t(std::move(shape), DType::kF32);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) t.Data<float>()[i] = value;
  return t;
}

// y = probe(probe(x) * 2 + 1): a chain with optional spinning and failure.
Job ProbeJob(const std::string& name, ProbeAttrs attrs) {
  testing::RegisterProbeOp();
  JobBuilder builder(name);
  Blob x = builder.Placeholder("x", Shape{4});
  Blob y = Probe(ScalarAdd(ScalarMul(Probe(x, attrs), 2.0), 1.0), attrs);
  builder.Output("y", y);
  return builder.Build();
}

std::vector<SessionOptions> AllHostings() {
  SessionOptions per_stream;
  SessionOptions two_streams;
  two_streams.cpu_compute_streams = 2;
  SessionOptions per_op;
  per_op.hosting = ActorHosting::kActorPerOp;
  return {per_stream, two_streams, per_op};
}

}  // namespace

TEST_CASE("a sync call returns hand-computed outputs; inputs by position and by name") {
  JobBuilder builder("affine");
  Blob x = builder.Placeholder("x", Shape{2, 3});
  Blob w = builder.Constant(Tensor::FromVector<float>({3, 2}, {1, 2, 3, 4, 5, 6}));
  Blob b = builder.Constant(Tensor::FromVector<float>({2}, {0.5f, -100.f}));
  Blob y = BiasAdd(MatMul(x, w), b);
  builder.Output("y", y);
  builder.Output("relu_y", Relu(y));
  const Job job = builder.Build();
  CHECK(job.OutputNames() == std::vector<std::string>{"y", "relu_y"});

  Session session;
  const Tensor input = Tensor::FromVector<float>({2, 3}, {1, 0, 0, 0, 1, 1});
  Outputs out = session.Call(job, {input});
  CHECK(out[0].ToVector<float>() == std::vector<float>{1.5f, -98.f, 8.5f, -90.f});
  CHECK(out["relu_y"].ToVector<float>() == std::vector<float>{1.5f, 0.f, 8.5f, 0.f});
  CHECK_THROWS_AS(out["nope"], std::out_of_range);

  out = session.Call(job, std::map<std::string, Tensor>{{"x", input}});
  CHECK(out["y"].ToVector<float>() == std::vector<float>{1.5f, -98.f, 8.5f, -90.f});
  CHECK(session.PlanDot(job).find("register_num=2") != std::string::npos);
}

TEST_CASE("a released job's actors go and its variables stay; a later call compiles it again; not while in flight") {
  testing::RegisterProbeOp();
  JobBuilder builder("scaled");
  Blob x = builder.Placeholder("x", Shape{4});
  Blob v = builder.Variable("scale", {.shape = Shape{4}, .initializer = ConstantInitializer(3.0)});
  builder.Output("y", Probe(Mul(x, v), ProbeAttrs{.spin_scale_us = 100000.0}));  // 0.1 s a unit of x
  const Job job = builder.Build();
  Session session;
  session.Release(job);  // never compiled: nothing to do
  CHECK(session.Call(job, {Filled({4}, 0.f)})[0].ToVector<float>() == std::vector<float>(4, 0.f));
  session.SetVariables({{"scale", Filled({4}, 5.f)}});
  session.Release(job);
  CHECK(session.Call(job, {Filled({4}, 0.f)})[0].ToVector<float>() == std::vector<float>(4, 0.f));
  CHECK(session.GetVariable("scale").ToVector<float>() == std::vector<float>(4, 5.f));  // kept across the release
  bool done = false;
  session.CallAsync(job, {Filled({4}, 1.f)}, [&](CallResult result) {
    done = true;
    CHECK(result.outputs[0].ToVector<float>() == std::vector<float>(4, 5.f));
  });
  CHECK_THROWS_WITH_AS(session.Release(job), "[session] job 'scaled' cannot be released while a call of it is in flight",
                       std::logic_error);
  session.Sync();
  CHECK(done);
  session.Release(job);
  CHECK(session.Call(job, {Filled({4}, 0.f)})[0].ToVector<float>() == std::vector<float>(4, 0.f));
}

TEST_CASE("10,000 async calls with random kernel delays call back strictly in call order") {
  for (const SessionOptions& options : AllHostings()) {
    CAPTURE(static_cast<int>(options.hosting));
    CAPTURE(options.cpu_compute_streams);
    // Two jobs with different speeds share the session's one ordered stream of calls.
    const Job slow = ProbeJob("slow", {.spin_scale_us = 1.0});
    const Job fast = ProbeJob("fast", {});
    Session session(options);
    constexpr int kCalls = 10'000;
    std::vector<int> order;
    order.reserve(kCalls);
    std::atomic<int> wrong_values{0};
    std::atomic<bool> on_caller_thread{false};
    const auto caller = std::this_thread::get_id();
    std::mt19937 random(42);
    for (int i = 0; i < kCalls; ++i) {
      const float delay = static_cast<float>(random() % 30);  // 0..29 µs per probe
      Tensor x = Filled({4}, delay);
      x.Data<float>()[1] = static_cast<float>(i);
      session.CallAsync(i % 3 == 0 ? fast : slow, {x}, [&, i, delay](CallResult result) {
        if (std::this_thread::get_id() == caller) on_caller_thread = true;
        result.ThrowIfError();
        const Tensor& y = result.outputs[0];
        if (y.Data<float>()[0] != delay * 2 + 1 || y.Data<float>()[1] != static_cast<float>(i) * 2 + 1) ++wrong_values;
        order.push_back(i);
      });
    }
    session.Sync();
    REQUIRE(order.size() == kCalls);
    for (int i = 0; i < kCalls; ++i) REQUIRE(order[static_cast<std::size_t>(i)] == i);
    CHECK(wrong_values == 0);
    CHECK_FALSE(on_caller_thread);
  }
}

TEST_CASE("a sync call completes after the callbacks of earlier async calls have run") {
  const Job job = ProbeJob("mixed", {.spin_scale_us = 5.0});
  Session session;
  std::atomic<int> callbacks{0};
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 4; ++i) session.CallAsync(job, {Filled({4}, 3)}, [&](CallResult) { ++callbacks; });
    session.Call(job, {Filled({4}, 1)});
    CHECK(callbacks == 4 * (round + 1));
  }
}

TEST_CASE("several threads may call one session") {
  const Job job = ProbeJob("threads", {.spin_scale_us = 0.5});
  Session session;
  std::atomic<int> wrong{0};
  std::atomic<int> async_done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        const float value = static_cast<float>(t * 1000 + i);
        if (i % 2 == 0) {
          const Outputs out = session.Call(job, {Filled({4}, value)});
          if (out[0].Data<float>()[3] != value * 2 + 1) ++wrong;
        } else {
          session.CallAsync(job, {Filled({4}, value)}, [&, value](CallResult result) {
            if (!result.Ok() || result.outputs[0].Data<float>()[3] != value * 2 + 1) ++wrong;
            ++async_done;
          });
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  session.Sync();
  CHECK(wrong == 0);
  CHECK(async_done == 4 * 150);
}

TEST_CASE("bad inputs throw std::invalid_argument naming the placeholder, and nothing runs") {
  const Job job = ProbeJob("strict", {});
  Session session;
  session.Call(job, {Filled({4}, 1)});
  const std::int64_t runs = ProbeRuns();

  CHECK_THROWS_WITH_AS(session.Call(job, std::vector<Tensor>{}), "[job 'strict'] expects 1 inputs (x: f32(4)), got 0",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(session.Call(job, {Filled({4}, 1), Filled({4}, 1)}),
                       "[job 'strict'] expects 1 inputs (x: f32(4)), got 2", std::invalid_argument);
  CHECK_THROWS_WITH_AS(session.Call(job, {Filled({5}, 1)}), "[job 'strict'] input 'x': expected shape (4), got (5)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(session.Call(job, {Tensor(Shape{4}, DType::kF64)}),
                       "[job 'strict'] input 'x': expected dtype f32, got f64", std::invalid_argument);
  CHECK_THROWS_WITH_AS(session.Call(job, {Tensor()}),
                       "[job 'strict'] input 'x': expected a f32(4) tensor, got an undefined tensor", std::invalid_argument);
  CHECK_THROWS_WITH_AS(session.Call(job, std::map<std::string, Tensor>{{"y", Filled({4}, 1)}}),
                       "[job 'strict'] no placeholder named 'y'; placeholders are: x: f32(4)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(session.Call(job, std::map<std::string, Tensor>{}),
                       "[job 'strict'] input 'x' (f32(4)) is missing", std::invalid_argument);
  CHECK_THROWS_AS(session.CallAsync(job, {Filled({3}, 1)}, [](CallResult) {}), std::invalid_argument);
  CHECK_THROWS_AS(session.CallAsync(job, {Filled({4}, 1)}, nullptr), std::invalid_argument);
  CHECK_THROWS_AS(session.Call(Job(), {Filled({4}, 1)}), std::invalid_argument);
  session.Sync();
  CHECK(ProbeRuns() == runs);  // nothing ran
  CHECK(session.Call(job, {Filled({4}, 2)})[0].Data<float>()[0] == 5.f);  // still usable
}

TEST_CASE("a failing kernel fails that call only; the session stays usable") {
  const Job job = ProbeJob("faulty", {.fail_on_negative = true});
  Session session;
  CHECK_THROWS_WITH_AS(session.Call(job, {Filled({4}, -1)}), "[probe] negative input -1", internal::KernelError);
  CHECK(session.Call(job, {Filled({4}, 3)})[0].Data<float>()[0] == 7.f);

  // Async: failures and successes interleaved, each delivered to its own callback in order.
  std::vector<std::string> seen;
  for (int i = 0; i < 20; ++i) {
    session.CallAsync(job, {Filled({4}, i % 4 == 0 ? -1.f : 1.f)}, [&](CallResult result) {
      if (result.Ok()) {
        seen.push_back("ok");
      } else {
        try {
          result.ThrowIfError();
        } catch (const internal::KernelError& error) {
          seen.push_back(error.what());
        }
      }
    });
  }
  session.Sync();
  REQUIRE(seen.size() == 20);
  for (int i = 0; i < 20; ++i) CHECK(seen[static_cast<std::size_t>(i)] == (i % 4 == 0 ? "[probe] negative input -1" : "ok"));
}

TEST_CASE("an exception thrown by a callback is rethrown at the next Sync, once") {
  const Job job = ProbeJob("throwing", {});
  Session session;
  std::atomic<int> after{0};
  session.CallAsync(job, {Filled({4}, 1)}, [](CallResult) { throw std::runtime_error("callback broke"); });
  session.CallAsync(job, {Filled({4}, 1)}, [&](CallResult) { ++after; });  // later callbacks still run
  CHECK_THROWS_WITH_AS(session.Sync(), "callback broke", std::runtime_error);
  CHECK(after == 1);
  session.Sync();  // reported once
  CHECK(session.Call(job, {Filled({4}, 1)})[0].Data<float>()[0] == 3.f);
}

TEST_CASE("callbacks may call the session; Sync from a callback is refused") {
  const Job job = ProbeJob("reentrant", {});
  Session session;
  std::atomic<float> nested{0};
  std::atomic<bool> sync_refused{false};
  session.CallAsync(job, {Filled({4}, 1)}, [&](CallResult) {
    nested = session.Call(job, {Filled({4}, 10)})[0].Data<float>()[0];
    try {
      session.Sync();
    } catch (const std::logic_error&) {
      sync_refused = true;
    }
  });
  session.Sync();
  CHECK(nested == 21.f);
  CHECK(sync_refused);
}

TEST_CASE("destroying a session with calls in flight completes them and does not hang") {
  for (const SessionOptions& options : AllHostings()) {
    const Job job = ProbeJob("shutdown", {.spin_scale_us = 20.0});
    std::atomic<int> callbacks{0};
    {
      Session session(options);
      for (int i = 0; i < 200; ++i) {
        session.CallAsync(job, {Filled({4}, 5)}, [&](CallResult result) {
          if (result.Ok()) ++callbacks;
        });
      }
    }
    CHECK(callbacks == 200);
  }
  // A session that never ran a job, and one whose job was compiled but never called.
  { Session idle; }
  {
    Session compiled;
    compiled.PlanDot(ProbeJob("never_called", {}));
  }
}

TEST_CASE("several jobs per session; one job in several sessions; dead ops do not run") {
  testing::RegisterProbeOp();
  JobBuilder builder("pruned");
  Blob x = builder.Placeholder("x", Shape{4});
  Probe(x, {});  // feeds no output
  builder.Output("y", ScalarMul(x, 3.0));
  const Job pruned = builder.Build();
  const Job other = ProbeJob("other", {});

  Session first;
  Session second;
  const std::int64_t runs = ProbeRuns();
  CHECK(first.Call(pruned, {Filled({4}, 2)})[0].Data<float>()[0] == 6.f);
  CHECK(ProbeRuns() == runs);
  CHECK(first.Call(other, {Filled({4}, 2)})[0].Data<float>()[0] == 5.f);
  CHECK(second.Call(other, {Filled({4}, 4)})[0].Data<float>()[0] == 9.f);
  CHECK(first.PlanDot(pruned).find("test_probe") == std::string::npos);
}

TEST_CASE("shutdown never hangs, even behind a kernel slower than the shutdown timeout") {
  const Job job = ProbeJob("stuck", {.spin_scale_us = 1000.0});  // 1 ms per unit of input
  SessionOptions options;
  options.shutdown_timeout = std::chrono::milliseconds(100);
  std::atomic<int> ok{0};
  std::atomic<int> failed{0};
  const auto start = std::chrono::steady_clock::now();
  {
    Session session(options);
    for (int i = 0; i < 3; ++i) {
      session.CallAsync(job, {Filled({4}, 400)}, [&](CallResult result) { ++(result.Ok() ? ok : failed); });
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(ok + failed == 3);  // every callback ran: completed, or failed by the shutdown
  CHECK(failed >= 1);
  CHECK(seconds < 10.0);
}

TEST_CASE("a label out of range in the cross entropy fails that call, sync and async") {
  JobBuilder builder("loss");
  Blob labels = builder.Placeholder("labels", Shape{2}, DType::kI32);
  Blob logits = builder.Placeholder("logits", Shape{2, 3});
  builder.Output("loss", ReduceMean(SparseSoftmaxCrossEntropy(labels, logits)));
  const Job job = builder.Build();
  Session session;
  const Tensor logits_value = Tensor::FromVector<float>({2, 3}, {0, 0, 0, 1, 2, 3});
  const Tensor good = Tensor::FromVector<std::int32_t>({2}, {0, 2});
  const Tensor bad = Tensor::FromVector<std::int32_t>({2}, {0, 3});
  // mean of ln 3 and ln(e^-2 + e^-1 + 1)
  const float expected = static_cast<float>((std::log(3.0) + std::log(std::exp(-2.0) + std::exp(-1.0) + 1.0)) / 2);
  CHECK(session.Call(job, {good, logits_value})[0].Data<float>()[0] == doctest::Approx(expected));
  CHECK_THROWS_WITH_AS(session.Call(job, {bad, logits_value}),
                       "[sparse_softmax_cross_entropy] label 3 at row 1 is outside [0, 3)", internal::KernelError);
  std::vector<bool> ok;
  for (const Tensor& labels_value : {good, bad, good}) {
    session.CallAsync(job, {labels_value, logits_value}, [&](CallResult result) { ok.push_back(result.Ok()); });
  }
  session.Sync();
  CHECK(ok == std::vector<bool>{true, false, true});
  CHECK(session.Call(job, {good, logits_value})[0].Data<float>()[0] == doctest::Approx(expected));
}

TEST_CASE("profiling times each actor and each call, only while on") {
  // x = 1000: the first probe spins 1000 us, the second (input 2x+1 = 2001) 2001 us.
  const Job job = ProbeJob("profiled", ProbeAttrs{1.0, false});
  Session session;
  CHECK_THROWS_WITH_AS(session.StopProfiling(), doctest::Contains("not on"), std::logic_error);
  session.Call(job, {Filled(Shape{4}, 1000.f)});  // before profiling: not counted

  session.StartProfiling();
  for (int i = 0; i < 3; ++i) session.Call(job, {Filled(Shape{4}, 1000.f)});
  for (int i = 0; i < 2; ++i) session.CallAsync(job, {Filled(Shape{4}, 1000.f)}, [](CallResult) {});
  session.Sync();
  const Profile profile = session.StopProfiling();

  REQUIRE(profile.jobs.size() == 1);
  const JobProfile& p = profile.jobs[0];
  CHECK(p.job == "profiled");
  CHECK(p.calls == 5);
  std::vector<double> probe_busy;
  for (const ActorProfile& actor : p.actors) {
    if (actor.kind == "kernel") CHECK(actor.firings == 5);
    if (actor.op_type == "test_probe") probe_busy.push_back(actor.busy_seconds);
    if (actor.kind == "sink") CHECK(actor.firings == 5);
  }
  REQUIRE(probe_busy.size() == 2);
  std::sort(probe_busy.begin(), probe_busy.end());
  CHECK(probe_busy[0] >= 5 * 1000e-6);
  CHECK(probe_busy[1] >= 5 * 2001e-6);
  CHECK(p.BusySeconds() >= probe_busy[0] + probe_busy[1]);
  CHECK(p.call_seconds >= p.BusySeconds() - 1e-9 - 2 * 3000e-6);  // the two async calls may overlap a little
  CHECK(profile.wall_seconds >= p.BusySeconds());

  const std::string table = profile.Format();
  CHECK(table.find("job 'profiled': 5 call(s)") != std::string::npos);
  CHECK(table.find("probe") != std::string::npos);

  // Calls after StopProfiling are not counted; a new StartProfiling starts from zero, and a job
  // compiled while profiling is on is profiled too.
  session.Call(job, {Filled(Shape{4}, 1.f)});
  session.StartProfiling();
  JobBuilder builder("late");
  builder.Output("y", ScalarMul(builder.Placeholder("x", Shape{4}), 3.0));
  const Job late = builder.Build();
  session.Call(late, {Filled(Shape{4}, 1.f)});
  const Profile second = session.StopProfiling();
  REQUIRE(second.jobs.size() == 1);
  CHECK(second.jobs[0].job == "late");
  CHECK(second.jobs[0].calls == 1);
  CHECK(second.Format(1).find("more actors") != std::string::npos);
}

TEST_CASE("a job that does not build or compile fails alone, naming the job and the op; the session stays usable") {
  Session session;
  JobBuilder good_builder("good");
  good_builder.Output("y", ScalarMul(good_builder.Placeholder("x", Shape{4}), 2.0));
  const Job good = good_builder.Build();
  CHECK(session.Call(good, {Filled(Shape{4}, 1.f)})["y"].ToVector<float>() == std::vector<float>(4, 2.f));

  // A shape error while building is thrown by the op call that makes it.
  JobBuilder bad_builder("bad");
  Blob a = bad_builder.Placeholder("a", Shape{4, 3});
  Blob b = bad_builder.Placeholder("b", Shape{5, 3});
  CHECK_THROWS_WITH_AS(MatMul(a, b), "[matmul] inner dims differ: (4,3) vs (5,3)",
                       std::invalid_argument);

  // A job the planner refuses (a placement beyond the session's one device) names the job, keeps nothing.
  JobBuilder far_builder("far");
  Blob x = far_builder.Placeholder("x", Shape{4});
  {
    ScopedPlacement place(far_builder, Placement("cpu", {"0:3"}));
    far_builder.Output("y", ScalarMul(x, 2.0));
  }
  const Job far = far_builder.Build();
  CHECK_THROWS_WITH_AS(session.Compile(far), doctest::Contains("[session] job 'far' does not compile: "),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(session.Call(far, {Filled(Shape{4}, 1.f)}), doctest::Contains("job 'far' does not compile"),
                       std::invalid_argument);

  // Every other job, and the session's variable calls, keep working.
  CHECK(session.Call(good, {Filled(Shape{4}, 3.f)})["y"].ToVector<float>() == std::vector<float>(4, 6.f));
  CHECK(session.GetVariables().empty());
  session.Sync();
}

TEST_CASE("a trace records every firing and call between StartTrace and StopTrace as Chrome trace JSON") {
  Session session;
  const Job job = ProbeJob("traced", {});
  session.Call(job, {Filled(Shape{4}, 1.f)});  // before the trace
  CHECK_THROWS_WITH_AS(session.StopTrace("unused.json"),
                       "[session] StopTrace: no trace is being recorded (call StartTrace first)", std::logic_error);
  session.StartTrace();
  CHECK_THROWS_WITH_AS(session.StartTrace(),
                       "[session] StartTrace: a trace is already being recorded (call StopTrace first)", std::logic_error);
  session.Call(job, {Filled(Shape{4}, 1.f)});
  session.CallAsync(job, {Filled(Shape{4}, 2.f)}, [](CallResult result) { result.ThrowIfError(); });
  const std::string path = (std::filesystem::temp_directory_path() / "weir_test_trace.json").string();
  session.StopTrace(path);  // waits for the async call
  session.Call(job, {Filled(Shape{4}, 1.f)});  // after it

  const std::string text = testing::ReadTextFile(path);
  std::filesystem::remove(path);
  auto count = [&](std::string_view needle) { return testing::Occurrences(text, needle); };
  CHECK(text.starts_with("{\"displayTimeUnit\":\"ms\",\"traceEvents\":["));
  CHECK(count(R"("args":{"name":"calls"})") == 1);
  CHECK(count(R"("args":{"name":"cpu:0"})") == 1);
  CHECK(count(R"("args":{"name":"traced cpu:0/compute0"})") == 1);
  CHECK(count(R"({"ph":"b","cat":"call","name":"traced")") == 2);  // the two calls inside
  CHECK(count(R"({"ph":"e","cat":"call","name":"traced")") == 2);
  CHECK(count(R"("cat":"test_probe","name":"test_probe_0")") == 2);  // each op fired once per call
  CHECK(count(R"("cat":"scalar")") == 4);  // x * 2 and + 1, once per call
  CHECK(count(R"("call":0,)") == 0);  // the call before the trace is not in it

  CHECK_THROWS_WITH_AS(
      [&] {
        session.StartTrace();
        session.StopTrace("/nonexistent-dir/trace.json");
      }(),
      doctest::Contains("[session] StopTrace: cannot write '/nonexistent-dir/trace.json'"), std::runtime_error);
  session.StartTrace();  // the failed write ended that trace
  session.StopTrace(path);
  std::filesystem::remove(path);
}

TEST_CASE("SupportedOps lists each device's kernels and their dtypes") {
  const auto cpu = SupportedOps("cpu");
  REQUIRE(cpu.count("matmul") == 1);
  CHECK(cpu.at("matmul") == std::vector<DType>{DType::kF32, DType::kF64, DType::kBF16});
  for (const auto& [op, dtypes] : SupportedOps("gpu")) {
    CAPTURE(op);
    CHECK(cpu.count(op) == 1);  // every CUDA kernel has a CPU kernel, its conformance reference
  }
  CHECK_THROWS_WITH_AS(SupportedOps("tpu"), "[SupportedOps] device: expected \"cpu\" or \"gpu\", got \"tpu\"",
                       std::invalid_argument);
}
