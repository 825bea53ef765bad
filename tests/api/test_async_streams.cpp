// Kernels on asynchronous device streams (SessionOptions::async_cpu_streams): the path GPU kernels
// take, each act submitted to its device's stream and its messages sent once the poller sees the
// event behind it. Training on 1 and 2 devices (consistent, mirrored, and a pipeline of two stages)
// ends as on the synchronous path; async calls keep their order; a failing kernel fails its call only;
// a session with calls in flight shuts down.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <thread>
#include <tuple>
#include <vector>

#include "api/test_ops_for_tests.hpp"
#include "api/text_file_util.hpp"
#include "api/train_test_util.hpp"
#include "kernels/kernel.hpp"
#include "weir/weir.hpp"

using namespace weir;
using namespace weir::testing;

namespace {

constexpr std::int64_t kBatch = 12;

struct Run {
  std::map<std::string, Tensor> variables;
  std::vector<float> losses;
  std::string plan;  // the job's plan (Graphviz)
};

// Steps of the model on `devices` devices, the batch split per device in the mirrored view: sync
// calls, or with `in_flight` all admitted before the first completes (async calls, losses in call order).
Run Train(bool async, Model model, int devices, LogicalView view, bool stream_graphs = true,
          const Optimizer& optimizer = Adam(PiecewiseConstantScheduler({}, {0.01})), int in_flight = 0) {
  SessionOptions options;
  options.async_cpu_streams = async;
  options.stream_graphs = stream_graphs;
  options.cpu_devices = devices;
  Session session(options);
  const bool mirrored = view == LogicalView::kMirrored;
  const std::int64_t per = mirrored ? kBatch / devices : kBatch;
  const Job job = TrainJob("train", model, per, view, optimizer);
  Run run;
  const int steps = in_flight > 0 ? in_flight : 4;
  for (int step = 0; step < steps; ++step) {
    const Tensor images = RandomImages(ImageShape(model, kBatch), 10 + static_cast<std::uint32_t>(step));
    const Tensor labels = RandomLabels(kBatch, 20 + static_cast<std::uint32_t>(step));
    std::vector<Tensor> inputs;
    if (mirrored) {
      for (int d = 0; d < devices; ++d) inputs.push_back(Rows(images, d * per, (d + 1) * per));
      for (int d = 0; d < devices; ++d) inputs.push_back(Rows(labels, d * per, (d + 1) * per));
    } else {
      inputs = {images, labels};
    }
    if (in_flight > 0) {
      session.CallAsync(job, inputs, [&run](CallResult result) {
        result.ThrowIfError();
        const std::vector<float> loss = result.outputs["loss"].ToVector<float>();
        run.losses.insert(run.losses.end(), loss.begin(), loss.end());  // callbacks run in call order
      });
      continue;
    }
    const std::vector<float> loss = session.Call(job, inputs)["loss"].ToVector<float>();
    run.losses.insert(run.losses.end(), loss.begin(), loss.end());
  }
  session.Sync();
  run.variables = session.GetVariables();
  run.plan = session.PlanDot(job);
  return run;
}

}  // namespace

TEST_CASE("training with kernels on asynchronous device streams ends as on the synchronous path") {
  struct Case {
    Model model;
    int devices;
    LogicalView view;
  };
  for (const Case& c : {Case{Model::kMlp, 1, LogicalView::kConsistent}, Case{Model::kConv, 1, LogicalView::kConsistent},
                        Case{Model::kMlp, 2, LogicalView::kConsistent}, Case{Model::kMlp, 2, LogicalView::kMirrored},
                        Case{Model::kConv, 2, LogicalView::kMirrored}}) {
    CAPTURE(c.model == Model::kMlp);
    CAPTURE(c.devices);
    CAPTURE(c.view == LogicalView::kMirrored);
    const Run sync = Train(false, c.model, c.devices, c.view);
    const Run async = Train(true, c.model, c.devices, c.view);
    CheckSameVariables(sync.variables, async.variables);
    REQUIRE(sync.losses.size() == async.losses.size());
    for (std::size_t i = 0; i < sync.losses.size(); ++i) CHECK(async.losses[i] == doctest::Approx(sync.losses[i]).epsilon(1e-5));
  }
}

