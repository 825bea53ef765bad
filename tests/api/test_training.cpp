// Train jobs end to end: variables owned by the session, the backward pass and optimizer updates
// inside each call, OneFlow's loss semantics, train/predict jobs sharing variables, checkpoints.
#include <doctest/doctest.h>

#include <any>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <future>
#include <memory>

#include "graph/job_graph.hpp"
#include "graph/planner.hpp"
#include "weir/optimizers.hpp"
#include "weir/weir.hpp"

using namespace weir;

namespace {

Tensor Full(Shape shape, float value) {
  Tensor t(std::move(shape), DType::kF32);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) t.Data<float>()[i] = value;
  return t;
}

// loss = var + x over a (2,5) variable, as OneFlow's test_get_variable.py.
Job AddTrainJob(const std::string& name, const Optimizer& optimizer, Initializer init = ZerosInitializer()) {
  JobBuilder builder(name, JobType::kTrain);
  Blob x = builder.Placeholder("x", Shape{2, 5});
  Blob var = builder.Variable("var", {.shape = Shape{2, 5}, .initializer = init});
  Blob loss = Add(var, x);
  builder.Minimize(optimizer, loss);
  builder.Output("var", var);
  builder.Output("loss", loss);
  return builder.Build();
}

Job ReadVarJob(const std::string& name) {
  JobBuilder builder(name);
  Blob var = builder.Variable("var", {.shape = Shape{2, 5}});
  builder.Output("var", ScalarMul(var, 1.0));
  return builder.Build();
}

// An async call waited on for at most 10 s, so that a plan that deadlocks fails the test instead of hanging it.
Outputs CallWithin(Session& session, const Job& job, std::vector<Tensor> inputs) {
  auto promise = std::make_shared<std::promise<CallResult>>();
  std::future<CallResult> future = promise->get_future();
  session.CallAsync(job, std::move(inputs), [promise](CallResult result) { promise->set_value(std::move(result)); });
  REQUIRE(future.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CallResult result = future.get();
  result.ThrowIfError();
  return result.outputs;
}

int CountKernels(const Job& job, std::string_view op_type) {
  const auto plan = internal::CompilePlan(job.Graph(), {});
  int count = 0;
  for (const internal::TaskDesc& task : plan->tasks) {
    if (task.kind == internal::TaskKind::kKernel && task.op_type == op_type) ++count;
  }
  return count;
}

std::filesystem::path TempDir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("weir_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

}  // namespace

TEST_CASE("SGD on loss = var + x moves every element by exactly lr / 10 per step, returning the old value") {
  const Job job = AddTrainJob("sgd", Sgd(PiecewiseConstantScheduler({}, {0.1}), /*momentum=*/0.0));
  Session session;
  for (int step = 0; step < 5; ++step) {
    const Outputs out = session.Call(job, {Full({2, 5}, 3.f)});
    // The returned variable is its value from before this step's update.
    for (float v : out["var"].ToVector<float>()) CHECK(v == doctest::Approx(-0.01 * step).epsilon(1e-6));
    for (float v : out["loss"].ToVector<float>()) CHECK(v == doctest::Approx(3 - 0.01 * step).epsilon(1e-6));
  }
  for (float v : session.GetVariable("var").ToVector<float>()) CHECK(v == doctest::Approx(-0.05).epsilon(1e-6));
  CHECK(session.GetVariable("System-Train-TrainStep-sgd").ToVector<std::int64_t>() == std::vector<std::int64_t>{5});
}

TEST_CASE("plain SGD on a matmul of two variables completes (each operand's update reads the other)") {
  // Regression: each weight gradient's matmul was fused with its update while reading the other variable,
  // which the other update writes: each fused kernel waited for the other, and the first call hung.
  JobBuilder builder("two_variables", JobType::kTrain);
  Blob x = builder.Variable("x", {.shape = Shape{4, 5}, .initializer = RandomNormalInitializer(0, 1, 1)});
  Blob w = builder.Variable("w", {.shape = Shape{5, 6}, .initializer = RandomNormalInitializer(0, 1, 2)});
  Blob y = MatMul(x, w);
  builder.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.01}), /*momentum=*/0.0), y);
  builder.Output("y", y);
  const Job job = builder.Build();
  Session session;
  session.Compile(job);
  const Tensor x0 = session.GetVariable("x");
  const Tensor w0 = session.GetVariable("w");
  CallWithin(session, job, {});
  // d(sum y)/dx = 1 wᵀ (each row the sum of w's rows), d/dw = xᵀ 1; /24 elements of y.
  const Tensor x1 = session.GetVariable("x");
  for (int i = 0; i < 4; ++i) {
    for (int k = 0; k < 5; ++k) {
      double row_sum = 0;
      for (int j = 0; j < 6; ++j) row_sum += w0.Data<float>()[k * 6 + j];
      CHECK(x1.Data<float>()[i * 5 + k] == doctest::Approx(x0.Data<float>()[i * 5 + k] - 0.01 * row_sum / 24).epsilon(1e-5));
    }
  }
  CallWithin(session, job, {});
}

