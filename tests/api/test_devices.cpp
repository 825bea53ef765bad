// Several CPU devices in one session: placement, the mirrored view (data parallelism with averaged
// gradients), pipeline stages on different devices, and the errors a bad placement or a wrong
// number of per-device inputs gives.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cmath>
#include <future>
#include <random>
#include <map>
#include <set>
#include <thread>

#include "api/test_ops_for_tests.hpp"
#include "api/text_file_util.hpp"
#include "api/train_test_util.hpp"
#include "graph/planner.hpp"
#include "weir/optimizers.hpp"
#include "weir/weir.hpp"

using namespace weir;
using namespace weir::testing;

namespace {

// Trains `steps` steps of the whole batch on one device, and the same batches split over `devices`
// mirrored devices; returns both sessions' variables.
std::pair<std::map<std::string, Tensor>, std::map<std::string, Tensor>> TrainBoth(Model model, int devices,
                                                                                 std::int64_t batch,
                                                                                 const Optimizer& optimizer, int steps) {
  Session one;
  Session many({.cpu_devices = devices});
  const Job whole = TrainJob("train", model, batch, LogicalView::kConsistent, optimizer);
  const Job mirrored = TrainJob("train", model, batch / devices, LogicalView::kMirrored, optimizer);
  for (int step = 0; step < steps; ++step) {
    const Tensor images = RandomImages(ImageShape(model, batch), 100 + static_cast<std::uint32_t>(step));
    const Tensor labels = RandomLabels(batch, 200 + static_cast<std::uint32_t>(step));
    const Outputs expected = one.Call(whole, {images, labels});
    std::vector<Tensor> inputs;
    const std::int64_t per = batch / devices;
    for (int d = 0; d < devices; ++d) inputs.push_back(Rows(images, d * per, (d + 1) * per));
    for (int d = 0; d < devices; ++d) inputs.push_back(Rows(labels, d * per, (d + 1) * per));
    const Outputs got = many.Call(mirrored, inputs);
    // Per-device losses, concatenated, are the whole batch's losses.
    REQUIRE(got.Pieces("loss").size() == static_cast<std::size_t>(devices));
    CHECK(got.Pieces("loss")[1].GetShape() == Shape{per});
    const std::vector<float> a = expected["loss"].ToVector<float>();
    const std::vector<float> b = got["loss"].ToVector<float>();
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(b[i] == doctest::Approx(a[i]).epsilon(1e-4));
  }
  return {one.GetVariables(), many.GetVariables()};
}

}  // namespace

TEST_CASE("placements parse OneFlow's machine:device ids and refuse malformed ones, naming them") {
  const Placement two("cpu", {"0:0-1"});
  CHECK(two.Devices() == std::vector<DeviceId>{{0, 0}, {0, 1}});
  CHECK(two.ToString() == R"(cpu "0:0-1")");
  CHECK(Placement("gpu", {"0:3", "1:0-2"}).Devices().size() == 4);
  CHECK_THROWS_WITH_AS(Placement("tpu", {"0:0"}), R"([placement] argument 'device_tag' must be "cpu" or "gpu", got "tpu")",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Placement("cpu", {"0:1-0"}),
                       R"([placement] machine_device_ids entries look like "0:0" or "0:0-3", got "0:1-0")",
                       std::invalid_argument);
  CHECK_THROWS_AS(Placement("cpu", {"0"}), std::invalid_argument);
  CHECK_THROWS_AS(Placement("cpu", {"a:0"}), std::invalid_argument);
  CHECK_THROWS_AS(Placement("cpu", {}), std::invalid_argument);
  CHECK_THROWS_WITH_AS(Placement("cpu", {"0:0-1", "0:1"}), "[placement] device 0:1 is named twice in 0:0-1, 0:1",
                       std::invalid_argument);
}

TEST_CASE("a session reports its devices; GPU requests become CPU devices without CUDA kernels") {
  Session session({.cpu_devices = 2});
  const Resource resource = session.GetResource();
  CHECK(resource.cpu_devices == 2);
  CHECK(resource.machines == 1);
  CHECK(resource.threads_per_device == std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / 2));
  CHECK(resource.scheduler_threads >= 2);
  Session gpus({.gpu_devices = 3});
  CHECK(gpus.GetResource().cpu_devices == 3);
  CHECK(gpus.GetResource().gpu_devices == 0);
  CHECK_THROWS_WITH_AS(Session({.cpu_devices = 0}), "[SessionOptions] cpu_devices must be at least 1, got 0",
                       std::invalid_argument);
}