TEST_CASE("training calls in flight together on device streams end as sync calls on the synchronous path") {
  // A variable read only on its device's stream goes back to its actor when an act is submitted, so
  // the next call's act queues behind this one on the stream: the calls overlap there.
  struct Case {
    Model model;
    int devices;
    LogicalView view;
  };
  for (const Case& c : {Case{Model::kMlp, 1, LogicalView::kConsistent}, Case{Model::kConv, 1, LogicalView::kConsistent},
                        Case{Model::kMlp, 2, LogicalView::kMirrored}}) {
    for (const bool graphs : {true, false}) {
      CAPTURE(c.model == Model::kMlp);
      CAPTURE(c.devices);
      CAPTURE(graphs);
      const Optimizer sgd = Sgd(PiecewiseConstantScheduler({}, {0.1}));
      const Run sync = Train(false, c.model, c.devices, c.view, false, sgd, 0);
      const Run async = Train(true, c.model, c.devices, c.view, graphs, sgd, 4);
      CheckSameVariables(sync.variables, async.variables);
      REQUIRE(sync.losses.size() == async.losses.size());
      for (std::size_t i = 0; i < sync.losses.size(); ++i) CHECK(async.losses[i] == doctest::Approx(sync.losses[i]).epsilon(1e-5));
    }
  }
}

TEST_CASE("a device stream's kernels run as one graph actor, where that makes no cycle, and train alike") {
  struct Case {
    Model model;
    int devices;
    LogicalView view;
    int graphs;  // stream_graph actors expected
  };
  // One device: the kernels before the commit (which waits for the stream, so that a failed call writes
  // nothing) in one graph, the updates after it in another. Two mirrored devices: each updates its rows
  // of the variables from both devices' gradients; device 0's kernels feed device 1's (a constant of the
  // loss's gradient), which feed device 0's updates, so device 0's stream splits where device 1's
  // results come back as well: three graphs there, two on device 1.
  for (const Case& c : {Case{Model::kMlp, 1, LogicalView::kConsistent, 2}, Case{Model::kConv, 1, LogicalView::kConsistent, 2},
                        Case{Model::kMlp, 2, LogicalView::kMirrored, 5}}) {
    CAPTURE(c.model == Model::kMlp);
    CAPTURE(c.devices);
    const Run fused = Train(true, c.model, c.devices, c.view);
    const Run separate = Train(true, c.model, c.devices, c.view, /*stream_graphs=*/false);
    std::size_t graphs = 0;
    for (std::size_t at = fused.plan.find("\\nstream_graph\\n"); at != std::string::npos;
         at = fused.plan.find("\\nstream_graph\\n", at + 1)) {
      ++graphs;
    }
    CHECK(graphs == static_cast<std::size_t>(c.graphs));
    CHECK(separate.plan.find("stream_graph") == std::string::npos);
    CheckSameVariables(separate.variables, fused.variables);
    REQUIRE(separate.losses.size() == fused.losses.size());
    for (std::size_t i = 0; i < fused.losses.size(); ++i) CHECK(fused.losses[i] == doctest::Approx(separate.losses[i]).epsilon(1e-6));
  }
  // The synchronous path keeps an actor per kernel.
  CHECK(Train(false, Model::kMlp, 1, LogicalView::kConsistent).plan.find("stream_graph") == std::string::npos);
}

TEST_CASE("on one device stream one multi-tensor kernel makes a job's updates, as the per-variable kernels do") {
  const LrSchedule lr = PiecewiseConstantScheduler({}, {0.01});
  struct Case {
    const char* name;
    Optimizer optimizer;
  };
  // Plain SGD fuses the weights' updates into their gradients' matmuls: the biases' make the group.
  for (const Case& c : {Case{"sgd", Sgd(lr, 0.0)}, Case{"momentum", Sgd(lr, 0.9)},
                        Case{"adam", Adam(lr, 0.9, 0.99, 1e-8, true)}, Case{"adamw", AdamW(lr, 0.01)},
                        Case{"rmsprop centered", RmsProp(lr, 0.9, 1e-6, true)}}) {
    for (const Model model : {Model::kMlp, Model::kConv}) {
      CAPTURE(c.name);
      CAPTURE(model == Model::kMlp);
      const Run sync = Train(false, model, 1, LogicalView::kConsistent, true, c.optimizer);
      const Run async = Train(true, model, 1, LogicalView::kConsistent, /*stream_graphs=*/false, c.optimizer);
      const auto count = [&](const std::string& plan, const std::string& op) {
        std::size_t n = 0;
        for (std::size_t at = plan.find("\\n" + op + "\\n"); at != std::string::npos; at = plan.find("\\n" + op + "\\n", at + 1)) ++n;
        return n;
      };
      CHECK(count(async.plan, "multi_update") == 1);
      CHECK(count(sync.plan, "multi_update") == 0);  // actors of their own on the synchronous path
      std::size_t left = 0;
      for (const char* op : {"sgd_update", "momentum_update", "adam_update", "rmsprop_update"}) left += count(async.plan, op);
      CHECK(left == 0);
      CheckSameVariables(sync.variables, async.variables);
      REQUIRE(sync.losses.size() == async.losses.size());
      for (std::size_t i = 0; i < sync.losses.size(); ++i) CHECK(async.losses[i] == doctest::Approx(sync.losses[i]).epsilon(1e-6));
    }
  }
}