TEST_CASE("a train call that fails leaves every variable, the train step included, as it was") {
  JobBuilder builder("fails", JobType::kTrain);
  Blob images = builder.Placeholder("images", Shape{4, 3});
  Blob labels = builder.Placeholder("labels", Shape{4}, DType::kI32);
  Blob logits = Dense(images, 5, {.kernel_initializer = RandomNormalInitializer(0, 1, 3), .name = "fc"});
  Blob loss = SparseSoftmaxCrossEntropy(labels, logits);
  builder.Minimize(Adam(PiecewiseConstantScheduler({}, {0.1})), loss);
  builder.Output("loss", loss);
  const Job job = builder.Build();
  Session session;
  Tensor good(Shape{4}, DType::kI32);
  Tensor bad(Shape{4}, DType::kI32);
  for (int i = 0; i < 4; ++i) {
    good.Data<std::int32_t>()[i] = i;
    bad.Data<std::int32_t>()[i] = i == 2 ? 9 : i;  // out of range for 5 classes
  }
  session.Call(job, {Full({4, 3}, 1.f), good});
  const std::map<std::string, Tensor> before = session.GetVariables();
  for (int attempt = 0; attempt < 3; ++attempt) {
    CHECK_THROWS_WITH(session.Call(job, {Full({4, 3}, 1.f), bad}), doctest::Contains("label"));
  }
  const std::map<std::string, Tensor> after = session.GetVariables();
  REQUIRE(after.size() == before.size());
  for (const auto& [name, value] : before) {
    INFO(name);
    const Tensor& now = after.at(name);
    REQUIRE(now.NumBytes() == value.NumBytes());
    CHECK(std::memcmp(now.RawData(), value.RawData(), value.NumBytes()) == 0);
  }
  CHECK(session.GetVariable("System-Train-TrainStep-fails").ToVector<std::int64_t>() == std::vector<std::int64_t>{1});
  session.Call(job, {Full({4, 3}, 1.f), good});  // and the session trains on
  CHECK(session.GetVariable("System-Train-TrainStep-fails").ToVector<std::int64_t>() == std::vector<std::int64_t>{2});
}

TEST_CASE("SGD with momentum follows v = beta v - lr g, p += v") {
  const Job job = AddTrainJob("momentum", Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.9));
  Session session;
  double v = 0;
  double p = 0;
  for (int step = 0; step < 4; ++step) {
    session.Call(job, {Full({2, 5}, 1.f)});
    v = 0.9 * v - 0.1 * 0.1;
    p += v;
  }
  for (float value : session.GetVariable("var").ToVector<float>()) CHECK(value == doctest::Approx(p).epsilon(1e-6));
  for (float value : session.GetVariable("var-momentum").ToVector<float>()) {
    CHECK(value == doctest::Approx(v).epsilon(1e-6));
  }
}