TEST_CASE("mirrored MLP training on 2 and 3 devices ends with the variables of one device on the whole batch") {
  SUBCASE("SGD, 2 devices") {
    auto [one, many] = TrainBoth(Model::kMlp, 2, 12, Sgd(PiecewiseConstantScheduler({}, {0.5}), 0.0), 4);
    CheckSameVariables(one, many);
  }
  SUBCASE("momentum, 3 devices") {
    auto [one, many] = TrainBoth(Model::kMlp, 3, 12, Sgd(PiecewiseConstantScheduler({}, {0.2}), 0.9), 4);
    CheckSameVariables(one, many);
  }
  SUBCASE("Adam, 2 devices") {
    auto [one, many] = TrainBoth(Model::kMlp, 2, 8, Adam(PiecewiseConstantScheduler({}, {0.01})), 4);
    CheckSameVariables(one, many);
  }
  SUBCASE("LAMB (whole-tensor updates after an all-reduce), 3 devices") {
    auto [one, many] = TrainBoth(Model::kMlp, 3, 12, Lamb(PiecewiseConstantScheduler({}, {0.05})), 4);
    CheckSameVariables(one, many);
  }
}

TEST_CASE("a mirrored job on one device averages nothing: no all-reduce actors, the consistent job's results") {
  for (const Model model : {Model::kMlp, Model::kConv}) {
    CAPTURE(model == Model::kMlp);
    const Optimizer optimizer = Adam(PiecewiseConstantScheduler({}, {0.01}));
    const Job mirrored = TrainJob("train", model, 8, LogicalView::kMirrored, optimizer);
    const Job consistent = TrainJob("train", model, 8, LogicalView::kConsistent, optimizer);
    const auto plan = internal::CompilePlan(mirrored.Graph(), {});
    CHECK(std::none_of(plan->tasks.begin(), plan->tasks.end(),
                       [](const internal::TaskDesc& task) { return task.op_type == "all_reduce"; }));
    Session a, b;
    for (int step = 0; step < 3; ++step) {
      const Tensor images = RandomImages(ImageShape(model, 8), 40 + static_cast<std::uint32_t>(step));
      const Tensor labels = RandomLabels(8, 50 + static_cast<std::uint32_t>(step));
      const std::vector<float> x = a.Call(mirrored, {images, labels})["loss"].ToVector<float>();
      const std::vector<float> y = b.Call(consistent, {images, labels})["loss"].ToVector<float>();
      REQUIRE(x.size() == y.size());
      for (std::size_t i = 0; i < x.size(); ++i) CHECK(x[i] == doctest::Approx(y[i]).epsilon(1e-6));
    }
    CheckSameVariables(a.GetVariables(), b.GetVariables());
  }
}

TEST_CASE("mirrored conv-net training on 2 and 3 devices ends with the variables of one device") {
  for (int devices : {2, 3}) {
    CAPTURE(devices);
    auto [one, many] = TrainBoth(Model::kConv, devices, 6, Sgd(PiecewiseConstantScheduler({}, {0.3}), 0.0), 3);
    CheckSameVariables(one, many);
  }
}

TEST_CASE("a mirrored train plan has one replica per device; each device averages and updates its rows of each variable") {
  Session session({.cpu_devices = 2});
  const Job job = TrainJob("dp", Model::kMlp, 4, LogicalView::kMirrored, Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.0));
  const std::string dot = session.PlanDot(job);
  CHECK(dot.find("reduce_scatter(") != std::string::npos);
  CHECK(dot.find("cpu:1") != std::string::npos);

  const auto plan = internal::CompilePlan(job.Graph(), {.devices = 2, .threads_per_device = 1});
  std::map<std::string, int> by_type;
  for (const internal::TaskDesc& task : plan->tasks) {
    ++by_type[task.op_type];
    if (task.op_type == "reduce_scatter") {  // on the device's own stream, not a collective actor
      CHECK(plan->streams[static_cast<std::size_t>(task.stream)].kind == internal::StreamKind::kCompute);
    }
  }
  CHECK(by_type["reduce_scatter"] == 8);  // hidden and output weight and bias, one per device each
  CHECK(by_type["sgd_update"] == 8);      // each device updates its rows of each variable in place
  CHECK(by_type["all_reduce"] == 0);      // no whole gradient is made
  CHECK(plan->input_pieces == std::vector<int>{2, 2});
  CHECK(plan->output_pieces == std::vector<int>{2});

  // A whole-tensor update (LAMB) averages whole gradients: one all-reduce each, chained in one order.
  const Job lamb = TrainJob("dp_lamb", Model::kMlp, 4, LogicalView::kMirrored, Lamb(PiecewiseConstantScheduler({}, {0.1})));
  const auto lamb_plan = internal::CompilePlan(lamb.Graph(), {.devices = 2, .threads_per_device = 1});
  int reductions = 0;
  int updates = 0;
  int chain_edges = 0;
  for (const internal::TaskDesc& task : lamb_plan->tasks) {
    if (task.op_type == "all_reduce") ++reductions;
    if (task.op_type == "lamb_update") ++updates;
  }
  for (const internal::RegisterDesc& reg : lamb_plan->registers) {
    // (Not the edge from the last one to the barrier before the updates.)
    if (reg.name.starts_with("ctrl:all_reduce(") && reg.name.find("->all_reduce(") != std::string::npos) ++chain_edges;
  }
  CHECK(reductions == 4);
  CHECK(updates == 4);       // each variable is updated once, not per device
  CHECK(chain_edges == 3);   // one deterministic order of collectives
}