TEST_CASE("async calls through device streams pipeline and call back in call order with the right values") {
  JobBuilder builder("affine");
  Blob x = builder.Placeholder("x", Shape{64, 32});
  Blob y = ScalarAdd(ScalarMul(Relu(x), 3.0), 1.0);
  builder.Output("y", ReduceSum(y, {.axes = {1}}));
  const Job job = builder.Build();
  SessionOptions options;
  options.async_cpu_streams = true;
  options.cpu_compute_streams = 2;
  Session session(options);
  constexpr int kCalls = 2000;
  std::vector<int> order;
  std::atomic<int> wrong{0};
  for (int i = 0; i < kCalls; ++i) {
    Tensor input(Shape{64, 32}, DType::kF32);
    for (std::int64_t k = 0; k < input.NumElements(); ++k) input.Data<float>()[k] = static_cast<float>(i % 7) - 2.0f;
    session.CallAsync(job, {input}, [&, i](CallResult result) {
      result.ThrowIfError();
      const float v = static_cast<float>(i % 7) - 2.0f;
      const float expected = 32 * ((v > 0 ? v : 0) * 3 + 1);
      for (float got : result.outputs[0].ToVector<float>()) {
        if (got != expected) ++wrong;
      }
      order.push_back(i);
    });
  }
  session.Sync();
  REQUIRE(order.size() == kCalls);
  for (int i = 0; i < kCalls; ++i) REQUIRE(order[static_cast<std::size_t>(i)] == i);
  CHECK(wrong == 0);
}

TEST_CASE("a kernel failing on a device stream fails its call only; the session stays usable") {
  JobBuilder builder("loss");
  Blob labels = builder.Placeholder("labels", Shape{2}, DType::kI32);
  Blob logits = builder.Placeholder("logits", Shape{2, 3});
  builder.Output("loss", ReduceMean(SparseSoftmaxCrossEntropy(labels, logits)));
  const Job job = builder.Build();
  SessionOptions options;
  options.async_cpu_streams = true;
  Session session(options);
  const Tensor logits_value = Tensor::FromVector<float>({2, 3}, {0, 0, 0, 1, 2, 3});
  const Tensor good = Tensor::FromVector<std::int32_t>({2}, {0, 2});
  const Tensor bad = Tensor::FromVector<std::int32_t>({2}, {0, 3});
  const float expected = static_cast<float>((std::log(3.0) + std::log(std::exp(-2.0) + std::exp(-1.0) + 1.0)) / 2);
  CHECK_THROWS_WITH_AS(session.Call(job, {bad, logits_value}),
                       "[sparse_softmax_cross_entropy] label 3 at row 1 is outside [0, 3)", internal::KernelError);
  std::vector<bool> ok;
  for (const Tensor& labels_value : {good, bad, good, bad, good}) {
    session.CallAsync(job, {labels_value, logits_value}, [&](CallResult result) { ok.push_back(result.Ok()); });
  }
  session.Sync();
  CHECK(ok == std::vector<bool>{true, false, true, false, true});
  CHECK(session.Call(job, {good, logits_value})[0].Data<float>()[0] == doctest::Approx(expected));
}

TEST_CASE("a train call failing on device streams leaves every variable, the train step included, as it was") {
  // Regression: updates on a device stream were submitted before the stream had run the kernel that
  // failed, so a failed call applied them (and moved the train step); now they wait for the commit.
  for (const bool graphs : {true, false}) {
    CAPTURE(graphs);
    CheckFailedTrainCallsWriteNothing({.async_cpu_streams = true, .stream_graphs = graphs});
  }
}