TEST_CASE("the learning-rate schedule follows the train step; regularizers add to the gradient") {
  JobBuilder builder("schedule", JobType::kTrain);
  Blob x = builder.Placeholder("x", Shape{2, 5});
  Blob var = builder.Variable("reg", {.shape = Shape{2, 5}, .initializer = ConstantInitializer(1.0),
                                      .regularizer = L2(0.5)});
  builder.Minimize(Sgd(PiecewiseConstantScheduler({1}, {0.1, 0.01}), 0.0), Add(var, x));
  builder.Output("var", var);
  const Job job = builder.Build();
  Session session;
  double p = 1.0;
  for (int step = 0; step < 4; ++step) {
    session.Call(job, {Full({2, 5}, 0.f)});
    const double lr = step <= 1 ? 0.1 : 0.01;  // a step equal to a boundary belongs to the interval before
    p -= lr * (0.1 + 0.5 * p);
  }
  for (float value : session.GetVariable("reg").ToVector<float>()) CHECK(value == doctest::Approx(p).epsilon(1e-6));
}

TEST_CASE("a train job and a predict job share variables; their calls never overlap") {
  const Job train = AddTrainJob("shared_train", Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.0));
  const Job predict = ReadVarJob("shared_predict");
  Session session;
  std::vector<float> seen;
  for (int i = 0; i < 50; ++i) {
    session.CallAsync(train, {Full({2, 5}, 1.f)}, [](CallResult r) { r.ThrowIfError(); });
    session.CallAsync(predict, {}, [&](CallResult r) { seen.push_back(r.outputs[0].Data<float>()[0]); });
  }
  session.Sync();
  REQUIRE(seen.size() == 50);
  for (int i = 0; i < 50; ++i) CHECK(seen[static_cast<std::size_t>(i)] == doctest::Approx(-0.01 * (i + 1)).epsilon(1e-5));
}