TEST_CASE("two stages on two devices (pipeline) compute what one device computes, and overlap across calls") {
  auto build = [](bool staged) {
    JobBuilder builder("pipeline", JobType::kTrain);
    const Initializer init = TruncatedNormalInitializer(0, 0.3);
    Blob images = builder.Placeholder("images", Shape{8, kFeatures});
    Blob labels = builder.Placeholder("labels", Shape{8}, DType::kI32);
    Blob hidden;
    {
      std::optional<ScopedPlacement> stage;
      if (staged) stage.emplace(builder, Placement("cpu", {"0:0"}));
      hidden = Dense(images, 16, {.activation = Activation::kRelu, .kernel_initializer = init, .name = "hidden"});
    }
    std::optional<ScopedPlacement> stage;
    if (staged) stage.emplace(builder, Placement("cpu", {"0:1"}));
    Blob logits = Dense(hidden, kClasses, {.kernel_initializer = init, .name = "output"});
    Blob loss = SparseSoftmaxCrossEntropy(labels, logits, "loss");
    builder.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.3}), 0.0), loss);
    builder.Output("loss", loss);
    return builder.Build();
  };
  Session one;
  Session two({.cpu_devices = 2});
  const Job plain = build(false);
  const Job staged = build(true);
  for (int step = 0; step < 4; ++step) {
    const std::vector<Tensor> inputs{RandomImages({8, kFeatures}, 7 + static_cast<std::uint32_t>(step)),
                                     RandomLabels(8, 9 + static_cast<std::uint32_t>(step))};
    const std::vector<float> a = one.Call(plain, inputs)["loss"].ToVector<float>();
    const std::vector<float> b = two.Call(staged, inputs)["loss"].ToVector<float>();
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(b[i] == doctest::Approx(a[i]).epsilon(1e-5));
  }
  CheckSameVariables(one.GetVariables(), two.GetVariables());

  // A trace draws the stage boundary's hand-offs as flow arrows between the devices' tracks: one start
  // and one end per hand-off, every one of them for a call of the trace.
  two.StartTrace();
  for (int call = 0; call < 3; ++call) {
    two.Call(staged, {RandomImages({8, kFeatures}, 70), RandomLabels(8, 90)});
  }
  const std::string trace_path = (std::filesystem::temp_directory_path() / "weir_test_pipeline_trace.json").string();
  two.StopTrace(trace_path);
  const std::string trace = ReadTextFile(trace_path);
  std::filesystem::remove(trace_path);
  auto count = [&](std::string_view needle) { return Occurrences(trace, needle); };
  const std::size_t starts = count(R"({"ph":"s","cat":"register","name":"hand-off")");
  CHECK(starts == count(R"({"ph":"f","bp":"e","cat":"register","name":"hand-off")"));
  CHECK(starts >= 3 * 2);  // at least the activations forward and their gradient back, per call
  CHECK(starts % 3 == 0);  // the same hand-offs in every call

  const auto plan = internal::CompilePlan(staged.Graph(), {.devices = 2});
  bool hidden_on_0 = false;
  bool output_on_1 = false;
  for (const internal::TaskDesc& task : plan->tasks) {
    const int device = plan->streams[static_cast<std::size_t>(task.stream)].device.index;
    if (task.name.starts_with("hidden") && task.kind == internal::TaskKind::kKernel) hidden_on_0 = hidden_on_0 || device == 0;
    if (task.name.starts_with("output") && task.kind == internal::TaskKind::kKernel) output_on_1 = output_on_1 || device == 1;
  }
  CHECK(hidden_on_0);
  CHECK(output_on_1);
  // The activations cross the stage boundary in two slots, so stage 0 runs ahead by one call.
  bool boundary = false;
  for (const internal::RegisterDesc& reg : plan->registers) {
    if (reg.name.starts_with("hidden") && reg.name.ends_with("/out") && reg.register_num == 2) boundary = true;
  }
  CHECK(boundary);
}