TEST_CASE("two pipeline stages on device streams compute what the synchronous path computes") {
  auto job = [] {
    JobBuilder builder("stages", JobType::kPredict);
    Blob x = builder.Placeholder("x", Shape{16, 8});
    Blob h;
    {
      ScopedPlacement stage(builder, Placement("cpu", {"0:0"}));
      h = Relu(MatMul(x, builder.Constant(Tensor::FromVector<float>({8, 8}, std::vector<float>(64, 0.25f)), "w")));
    }
    ScopedPlacement stage(builder, Placement("cpu", {"0:1"}));
    builder.Output("y", ReduceSum(ScalarMul(h, -2.0), {.axes = {1}}));
    return builder.Build();
  };
  std::vector<std::vector<float>> results[2];
  for (const bool async : {false, true}) {
    SessionOptions options;
    options.cpu_devices = 2;
    options.async_cpu_streams = async;
    Session session(options);
    const Job stages = job();
    // x is read whole on device 0 only: no input actor for its per-device pieces, which nobody reads
    // (one would act for calls already completed: a use-after-free that ThreadSanitizer caught).
    const std::string plan = session.PlanDot(stages);
    CHECK(plan.find("label=\"x@0\\ninput") != std::string::npos);
    CHECK(plan.find("label=\"x:") == std::string::npos);
    for (int i = 0; i < 50; ++i) {
      session.CallAsync(stages, {RandomImages(Shape{16, 8}, static_cast<std::uint32_t>(i))}, [&, async](CallResult result) {
        result.ThrowIfError();
        results[async].push_back(result.outputs[0].ToVector<float>());
      });
    }
    session.Sync();
  }
  CHECK(results[0] == results[1]);
}

TEST_CASE("destroying a session with calls in flight on device streams completes them") {
  testing::RegisterProbeOp();
  std::atomic<int> called{0};
  {
    JobBuilder builder("slow");
    Blob x = builder.Placeholder("x", Shape{4});
    builder.Output("y", Probe(Probe(x, {.spin_scale_us = 1.0}), {.spin_scale_us = 1.0}));
    const Job job = builder.Build();
    SessionOptions options;
    options.async_cpu_streams = true;
    Session session(options);
    Tensor input(Shape{4}, DType::kF32);
    for (std::int64_t k = 0; k < 4; ++k) input.Data<float>()[k] = 200.0f;  // 200 us per probe
    for (int i = 0; i < 100; ++i) session.CallAsync(job, {input}, [&](CallResult result) { called += result.Ok() ? 1 : 0; });
  }
  CHECK(called == 100);
  CHECK(ProbeThreadName() == "weir-stream");  // the kernels ran on the device stream's thread
  JobBuilder builder("probe");
  builder.Output("y", Probe(builder.Placeholder("x", Shape{4}), {}));
  Session sync;
  sync.Call(builder.Build(), {Tensor(Shape{4}, DType::kF32)});
  CHECK(ProbeThreadName() != "weir-stream");  // and on the actor's thread without device streams
}

TEST_CASE("dropout draws the synchronous path's fresh mask each call, in a stream graph and actor by actor") {
  auto job = [] {
    JobBuilder builder("dropout_train", JobType::kTrain);
    const Blob x = builder.Placeholder("x", Shape{16, kFeatures});
    const Blob labels = builder.Placeholder("labels", Shape{16}, DType::kI32);
    const Blob logits = Dense(Dropout(x, {.rate = 0.5, .seed = 7}), kClasses,
                              {.kernel_initializer = TruncatedNormalInitializer(0, 0.3), .name = "dense"});
    const Blob loss = SparseSoftmaxCrossEntropy(labels, logits, "loss");
    builder.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.1})), loss);
    builder.Output("loss", loss);
    return builder.Build();
  };
  Session sync;
  Session graphs({.async_cpu_streams = true});
  Session actors({.async_cpu_streams = true, .stream_graphs = false});
  const Job a = job(), b = job(), c = job();
  std::vector<float> previous;
  for (int call = 0; call < 4; ++call) {
    const std::vector<Tensor> inputs = {RandomImages(Shape{16, kFeatures}, 5), RandomLabels(16, 6)};  // the same each call
    const std::vector<float> expected = sync.Call(a, inputs)["loss"].ToVector<float>();
    CHECK(graphs.Call(b, inputs)["loss"].ToVector<float>() == expected);
    CHECK(actors.Call(c, inputs)["loss"].ToVector<float>() == expected);
    CHECK(expected != previous);  // a new mask (and new weights) each call
    previous = expected;
  }
}