TEST_CASE("a predict job that writes a variable in place and outputs it returns the value from before the write") {
  SessionOptions options;
  options.shutdown_timeout = std::chrono::milliseconds(500);  // a deadlocked call must not hang the test at exit
  Session session(options);

  // A call counter: each call returns how many calls came before it, sync or async, under two names.
  JobBuilder builder("count_calls");
  const Blob counter =
      builder.Variable("calls", {.shape = Shape{1}, .dtype = DType::kI64, .initializer = ZerosInitializer(), .trainable = false});
  internal::AddOp("increment", {counter}, std::any{}, "count");
  builder.Output("calls", counter);
  builder.Output("calls_again", counter);
  const Job job = builder.Build();
  CHECK(CountKernels(job, "identity") == 1);  // one copy serves both outputs

  std::vector<std::int64_t> seen;
  const Outputs first = CallWithin(session, job, {});
  seen.push_back(first["calls"].ToVector<std::int64_t>()[0]);
  CHECK(first["calls_again"].ToVector<std::int64_t>() == first["calls"].ToVector<std::int64_t>());
  for (int i = 1; i < 30; ++i) {
    if (i % 5 == 0) {
      const Outputs out = session.Call(job, std::vector<Tensor>{});
      seen.push_back(out["calls"].ToVector<std::int64_t>()[0]);
      CHECK(out["calls_again"].ToVector<std::int64_t>() == out["calls"].ToVector<std::int64_t>());
    } else {
      session.CallAsync(job, std::vector<Tensor>{}, [&seen](CallResult result) {
        result.ThrowIfError();
        seen.push_back(result.outputs["calls"].ToVector<std::int64_t>()[0]);
      });
    }
  }
  seen.push_back(CallWithin(session, job, {})["calls"].ToVector<std::int64_t>()[0]);  // after every callback above
  REQUIRE(seen.size() == 31);
  for (std::size_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == static_cast<std::int64_t>(i));
  CHECK(session.GetVariable("calls").ToVector<std::int64_t>() == std::vector<std::int64_t>{31});

  // Batch normalization forced to train in a predict job writes its moving mean in place: with a
  // channel mean of 4 and momentum 0.5 the moving mean goes 0, 2, 3, 3.5, ...; call k returns the kth.
  JobBuilder bn("bn_moving_mean_out");
  const Blob x = bn.Placeholder("x", Shape{4, 2});
  bn.Output("y", BatchNormalization(x, {.axis = 1, .momentum = 0.5, .training = true, .name = "bn"}));
  bn.Output("moving_mean", internal::AddVariable(x.Graph(), "bn-moving_mean",
                                                 {.shape = Shape{2}, .initializer = ZerosInitializer(), .trainable = false}));
  const Job bn_job = bn.Build();
  const Tensor input = Tensor::FromVector<float>({4, 2}, {3, -1, 5, 1, 3, -1, 5, 1});
  std::vector<float> moving;
  moving.push_back(CallWithin(session, bn_job, {input})["moving_mean"].ToVector<float>()[0]);
  for (int i = 1; i < 6; ++i) {
    if (i == 3) {
      moving.push_back(session.Call(bn_job, {input})["moving_mean"].ToVector<float>()[0]);
    } else {
      session.CallAsync(bn_job, {input}, [&moving](CallResult result) {
        result.ThrowIfError();
        moving.push_back(result.outputs["moving_mean"].ToVector<float>()[0]);
      });
    }
  }
  moving.push_back(CallWithin(session, bn_job, {input})["moving_mean"].ToVector<float>()[0]);
  REQUIRE(moving.size() == 7);
  for (std::size_t k = 0; k < moving.size(); ++k) {
    CHECK(moving[k] == doctest::Approx(4 * (1 - std::pow(0.5, static_cast<double>(k)))));
  }
  CHECK(session.GetVariable("bn-moving_mean").ToVector<float>()[0] == doctest::Approx(4 * (1 - std::pow(0.5, 7.0))));

  // A variable no op writes goes to the caller without a copy.
  JobBuilder read("read_counter");
  read.Output("calls", read.Variable("calls", {.shape = Shape{1}, .dtype = DType::kI64, .trainable = false}));
  const Job read_job = read.Build();
  CHECK(CountKernels(read_job, "identity") == 0);
  CHECK(CallWithin(session, read_job, {})["calls"].ToVector<std::int64_t>() == std::vector<std::int64_t>{31});
}

TEST_CASE("a train job returns and watches a variable as the step read it, before its update") {
  JobBuilder builder("watched_train", JobType::kTrain);
  const Blob x = builder.Placeholder("x", Shape{2, 5});
  const Blob var = builder.Variable("var", {.shape = Shape{2, 5}});
  std::vector<float> watched;
  Watch(var, [&watched](const Tensor& t) { watched.push_back(t.Data<float>()[0]); });
  builder.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.0), Add(var, x));
  builder.Output("var", var);
  const Job job = builder.Build();
  SessionOptions options;
  options.shutdown_timeout = std::chrono::milliseconds(500);
  Session session(options);
  std::vector<float> returned;
  for (int step = 0; step < 4; ++step) returned.push_back(CallWithin(session, job, {Full({2, 5}, 1.f)})["var"].Data<float>()[0]);
  REQUIRE(returned.size() == 4);
  REQUIRE(watched.size() == 4);
  for (std::size_t step = 0; step < 4; ++step) {
    CHECK(returned[step] == doctest::Approx(-0.01 * static_cast<double>(step)).epsilon(1e-6));
    CHECK(watched[step] == doctest::Approx(-0.01 * static_cast<double>(step)).epsilon(1e-6));
  }
}