TEST_CASE("a placement beyond the session's devices fails that job's compile, naming it; the session stays usable") {
  Session session({.cpu_devices = 2});
  auto job_on = [](const std::string& name, const std::string& ids) {
    JobBuilder builder(name);
    Blob x = builder.Placeholder("x", Shape{2});
    ScopedPlacement place(builder, Placement("cpu", {ids}));
    builder.Output("y", ScalarMul(x, 2.0));
    return builder.Build();
  };
  const Tensor x = Tensor::FromVector<float>(Shape{2}, {1, 2});
  CHECK_THROWS_WITH_AS(
      session.Call(job_on("far", "0:5"), {x}),
      doctest::Contains(R"(op 'scalar_0' is placed on cpu "0:5", but the session has one machine (0) with 2 devices (0:0-1))"),
      std::invalid_argument);
  CHECK_THROWS_WITH_AS(session.Call(job_on("remote", "1:0"), {x}), doctest::Contains(R"(placed on cpu "1:0")"),
                       std::invalid_argument);
  CHECK(session.Call(job_on("near", "0:1"), {x})["y"].ToVector<float>() == std::vector<float>{2, 4});
  CHECK_THROWS_AS(JobBuilder("pop").PopPlacement(), std::logic_error);
}

TEST_CASE("a mirrored job given the wrong number of per-device inputs names the counts; nothing runs") {
  Session session({.cpu_devices = 2});
  JobConfig config;
  config.view = LogicalView::kMirrored;
  JobBuilder builder("mirrored_double", JobType::kPredict, config);
  Blob x = builder.Placeholder("x", Shape{2});
  builder.Output("y", ScalarMul(x, 2.0));
  const Job job = builder.Build();
  const Tensor a = Tensor::FromVector<float>(Shape{2}, {1, 2});
  const Tensor b = Tensor::FromVector<float>(Shape{2}, {3, 4});
  CHECK_THROWS_WITH_AS(session.Call(job, {a}),
                       "[job 'mirrored_double'] expects 2 inputs, one per device of each mirrored placeholder (2 x x: "
                       "x: f32(2)), got 1",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(session.Call(job, {a, Tensor::FromVector<float>(Shape{3}, {1, 2, 3})}),
                       "[job 'mirrored_double'] input 'x[1]': expected shape (2), got (3)", std::invalid_argument);
  const Outputs out = session.Call(job, {a, b});
  CHECK(out["y"].ToVector<float>() == std::vector<float>{2, 4, 6, 8});
  const std::vector<Tensor> pieces = out.Pieces("y");
  REQUIRE(pieces.size() == 2);
  CHECK(pieces[1].ToVector<float>() == std::vector<float>{6, 8});
}

TEST_CASE("the devices compute side by side: each device's replica runs while the other's does") {
  // A regression test: an executor sent what other executors needed only once it ran out of work
  // of its own, so device 1 got the variable from device 0 only after device 0's kernels had run,
  // and the devices took turns. The rendezvous fails a call whose two replicas never meet.
  testing::RegisterRendezvousOp();
  Session session({.cpu_devices = 2});
  JobConfig config;
  config.view = LogicalView::kMirrored;
  JobBuilder builder("side_by_side", JobType::kPredict, config);
  Blob x = builder.Placeholder("x", Shape{2});
  Blob w = builder.Variable("w", {.shape = Shape{2}, .initializer = ConstantInitializer(1)});
  builder.Output("y", testing::Rendezvous(Add(x, w)));
  const Job job = builder.Build();
  for (int call = 0; call < 3; ++call) {
    const Outputs out = session.Call(job, {Tensor::FromVector<float>(Shape{2}, {1, 2}),
                                           Tensor::FromVector<float>(Shape{2}, {3, static_cast<float>(call)})});
    CHECK(out["y"].ToVector<float>() == std::vector<float>{2, 3, 4, static_cast<float>(call) + 1});
  }
}

TEST_CASE("two mirrored train jobs with collectives, called alternately and asynchronously, never deadlock") {
  Session session({.cpu_devices = 2});
  auto job = [](const std::string& name, const std::string& prefix) {
    JobConfig config;
    config.view = LogicalView::kMirrored;
    JobBuilder builder(name, JobType::kTrain, config);
    Blob x = builder.Placeholder("x", Shape{4, kFeatures});
    Blob labels = builder.Placeholder("labels", Shape{4}, DType::kI32);
    Blob logits = Dense(x, kClasses, {.kernel_initializer = TruncatedNormalInitializer(0, 0.1), .name = prefix});
    Blob loss = SparseSoftmaxCrossEntropy(labels, logits);
    builder.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.0), loss);
    builder.Output("loss", loss);
    return builder.Build();
  };
  const Job a = job("job_a", "a");
  const Job b = job("job_b", "b");
  const std::vector<Tensor> inputs{RandomImages({4, kFeatures}, 1), RandomImages({4, kFeatures}, 2), RandomLabels(4, 3),
                                   RandomLabels(4, 4)};
  std::atomic<int> done{0};
  auto all_done = std::make_shared<std::promise<void>>();
  constexpr int kCalls = 200;
  for (int i = 0; i < kCalls; ++i) {
    session.CallAsync(i % 2 == 0 ? a : b, inputs, [&done, all_done](CallResult result) {
      result.ThrowIfError();
      if (done.fetch_add(1) + 1 == kCalls) all_done->set_value();
    });
  }
  REQUIRE(all_done->get_future().wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  session.Sync();
}