TEST_CASE("a trace shows each device act's submission, its work on the device and its completion, in that order") {
  // The gaps between the three are the hand-offs' latency: executor to stream, stream to poller,
  // poller back to the executor.
  for (const bool graphs : {true, false}) {
    CAPTURE(graphs);
    Session session({.async_cpu_streams = true, .stream_graphs = graphs});
    const Job job = TrainJob("train", Model::kMlp, kBatch, LogicalView::kConsistent, Sgd(PiecewiseConstantScheduler({}, {0.1})));
    const std::vector<Tensor> inputs{RandomImages(ImageShape(Model::kMlp, kBatch), 1), RandomLabels(kBatch, 2)};
    session.Call(job, inputs);
    session.StartTrace();
    constexpr int kCalls = 3;
    for (int call = 0; call < kCalls; ++call) session.Call(job, inputs);
    const std::string path = (std::filesystem::temp_directory_path() / "weir_test_device_trace.json").string();
    session.StopTrace(path);
    std::istringstream trace(ReadTextFile(path));
    std::filesystem::remove(path);

    // (actor, call) -> the start and end (us) of each phase: 0 the submission, 1 the device, 2 the completion.
    std::map<std::pair<std::string, int>, std::map<int, std::pair<double, double>>> acts;
    const std::regex slice(R"re("ph":"X","cat":"([^"]*)","name":"([^"]*)",.*"ts":([0-9.]+),"dur":([0-9.]+),"args":\{"call":(-?[0-9]+))re");
    std::smatch m;
    int device_slices = 0;
    for (std::string line; std::getline(trace, line);) {
      if (!std::regex_search(line, m, slice)) continue;
      std::string name = m[2];
      const bool done = name.ends_with(" (done)");
      if (done) name.resize(name.size() - std::string_view(" (done)").size());
      const int phase = m[1] == "device" ? 1 : done ? 2 : 0;
      device_slices += phase == 1;
      const double start = std::stod(m[3]);
      acts[{name, std::stoi(m[5])}][phase] = {start, start + std::stod(m[4])};
    }
    CHECK(device_slices >= kCalls);
    int device_acts = 0;
    for (const auto& [act, phases] : acts) {
      if (!phases.contains(1)) continue;
      CAPTURE(act.first);
      ++device_acts;
      REQUIRE(phases.size() == 3);
      CHECK(act.second >= 0);  // a call's act
      // The slices are written with ns resolution in us: allow the rounding.
      CHECK(phases.at(1).first >= phases.at(0).second - 1e-3);
      CHECK(phases.at(2).first >= phases.at(1).second - 1e-3);
    }
    CHECK(device_acts == device_slices);
  }
}

TEST_CASE("lent executors and actor threads alike: a stalled device stream is described at once, calls end in order") {
  // On device streams every executor of a one-device job is lent to the threads that hand it work
  // (SessionOptions::lend_executors): the caller launches, the poller passes results on. Both ways must
  // describe a stall (no executor is inside a kernel: the kernel runs on the stream's thread) and end
  // the calls in call order once the kernel returns.
  testing::RegisterBlockOp();
  for (const bool lend : {true, false}) {
    CAPTURE(lend);
    testing::BlockReset();
    SessionOptions options;
    options.async_cpu_streams = true;
    options.lend_executors = lend;
    Session session(options);
    JobBuilder builder("stalled");
    builder.Output("y", testing::Block(ScalarMul(builder.Placeholder("x", Shape{2}), 2.0, "double")));
    const Job job = builder.Build();
    std::vector<float> seen;
    for (int call = 0; call < 4; ++call) {
      session.CallAsync(job, {Tensor::FromVector<float>(Shape{2}, {1, static_cast<float>(call)})},
                        [&](CallResult result) { seen.push_back(result.outputs["y"].ToVector<float>().at(1)); });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const auto asked = std::chrono::steady_clock::now();
    const std::string state = session.DescribeState();
    INFO(state);
    CHECK(std::chrono::steady_clock::now() - asked < std::chrono::milliseconds(900));  // every executor answered
    CHECK(state.find("job 'stalled': 4 call(s) in flight") != std::string::npos);
    CHECK(state.find("did not answer") == std::string::npos);
    testing::BlockRelease();
    session.Sync();
    CHECK(seen == std::vector<float>{0, 2, 4, 6});
  }
  testing::BlockReset();
}