TEST_CASE("job definition errors: optimizers only in train jobs, once; shared variables must agree") {
  JobBuilder no_optimizer("no_optimizer", JobType::kTrain);
  no_optimizer.Output("x", no_optimizer.Placeholder("x", Shape{1}));
  CHECK_THROWS_WITH_AS(no_optimizer.Build(),
                       "[build] job 'no_optimizer' is a train job but has no optimizer: call Minimize(optimizer, loss)",
                       std::invalid_argument);

  JobBuilder predict("predict_with_optimizer");
  Blob x = predict.Placeholder("x", Shape{1});
  CHECK_THROWS_WITH_AS(predict.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.1})), x),
                       "[minimize] job 'predict_with_optimizer' is a predict job; only train jobs may have an optimizer",
                       std::invalid_argument);

  JobBuilder twice("twice", JobType::kTrain);
  Blob v = twice.Variable("v", {.shape = Shape{1}});
  twice.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.1})), v);
  CHECK_THROWS_AS(twice.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.1})), v), std::invalid_argument);
  JobBuilder bad_momentum("bad_momentum", JobType::kTrain);
  CHECK_THROWS_WITH_AS(bad_momentum.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.1}), 1.5),
                                             bad_momentum.Variable("m", {.shape = Shape{1}})),
                       "[optimizer sgd] 'momentum' must be in [0, 1), got 1.5", std::invalid_argument);
  CHECK_THROWS_AS(twice.Variable("v", {.shape = Shape{2}}), std::invalid_argument);

  JobBuilder a("a");
  a.Output("v", ScalarMul(a.Variable("clash", {.shape = Shape{3}}), 1.0));
  JobBuilder b("b");
  b.Output("v", ScalarMul(b.Variable("clash", {.shape = Shape{4}}), 1.0));
  Session session;
  session.Compile(a.Build());
  CHECK_THROWS_WITH_AS(session.Compile(b.Build()),
                       "[variable] 'clash' is f32(3) in job 'a' but f32(4) in job 'b': variables are shared by name",
                       std::invalid_argument);
}

TEST_CASE("variables are initialised deterministically, can be read and assigned") {
  const Job job = ReadVarJob("init_read");
  Session first;
  Session second;
  JobBuilder builder("random");
  builder.Output("w", ScalarMul(builder.Variable("w", {.shape = Shape{100}, .initializer = RandomNormalInitializer()}), 1.0));
  const Job random = builder.Build();
  first.Compile(random);
  second.Compile(random);
  CHECK(first.GetVariable("w").ToVector<float>() == second.GetVariable("w").ToVector<float>());
  SessionOptions other_seed;
  other_seed.seed = 7;
  Session third(other_seed);
  third.Compile(random);
  CHECK(first.GetVariable("w").ToVector<float>() != third.GetVariable("w").ToVector<float>());

  first.Compile(job);
  first.SetVariables({{"var", Full({2, 5}, 4.f)}, {"unknown", Full({1}, 0.f)}});
  CHECK(first.Call(job, std::vector<Tensor>{})[0].ToVector<float>() == std::vector<float>(10, 4.f));
  CHECK_THROWS_AS(first.SetVariables({{"unknown", Full({1}, 0.f)}}, /*ignore_unknown=*/false), std::invalid_argument);
  CHECK_THROWS_AS(first.SetVariables({{"var", Full({5, 2}, 0.f)}}), std::invalid_argument);
  CHECK(first.GetVariable("var").ToVector<float>() == std::vector<float>(10, 4.f));  // nothing assigned
  CHECK_THROWS_AS(first.GetVariable("nope"), std::invalid_argument);
}