TEST_CASE("the profile of a mirrored job names each actor's device and sums busy time by device") {
  Session session({.cpu_devices = 2});
  // LAMB averages whole gradients on the collective stream, which spans the devices.
  const Job job = TrainJob("profiled", Model::kMlp, 4, LogicalView::kMirrored, Lamb(PiecewiseConstantScheduler({}, {0.1})));
  const std::vector<Tensor> inputs{RandomImages({4, kFeatures}, 1), RandomImages({4, kFeatures}, 2), RandomLabels(4, 3),
                                   RandomLabels(4, 4)};
  session.Call(job, inputs);
  session.StartProfiling();
  for (int i = 0; i < 3; ++i) session.Call(job, inputs);
  const Profile profile = session.StopProfiling();
  REQUIRE(profile.jobs.size() == 1);
  std::set<std::string> devices;
  for (const ActorProfile& actor : profile.jobs[0].actors) {
    devices.insert(actor.device);
    if (actor.op_type == "all_reduce") CHECK(actor.device == "cpu:0-1");
  }
  CHECK(devices == std::set<std::string>{"cpu:0", "cpu:1", "cpu:0-1"});
  CHECK(profile.Format().find("busy by device, ms a call: cpu:0") != std::string::npos);
}

namespace {

// Trains `steps` steps of the same batches on one device and, in the consistent view, on `devices`.
std::pair<std::map<std::string, Tensor>, std::map<std::string, Tensor>> TrainConsistent(
    Model model, int devices, std::int64_t batch, const Optimizer& optimizer, int steps) {
  Session one;
  Session many({.cpu_devices = devices});
  const Job job = TrainJob("train", model, batch, LogicalView::kConsistent, optimizer);
  for (int step = 0; step < steps; ++step) {
    const std::vector<Tensor> inputs{RandomImages(ImageShape(model, batch), 300 + static_cast<std::uint32_t>(step)),
                                     RandomLabels(batch, 400 + static_cast<std::uint32_t>(step))};
    const std::vector<float> a = one.Call(job, inputs)["loss"].ToVector<float>();
    const Outputs got = many.Call(job, inputs);
    CHECK(got.Pieces("loss").size() == 1);  // a consistent result is one logical tensor
    const std::vector<float> b = got["loss"].ToVector<float>();
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(b[i] == doctest::Approx(a[i]).epsilon(1e-4));
  }
  return {one.GetVariables(), many.GetVariables()};
}

}  // namespace