namespace {

// y = x + var's transpose through bf16: the casts and the transpose are pure ops of a variable the job
// never writes, so their results are kept across calls.
Job KeptTransposeJob(const std::string& name) {
  JobBuilder builder(name);
  Blob x = builder.Placeholder("x", Shape{5, 2});
  Blob var = builder.Variable("var", {.shape = Shape{2, 5}});
  Blob narrow = Cast(var, {.dtype = DType::kBF16}, "var_bf16");
  Blob transposed = Transpose(narrow, {.perm = {1, 0}}, "var_t");
  builder.Output("y", Add(Cast(transposed, {.dtype = DType::kF32}, "var_t_f32"), x));
  return builder.Build();
}

// Firings and kept firings of the actor `name` of job `job` in `profile`.
std::pair<std::int64_t, std::int64_t> FiringsOf(const Profile& profile, std::string_view job, std::string_view name) {
  for (const JobProfile& p : profile.jobs) {
    for (const ActorProfile& actor : p.actors) {
      if (p.job == job && actor.name == name) return {actor.firings, actor.kept};
    }
  }
  FAIL("no actor ", name, " in job ", job);
  return {0, 0};
}

}  // namespace

TEST_CASE("a predict job keeps a weight's cast and transpose across calls until a train call, an assignment or a load "
          "changes the weight") {
  const Job predict = KeptTransposeJob("kept_predict");
  const Job train = AddTrainJob("kept_train", Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.0));
  // The plan: the three ops of the variable alone are kept; the sum with the call's input is not. The
  // train job writes the variable, so nothing of its own is kept.
  const auto plan = internal::CompilePlan(predict.Graph(), {});
  std::int64_t slots = 0;  // of each kept register: each slot converts once after a change
  for (const internal::TaskDesc& task : plan->tasks) {
    if (task.kind != internal::TaskKind::kKernel) continue;
    INFO(task.name);
    CHECK(task.constant_over == (task.op_type == "add" ? std::vector<std::string>{} : std::vector<std::string>{"var"}));
    if (task.name == "var_bf16") slots = plan->registers[static_cast<std::size_t>(task.produced[0])].register_num;
  }
  REQUIRE(slots >= 1);
  CHECK(plan->ToDot().find("kept across calls") != std::string::npos);
  const auto train_plan = internal::CompilePlan(train.Graph(), {});
  for (const internal::TaskDesc& task : train_plan->tasks) CHECK(task.constant_over.empty());

  Session session;
  const Tensor ones = Full({5, 2}, 1.f);
  // y against the variable as the session holds it now; bf16 keeps 8 bits, so 2^-8 relative.
  const auto check_y = [&](const std::string& when) {
    const std::vector<float> var = session.GetVariable("var").ToVector<float>();
    const std::vector<float> y = session.Call(predict, {ones})[0].ToVector<float>();
    for (int i = 0; i < 5; ++i) {
      for (int j = 0; j < 2; ++j) {
        INFO(when, ": y[", i, ", ", j, "]");
        const float expected = 1.f + var[static_cast<std::size_t>(j * 5 + i)];
        CHECK(y[static_cast<std::size_t>(i * 2 + j)] == doctest::Approx(expected).epsilon(1.0 / 256));
      }
    }
  };
  session.Compile(predict);
  session.SetVariables({{"var", Full({2, 5}, 0.5f)}});
  session.StartProfiling();
  for (int i = 0; i < 3; ++i) check_y("before training");
  // Pipelined calls rotate through the registers' slots: each slot is filled once, then kept.
  for (int i = 0; i < 20; ++i) session.CallAsync(predict, {ones}, [](CallResult result) { result.ThrowIfError(); });
  session.Sync();
  Profile profile = session.StopProfiling();
  for (const char* name : {"var_bf16", "var_t", "var_t_f32"}) {
    const auto [firings, kept] = FiringsOf(profile, "kept_predict", name);
    INFO(name);
    CHECK(firings == 23);
    CHECK(kept == 23 - slots);
  }

  const auto kept_after = [&](const auto& change, const std::string& what) {
    change();
    session.StartProfiling();
    for (int i = 0; i < 4; ++i) check_y(what);
    const auto [firings, kept] = FiringsOf(session.StopProfiling(), "kept_predict", "var_bf16");
    INFO(what);
    CHECK(firings == 4);
    CHECK(kept == 4 - slots);  // the first call on each slot after the change converts again
  };
  kept_after([&] { session.Call(train, {Full({2, 5}, 1.f)}); }, "after a train call");
  CHECK(session.GetVariable("var").ToVector<float>()[0] == doctest::Approx(0.49f));
  kept_after([&] { session.SetVariables({{"var", Full({2, 5}, 4.f)}}); }, "after an assignment");
  const auto dir = TempDir("kept_results");
  session.SaveCheckpoint(dir.string());
  session.SetVariables({{"var", Full({2, 5}, 2.f)}});
  check_y("before the load");
  kept_after([&] { session.LoadCheckpoint(dir.string()); }, "after a checkpoint load");
  CHECK(session.GetVariable("var").ToVector<float>()[0] == 4.f);
  std::filesystem::remove_all(dir);
}

TEST_CASE("checkpoints round-trip through a session, and partial loads report what is missing") {
  const auto dir = TempDir("session_ckpt");
  const Job train = AddTrainJob("ckpt_train", Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.9));
  {
    Session session;
    for (int i = 0; i < 3; ++i) session.Call(train, {Full({2, 5}, 1.f)});
    session.SaveCheckpoint(dir.string());
    CHECK(std::filesystem::exists(dir / "snapshot_done"));
    CHECK(std::filesystem::exists(dir / "var" / "out"));
    CHECK(std::filesystem::exists(dir / "var-momentum" / "out"));
    CHECK(std::filesystem::exists(dir / "System-Train-TrainStep-ckpt_train" / "out"));
    CHECK_THROWS(session.SaveCheckpoint(dir.string()));  // refuses to overwrite
  }
  Session restored;
  restored.Compile(train);
  const LoadReport report = restored.LoadCheckpoint(dir.string());
  CHECK(report.missing.empty());
  CHECK(report.unexpected.empty());
  CHECK(restored.GetVariable("System-Train-TrainStep-ckpt_train").ToVector<std::int64_t>()[0] == 3);

  // A predict job alone wants only "var": the optimizer's variables are unexpected.
  Session eval;
  eval.Compile(ReadVarJob("ckpt_eval"));
  const LoadReport partial = eval.LoadCheckpoint(dir.string());
  CHECK(partial.missing.empty());
  CHECK(partial.unexpected == std::vector<std::string>{"System-Train-TrainStep-ckpt_train", "var-momentum"});
  CHECK(eval.GetVariable("var").ToVector<float>() == restored.GetVariable("var").ToVector<float>());

  // Selected variables only: save one, load one.
  const auto one = TempDir("session_ckpt_one");
  restored.SaveCheckpoint(one.string(), {}, {"var"});
  CHECK(std::filesystem::exists(one / "var" / "out"));
  CHECK_FALSE(std::filesystem::exists(one / "var-momentum"));
  Session fresh;
  fresh.Compile(train);
  const LoadReport some = fresh.LoadCheckpoint(dir.string(), {"var-momentum"});
  CHECK(some.unexpected.size() == 2);
  CHECK(fresh.GetVariable("var").ToVector<float>() == std::vector<float>(10, 0.f));  // not loaded
  CHECK(fresh.GetVariable("var-momentum").ToVector<float>() == restored.GetVariable("var-momentum").ToVector<float>());
  const LoadReport missing = fresh.LoadCheckpoint(one.string());
  CHECK(missing.missing == std::vector<std::string>{"System-Train-TrainStep-ckpt_train", "var-momentum"});
  CHECK_THROWS_AS(fresh.LoadCheckpoint(one.string(), {"nope"}), std::invalid_argument);
  std::filesystem::remove_all(one);
  std::filesystem::remove_all(dir);
}