TEST_CASE("consistent-view training splits the batch over the devices and ends with one device's variables") {
  SUBCASE("MLP, SGD, 2 devices") {
    auto [one, many] = TrainConsistent(Model::kMlp, 2, 12, Sgd(PiecewiseConstantScheduler({}, {0.5}), 0.0), 4);
    CheckSameVariables(one, many);
  }
  SUBCASE("MLP, momentum, 3 devices, a batch of 10 split 4/3/3") {
    auto [one, many] = TrainConsistent(Model::kMlp, 3, 10, Sgd(PiecewiseConstantScheduler({}, {0.2}), 0.9), 4);
    CheckSameVariables(one, many);
  }
  SUBCASE("MLP, Adam, 2 devices") {
    auto [one, many] = TrainConsistent(Model::kMlp, 2, 8, Adam(PiecewiseConstantScheduler({}, {0.01})), 3);
    CheckSameVariables(one, many);
  }
  SUBCASE("conv net, 2 and 3 devices, 7 images") {
    for (int devices : {2, 3}) {
      CAPTURE(devices);
      auto [one, many] = TrainConsistent(Model::kConv, devices, 7, Sgd(PiecewiseConstantScheduler({}, {0.3}), 0.0), 3);
      CheckSameVariables(one, many);
    }
  }
}

TEST_CASE("a consistent data-parallel plan replicates the ops per device and reduce-scatters the weight gradients") {
  const Job job = TrainJob("dp", Model::kMlp, 8, LogicalView::kConsistent, Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.0));
  const auto plan = internal::CompilePlan(job.Graph(), {.devices = 2, .threads_per_device = 1});
  std::map<std::string, int> by_type;
  for (const internal::TaskDesc& task : plan->tasks) ++by_type[task.op_type];
  // Each weight and bias gradient is a partial sum per device; each device sums its rows of it
  // (reduce_scatter) and updates its rows of the variable in place: no whole gradient exists.
  CHECK(by_type["reduce_scatter"] == 8);
  CHECK(by_type["sgd_update"] == 8);
  CHECK(by_type["all_reduce"] == 0);
  CHECK(by_type["all_gather"] == 0);   // nothing needs a whole batch
  CHECK(by_type["sparse_softmax_cross_entropy"] == 2);
  CHECK(plan->input_pieces == std::vector<int>{1, 1});  // the caller passes whole batches
  CHECK(plan->output_pieces == std::vector<int>{2});   // the sink joins the loss's slices
}

TEST_CASE("boxing between SBPs: every collective round-trips values exactly, uneven splits included") {
  auto build = [] {
    JobBuilder builder("boxing");
    Blob x = builder.Placeholder("x", Shape{7, 6});
    Blob cube = builder.Placeholder("cube", Shape{7, 6, 4});
    Tensor table(Shape{7, 6}, DType::kF32);
    for (std::int64_t i = 0; i < table.NumElements(); ++i) table.Data<float>()[i] = static_cast<float>(i % 5) - 2.f;
    builder.Output("column_sums", ReduceSum(x, {{0}}));                   // S(0) -> P -> all_reduce
    builder.Output("column_softmax", Softmax(x, {0}));                    // S(0) -> all_to_all -> S(1) -> all_gather
    builder.Output("plus_table", Add(x, builder.Constant(table)));        // the constant scattered to S(0)
    builder.Output("scattered", Softmax(ReduceSum(cube, {{0}}), {1}));    // P -> reduce_scatter -> S(0)
    builder.Output("transposed", Transpose(x, {{1, 0}}));                 // S(1) -> all_gather
    return builder.Build();
  };
  const Job job = build();
  const std::vector<Tensor> inputs{RandomImages({7, 6}, 5), RandomImages({7, 6, 4}, 6)};
  Session one;
  const Outputs expected = one.Call(job, inputs);
  for (int devices : {2, 3}) {
    CAPTURE(devices);
    Session many({.cpu_devices = devices});
    const std::string dot = many.PlanDot(job);
    for (const char* collective : {"all_reduce(", "all_to_all(", "all_gather(", "reduce_scatter(", "scatter("}) {
      CAPTURE(collective);
      CHECK(dot.find(collective) != std::string::npos);
    }
    const Outputs got = many.Call(job, inputs);
    for (std::size_t i = 0; i < expected.Size(); ++i) {
      CAPTURE(expected.Names()[i]);
      REQUIRE(got[i].GetShape() == expected[i].GetShape());
      const std::vector<float> a = expected[i].ToVector<float>();
      const std::vector<float> b = got[i].ToVector<float>();
      for (std::size_t j = 0; j < a.size(); ++j) CHECK(b[j] == doctest::Approx(a[j]).epsilon(1e-5));
    }
  }
}

namespace {

// The docs' hybrid MLP: a data-parallel hidden layer, then an output layer split by output units
// over the devices (model parallelism).
Job HybridJob(std::int64_t batch, const Optimizer& optimizer, Distribute output = Distribute::Split(0)) {
  JobBuilder builder("hybrid", JobType::kTrain);
  const Initializer init = TruncatedNormalInitializer(0, 0.3);
  Blob images = builder.Placeholder("images", Shape{batch, kFeatures});
  Blob labels = builder.Placeholder("labels", Shape{batch}, DType::kI32);
  Blob hidden = Dense(images, 16, {.activation = Activation::kRelu, .kernel_initializer = init, .name = "hidden"});
  Blob logits = Dense(hidden, 6, {.kernel_initializer = init, .name = "output", .model_distribute = output});
  Blob loss = SparseSoftmaxCrossEntropy(labels, logits, "loss");
  builder.Minimize(optimizer, loss);
  builder.Output("loss", loss);
  return builder.Build();
}

}  // namespace

TEST_CASE("model parallelism: a dense layer split by output units trains like one device, variables stay whole") {
  for (int devices : {2, 3}) {
    for (const Optimizer& optimizer : {Sgd(PiecewiseConstantScheduler({}, {0.3}), 0.9), Adam(PiecewiseConstantScheduler({}, {0.01}))}) {
      CAPTURE(devices);
      Session one;
      Session many({.cpu_devices = devices});
      const Job job = HybridJob(8, optimizer);
      for (int step = 0; step < 3; ++step) {
        const std::vector<Tensor> inputs{RandomImages({8, kFeatures}, 50 + static_cast<std::uint32_t>(step)),
                                         RandomLabels(8, 60 + static_cast<std::uint32_t>(step))};
        const std::vector<float> a = one.Call(job, inputs)["loss"].ToVector<float>();
        const std::vector<float> b = many.Call(job, inputs)["loss"].ToVector<float>();
        for (std::size_t i = 0; i < a.size(); ++i) CHECK(b[i] == doctest::Approx(a[i]).epsilon(1e-4));
      }
      CheckSameVariables(one.GetVariables(), many.GetVariables());
      CHECK(many.GetVariable("output-weight").GetShape() == Shape{6, 16});  // the logical shape
    }
  }
  // Each device holds and updates its rows of the split weight in place.
  const auto plan = internal::CompilePlan(HybridJob(8, Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.9)).Graph(), {.devices = 2});
  int weight_pieces = 0;
  int updates = 0;
  for (const internal::RegisterDesc& reg : plan->registers) {
    if (reg.variable == "output-weight") {
      ++weight_pieces;
      CHECK(reg.slot_bytes == 3 * 16 * sizeof(float));
    }
  }
  for (const internal::TaskDesc& task : plan->tasks) {
    if (task.op_type == "momentum_update" && task.name.starts_with("output-weight-update")) ++updates;
  }
  CHECK(weight_pieces == 2);
  CHECK(updates == 2);
}

TEST_CASE("split variables checkpoint whole and load back into their pieces") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("weir_split_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const Job job = HybridJob(6, Sgd(PiecewiseConstantScheduler({}, {0.3}), 0.0));
  const std::vector<Tensor> inputs{RandomImages({6, kFeatures}, 1), RandomLabels(6, 2)};
  std::map<std::string, Tensor> trained;
  {
    Session session({.cpu_devices = 2});
    session.Call(job, inputs);
    session.SaveCheckpoint(dir.string());
    trained = session.GetVariables();
  }
  Session fresh({.cpu_devices = 3});
  fresh.Compile(job);
  fresh.LoadCheckpoint(dir.string());
  CheckSameVariables(trained, fresh.GetVariables());
  Session one;  // and the same checkpoint on one device gives the same next step
  one.Compile(job);
  one.LoadCheckpoint(dir.string());
  const std::vector<float> a = one.Call(job, inputs)["loss"].ToVector<float>();
  const std::vector<float> b = fresh.Call(job, inputs)["loss"].ToVector<float>();
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(b[i] == doctest::Approx(a[i]).epsilon(1e-5));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a split variable that only a whole-tensor optimizer can update is a clear compile error") {
  Session session({.cpu_devices = 2});
  const Job job = HybridJob(4, Lamb(PiecewiseConstantScheduler({}, {0.1})));
  CHECK_THROWS_WITH_AS(session.Compile(job), doctest::Contains("[lamb_update] cannot update 'output-weight' in place: it is S(0)"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(session.Compile(HybridJob(4, Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.0), Distribute::Split(1))),
                       "[dense] 'model_distribute' must be split(0) (output units), got split(1)", std::invalid_argument);
}

TEST_CASE("layout hints box a blob and its gradient as asked, and change no value") {
  auto build = [](bool hinted) {
    JobBuilder builder("hints", JobType::kTrain);
    Blob x = builder.Placeholder("x", Shape{6, 4});
    Blob w = builder.Variable("w", {.shape = Shape{4, 4}, .initializer = TruncatedNormalInitializer(0, 0.5)});
    Blob h = MatMul(x, w);
    if (hinted) h = ParallelCast(h, {.value = Distribute::Split(1), .gradient = Distribute::Broadcast()});
    Blob y = ReduceSum(Square(Relu(h)), {{1}});
    builder.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.0), y);
    builder.Output("y", y);
    return builder.Build();
  };
  const Tensor x = RandomImages({6, 4}, 9);
  Session one;
  Session many({.cpu_devices = 2});
  const Job plain = build(false);
  const Job hinted = build(true);
  const std::string dot = many.PlanDot(hinted);
  CHECK(dot.find("all_to_all(") != std::string::npos);  // S(0) -> S(1) as hinted
  for (int step = 0; step < 2; ++step) {
    const std::vector<float> a = one.Call(plain, {x})["y"].ToVector<float>();
    const std::vector<float> b = many.Call(hinted, {x})["y"].ToVector<float>();
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(b[i] == doctest::Approx(a[i]).epsilon(1e-5));
  }
  CheckSameVariables(one.GetVariables(), many.GetVariables());
}

TEST_CASE("the watchdog reports a stall once: the kernel that does not return, the stage it holds up, the oldest call") {
  testing::RegisterBlockOp();
  testing::BlockReset();
  std::mutex mutex;
  std::condition_variable reported;
  std::vector<std::string> reports;
  SessionOptions options{.cpu_devices = 2};
  options.watchdog_timeout = std::chrono::milliseconds(200);
  options.watchdog_handler = [&](const std::string& report) {
    {
      std::lock_guard lock(mutex);
      reports.push_back(report);
    }
    reported.notify_all();
  };
  Session session(options);
  // Two stages: device 0 doubles, device 1 runs the blocking kernel. With the kernel stuck on call
  // 0, device 0 fills both slots of the boundary register and then has nowhere to write.
  JobBuilder builder("stalled");
  Blob doubled;
  {
    ScopedPlacement stage(builder, Placement("cpu", {"0:0"}));  // the input too: device 1 only blocks
    doubled = ScalarMul(builder.Placeholder("x", Shape{2}), 2.0, "double");
  }
  {
    ScopedPlacement stage(builder, Placement("cpu", {"0:1"}));
    builder.Output("y", testing::Block(doubled));
  }
  const Job job = builder.Build();
  CHECK(session.DescribeState() == "no calls in flight\n");
  std::atomic<int> done{0};
  for (int call = 0; call < 4; ++call) {
    session.CallAsync(job, {Tensor::FromVector<float>(Shape{2}, {1, static_cast<float>(call)})},
                      [&](CallResult result) {
                        result.ThrowIfError();
                        ++done;
                      });
  }
  {
    std::unique_lock lock(mutex);
    REQUIRE(reported.wait_for(lock, std::chrono::seconds(10), [&] { return !reports.empty(); }));
  }
  const std::string report = reports.front();
  INFO(report);
  CHECK(report.starts_with("[weir] watchdog: no actor has fired for "));
  CHECK(report.find("with 4 call(s) in flight") != std::string::npos);
  CHECK(report.find("job 'stalled': 4 call(s) in flight; the oldest, call 0, was launched ") != std::string::npos);
  CHECK(report.find("inside 'test_block_0' (kernel, test_block), which has not returned") != std::string::npos);
  CHECK(report.find("'double' (kernel, scalar) waits: output 'double/out' has no free slot (2 of 2 held by "
                    "'test_block_0')") != std::string::npos);
  // The kernel that has not returned, the root cause, comes before what waits for it.
  CHECK(report.find("inside 'test_block_0'") < report.find("'double' (kernel, scalar) waits"));
  // On demand, the same; and the watchdog reports a stall once, not every poll.
  CHECK(session.DescribeState().find("inside 'test_block_0'") != std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  {
    std::lock_guard lock(mutex);
    CHECK(reports.size() == 1);
  }
  testing::BlockRelease();
  session.Sync();
  CHECK(done == 4);
  CHECK(session.DescribeState() == "no calls in flight\n");
  testing::BlockReset();
}
