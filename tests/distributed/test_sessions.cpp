// Sessions spanning processes, each rank a thread of this test with a Session of its own (neither the
// control plane nor the data planes can tell): mirrored training on 2 ranks x 1 and x 2 devices over
// shared memory and over Gloo ends with the variables of one session on the whole batch; what a session
// reports; consistent training split over 2 and 3 ranks (each rank its rows of the batch) ends with one
// session's variables and losses; a pipeline with a stage in each rank trains as one session; jobs that differ, or fail to compile on one rank,
// fail on every rank naming the job. Every test runs under a watchdog.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "api/train_test_util.hpp"
#include "graph/planner.hpp"
#include "kernels/collectives/collective_attrs.hpp"
#include "test_watchdog.hpp"
#include "weir/weir.hpp"

using namespace weir;
using namespace weir::testing;
using namespace std::chrono_literals;

namespace {

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  close(fd);
  return ntohs(address.sin_port);
}

SessionOptions RankOptions(int rank, int world, int port, const std::string& collectives, int devices = 1) {
  SessionOptions options;
  options.cpu_devices = devices;
  options.distributed.rank = rank;
  options.distributed.world_size = world;
  options.distributed.master_port = port;
  options.distributed.rendezvous_timeout = 20s;
  options.distributed.collective_timeout = 20s;
  options.distributed.collectives = collectives;
  return options;
}

/// Runs fn(rank) on `world` threads at once and returns what each returned (or rethrows the first error).
template <typename T>
std::vector<T> OnRanks(int world, const std::function<T(int)>& fn) {
  std::vector<std::future<T>> futures;
  for (int rank = 0; rank < world; ++rank) futures.push_back(std::async(std::launch::async, fn, rank));
  std::vector<T> results;
  for (auto& future : futures) results.push_back(future.get());
  return results;
}

constexpr std::int64_t kBatch = 12;
constexpr int kSteps = 4;

std::map<std::string, Tensor> TrainOneSession(const Optimizer& optimizer) {
  Session one;
  const Job whole = TrainJob("train", Model::kMlp, kBatch, LogicalView::kConsistent, optimizer);
  for (int step = 0; step < kSteps; ++step) {
    one.Call(whole, {RandomImages(ImageShape(Model::kMlp, kBatch), 100 + static_cast<std::uint32_t>(step)),
                     RandomLabels(kBatch, 200 + static_cast<std::uint32_t>(step))});
  }
  return one.GetVariables();
}

/// Calls `job` on `inputs`, or with `in_flight` launches it and returns at once (the calls of a
/// step loop are then in flight together; callbacks run in call order). Returns the call's loss, or
/// where the callback will put it.
void Launch(Session& session, const Job& job, std::vector<Tensor> inputs, bool in_flight, std::vector<Tensor>& losses) {
  if (!in_flight) {
    const Outputs outputs = session.Call(job, std::move(inputs));
    losses.push_back(outputs.Names().empty() ? Tensor() : outputs[0]);
    return;
  }
  session.CallAsync(job, std::move(inputs), [&losses](CallResult result) {
    result.ThrowIfError();
    losses.push_back(result.outputs.Names().empty() ? Tensor() : result.outputs[0]);
  });
}

/// Rank r of `world` ranks with `devices` devices each trains the mirrored MLP on its rows of each batch.
std::map<std::string, Tensor> TrainRank(int rank, int world, int devices, int port, const std::string& collectives,
                                        const Optimizer& optimizer, bool in_flight = false,
                                        std::size_t fusion_threshold_bytes = std::size_t{16} << 20) {
  SessionOptions options = RankOptions(rank, world, port, collectives, devices);
  options.distributed.fusion_threshold_bytes = fusion_threshold_bytes;
  Session session(options);
  std::vector<Tensor> losses;
  const std::int64_t per = kBatch / (world * devices);
  const Job mirrored = TrainJob("train", Model::kMlp, per, LogicalView::kMirrored, optimizer);
  for (int step = 0; step < kSteps; ++step) {
    const Tensor images = RandomImages(ImageShape(Model::kMlp, kBatch), 100 + static_cast<std::uint32_t>(step));
    const Tensor labels = RandomLabels(kBatch, 200 + static_cast<std::uint32_t>(step));
    std::vector<Tensor> inputs;
    const std::int64_t first = rank * devices * per;
    for (int d = 0; d < devices; ++d) inputs.push_back(Rows(images, first + d * per, first + (d + 1) * per));
    for (int d = 0; d < devices; ++d) inputs.push_back(Rows(labels, first + d * per, first + (d + 1) * per));
    Launch(session, mirrored, inputs, in_flight, losses);
  }
  session.Sync();
  const Resource resource = session.GetResource();
  CHECK(resource.processes == world);
  CHECK(resource.rank == rank);
  CHECK(resource.collectives == (collectives == "gloo" ? "gloo" : "shm"));
  return session.GetVariables();
}

}  // namespace

TEST_CASE("sessions across processes: mirrored training ends with one session's variables") {
  Watchdog dog(120s);
  // With one device per process the gradients cross the processes in one fusion bucket, or (fusion
  // off) one by one.
  struct Case {
    int devices;
    std::string collectives;
    std::size_t fusion = std::size_t{16} << 20;
  };
  for (const Case& c : {Case{1, "shm"}, Case{1, "gloo"}, Case{1, "gloo", 0}, Case{2, "auto"}, Case{2, "gloo"}}) {
    CAPTURE(c.devices);
    CAPTURE(c.collectives);
    CAPTURE(c.fusion);
    // Adam: elementwise updates after the gradients' cross-process reduction; LAMB: whole-tensor
    // updates after an all-reduce actor; SGD clipped by the global norm: one op reads every gradient,
    // averaged first (the open bucket closes before it).
    // With LAMB the calls are launched together (in flight at once): each call's collectives still
    // follow the previous call's in every process.
    for (const std::string optimizer_name : {"adam", "lamb", "clipped sgd"}) {
      CAPTURE(optimizer_name);
      const bool lamb = optimizer_name == "lamb";
      const Optimizer optimizer = lamb ? Lamb(PiecewiseConstantScheduler({}, {0.05}))
                                  : optimizer_name == "adam" ? Adam(PiecewiseConstantScheduler({}, {0.01}))
                                                             : ClipByGlobalNorm(Sgd(PiecewiseConstantScheduler({}, {0.1})), 0.05);
      const auto expected = TrainOneSession(optimizer);
      const int port = FreePort();
      const auto ranks = OnRanks<std::map<std::string, Tensor>>(
          2, [&](int rank) { return TrainRank(rank, 2, c.devices, port, c.collectives, optimizer, /*in_flight=*/lamb, c.fusion); });
      for (const auto& variables : ranks) CheckSameVariables(expected, variables);
    }
  }
}

TEST_CASE("sessions across processes on the CPU's device streams: a call failing in one rank writes nothing anywhere") {
  Watchdog dog(120s);
  // Regression: with async_cpu_streams a mirrored job across processes had no commit, so a call that
  // failed in one rank (a label out of range there) still applied the other rank's updates.
  const Optimizer optimizer = Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.9);
  constexpr int kBadStep = 2;
  std::map<std::string, Tensor> expected;
  {
    Session one;
    const Job whole = TrainJob("train", Model::kMlp, kBatch, LogicalView::kConsistent, optimizer);
    for (int step = 0; step < kSteps; ++step) {
      if (step == kBadStep) continue;  // the failed step trains nothing
      one.Call(whole, {RandomImages(ImageShape(Model::kMlp, kBatch), 100 + static_cast<std::uint32_t>(step)),
                       RandomLabels(kBatch, 200 + static_cast<std::uint32_t>(step))});
    }
    expected = one.GetVariables();
    expected.erase("System-Train-TrainStep-train");
  }
  for (const bool graphs : {true, false}) {
    CAPTURE(graphs);
    const int port = FreePort();
    const auto ranks = OnRanks<std::map<std::string, Tensor>>(2, [&](int rank) {
      SessionOptions options = RankOptions(rank, 2, port, "shm");
      options.async_cpu_streams = true;
      options.stream_graphs = graphs;
      Session session(options);
      const std::int64_t per = kBatch / 2;
      const Job mirrored = TrainJob("train", Model::kMlp, per, LogicalView::kMirrored, optimizer);
      for (int step = 0; step < kSteps; ++step) {
        const Tensor images = RandomImages(ImageShape(Model::kMlp, kBatch), 100 + static_cast<std::uint32_t>(step));
        Tensor labels = Rows(RandomLabels(kBatch, 200 + static_cast<std::uint32_t>(step)), rank * per, (rank + 1) * per);
        if (step == kBadStep && rank == 1) labels.Data<std::int32_t>()[0] = 99;
        std::vector<Tensor> inputs = {Rows(images, rank * per, (rank + 1) * per), labels};
        if (step == kBadStep) {
          CHECK_THROWS(session.Call(mirrored, inputs));
        } else {
          session.Call(mirrored, inputs);
        }
      }
      std::map<std::string, Tensor> variables = session.GetVariables();
      CHECK(variables.at("System-Train-TrainStep-train").ToVector<std::int64_t>() == std::vector<std::int64_t>{kSteps - 1});
      variables.erase("System-Train-TrainStep-train");
      return variables;
    });
    for (const auto& variables : ranks) CheckSameVariables(expected, variables);
  }
}

TEST_CASE("sessions across processes: a mirrored job averages its gradients in fusion buckets") {
  // One device per process: each gradient is averaged across the processes. The conv net has 6.
  const Job job = TrainJob("train", Model::kConv, 6, LogicalView::kMirrored, Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.0));
  struct Bucket {
    int tensors;
    std::size_t bytes;
    std::size_t last_bytes;  // of its last tensor
  };
  auto buckets_of = [&](std::size_t threshold) {
    const auto plan = internal::CompilePlan(job.Graph(), {.processes = 2, .rank = 0, .fusion_threshold_bytes = threshold});
    std::vector<Bucket> buckets;
    for (const internal::TaskDesc& task : plan->tasks) {
      if (task.op_type != "all_reduce") continue;
      const auto& attrs = std::any_cast<const internal::CollectiveAttrs&>(*task.attrs);
      CHECK(attrs.across_processes);
      REQUIRE(task.output_metas.size() == static_cast<std::size_t>(attrs.tensors));
      std::size_t bytes = 0;
      for (const internal::TensorMeta& meta : task.output_metas) bytes += meta.NumBytes();
      buckets.push_back({attrs.tensors, bytes, task.output_metas.back().NumBytes()});
    }
    return buckets;
  };
  auto tensors_of = [](const std::vector<Bucket>& buckets) {
    int tensors = 0;
    for (const Bucket& bucket : buckets) tensors += bucket.tensors;
    return tensors;
  };
  const std::vector<Bucket> off = buckets_of(0);
  CHECK(off.size() == 6);
  for (const Bucket& bucket : off) CHECK(bucket.tensors == 1);
  // Every gradient (a few KiB in all) fits the first bucket: one collective.
  const std::vector<Bucket> fused = buckets_of(std::size_t{16} << 20);
  REQUIRE(fused.size() == 1);
  CHECK(fused[0].tensors == 6);
  // Buckets of 600 bytes: each but the last closed by the gradient that took it to 600 bytes or more
  // (as PyTorch DDP's); still every gradient once.
  const std::vector<Bucket> small = buckets_of(600);
  CHECK(small.size() > 1);
  CHECK(small.size() < 6);
  CHECK(tensors_of(small) == 6);
  for (std::size_t b = 0; b < small.size(); ++b) {
    CAPTURE(b);
    CHECK(small[b].bytes - small[b].last_bytes < 600);
    if (b + 1 < small.size()) CHECK(small[b].bytes >= 600);
  }
}

TEST_CASE("sessions across processes: jobs that differ or fail to compile on one rank fail on every rank") {
  Watchdog dog(60s);
  const int port = FreePort();
  const auto errors = OnRanks<std::string>(2, [port](int rank) -> std::string {
    Session session(RankOptions(rank, 2, port, "auto"));
    // Rank 1's job has another batch: another plan.
    const Job job = TrainJob("train", Model::kMlp, rank == 0 ? 6 : 4, LogicalView::kMirrored,
                             Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.0));
    std::string error;
    try {
      session.Compile(job);
    } catch (const std::invalid_argument& e) {
      error = e.what();
    }
    // The session stays usable: the next job, the same on both ranks, compiles and runs.
    const Job same = TrainJob("same", Model::kMlp, 6, LogicalView::kMirrored, Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.0));
    session.Call(same, {RandomImages(ImageShape(Model::kMlp, 6), 1), RandomLabels(6, 2)});
    return error;
  });
  for (const std::string& error : errors) {
    CHECK(error.find("job 'train' differs between processes: as job #1 rank 0 compiled 'train', and rank 1 compiled "
                     "'train' with a different plan") != std::string::npos);
  }

  const int port2 = FreePort();
  const auto failures = OnRanks<std::string>(2, [port2](int rank) -> std::string {
    Session session(RankOptions(rank, 2, port2, "auto"));
    JobBuilder builder("bad");
    Blob x = builder.Placeholder("x", Shape{2});
    ScopedPlacement place(builder, Placement("cpu", {rank == 1 ? "0:5" : "0:0"}));  // no device 5 on rank 1
    builder.Output("y", ScalarMul(x, 2.0));
    try {
      session.Compile(builder.Build());
    } catch (const std::exception& e) {
      return e.what();
    }
    return "(no error)";
  });
  CHECK(failures[0].find("[distributed] job 'bad': rank 1 could not compile its job #1 ('bad')") != std::string::npos);
  CHECK(failures[1].find("does not compile") != std::string::npos);
}

namespace {

struct Trained {
  std::map<std::string, Tensor> variables;
  std::vector<Tensor> losses;  // of each step
  std::string plan;            // PlanDot
};

/// `job` trained for kSteps on the whole batch: every rank passes the whole batch (consistent view).
Trained TrainConsistent(Session& session, const Job& job, Model model, bool in_flight = false) {
  Trained trained;
  for (int step = 0; step < kSteps; ++step) {
    Launch(session, job, {RandomImages(ImageShape(model, kBatch), 100 + static_cast<std::uint32_t>(step)),
                          RandomLabels(kBatch, 200 + static_cast<std::uint32_t>(step))},
           in_flight, trained.losses);
  }
  session.Sync();
  trained.variables = session.GetVariables();
  trained.plan = session.PlanDot(job);
  return trained;
}

void CheckSameLosses(const std::vector<Tensor>& expected, const std::vector<Tensor>& got) {
  REQUIRE(expected.size() == got.size());
  for (std::size_t step = 0; step < expected.size(); ++step) {
    CAPTURE(step);
    REQUIRE(got[step].GetShape() == expected[step].GetShape());
    const std::vector<float> x = expected[step].ToVector<float>();
    const std::vector<float> y = got[step].ToVector<float>();
    for (std::size_t i = 0; i < x.size(); ++i) CHECK(y[i] == doctest::Approx(x[i]).epsilon(1e-4).scale(1e-3));
  }
}

// Actors in a PlanDot named after an op replica on `device` ("hidden-matmul:1").
bool HasReplicaOn(const std::string& plan, const std::string& op, int device) {
  return plan.find(fmt::format("{}:{}", op, device)) != std::string::npos;
}

}  // namespace

TEST_CASE("sessions across processes: consistent training is split over the ranks and ends with one session's "
          "variables and losses") {
  Watchdog dog(180s);
  struct Case {
    int world;
    int devices;
    std::string collectives;
  };
  for (const Case& c : {Case{2, 1, "shm"}, Case{2, 1, "gloo"}, Case{2, 2, "auto"}, Case{3, 1, "gloo"}}) {
    for (const Model model : {Model::kMlp, Model::kConv}) {
      // Adam: elementwise updates; LAMB: whole-tensor norms.
      for (const bool lamb : {false, true}) {
        CAPTURE(c.world);
        CAPTURE(c.devices);
        CAPTURE(c.collectives);
        CAPTURE(model == Model::kMlp);
        CAPTURE(lamb);
        const Optimizer optimizer = lamb ? Lamb(PiecewiseConstantScheduler({}, {0.05}))
                                         : Adam(PiecewiseConstantScheduler({}, {0.01}));
        Session one;
        const Trained expected =
            TrainConsistent(one, TrainJob("train", model, kBatch, LogicalView::kConsistent, optimizer), model);
        const int port = FreePort();
        const auto ranks = OnRanks<Trained>(c.world, [&](int rank) {
          Session session(RankOptions(rank, c.world, port, c.collectives, c.devices));
          return TrainConsistent(session, TrainJob("train", model, kBatch, LogicalView::kConsistent, optimizer), model);
        });
        for (int rank = 0; rank < c.world; ++rank) {
          CAPTURE(rank);
          CheckSameVariables(expected.variables, ranks[static_cast<std::size_t>(rank)].variables);
          CheckSameLosses(expected.losses, ranks[static_cast<std::size_t>(rank)].losses);
          // Each rank runs its devices' replicas only: its rows of the batch.
          for (int device = 0; device < c.world * c.devices; ++device) {
            CHECK(HasReplicaOn(ranks[static_cast<std::size_t>(rank)].plan, "hidden-matmul", device) ==
                  (device / c.devices == rank));
          }
        }
      }
    }
  }
}

TEST_CASE("sessions across processes: a pipeline with a stage in each rank trains as one session") {
  Watchdog dog(60s);
  // Stage 1 (the hidden layer) on machine 0, stage 2 (the output layer and the loss) on machine 1: the
  // activations go forward from rank 0 to rank 1 and their gradient back, each call; the updates run in
  // both ranks.
  auto pipeline = [](const std::string& second) {
    JobConfig config;
    config.view = LogicalView::kConsistent;
    JobBuilder builder("pipeline", JobType::kTrain, config);
    const Initializer init = TruncatedNormalInitializer(0, 0.3);
    Blob images = builder.Placeholder("images", Shape{kBatch, kFeatures});
    Blob labels = builder.Placeholder("labels", Shape{kBatch}, DType::kI32);
    Blob hidden;
    {
      ScopedPlacement stage(builder, Placement("cpu", {"0:0"}));
      hidden = Dense(images, 16, {.activation = Activation::kRelu, .kernel_initializer = init, .name = "hidden"});
    }
    ScopedPlacement stage(builder, Placement("cpu", {second}));
    Blob logits = Dense(hidden, kClasses, {.kernel_initializer = init, .name = "output"});
    Blob loss = SparseSoftmaxCrossEntropy(labels, logits, "loss");
    builder.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.9), loss);
    builder.Output("loss", loss);
    return builder.Build();
  };
  // With 3 ranks, the transfers between the stages go point to point: rank 2 reads neither.
  for (int rank = 0; rank < 3; ++rank) {
    const auto plan = internal::CompilePlan(pipeline("1:0").Graph(), {.processes = 3, .rank = rank});
    int point_to_point = 0;
    for (const internal::TaskDesc& task : plan->tasks) {
      if (task.op_type != "transfer") continue;
      const auto& attrs = std::any_cast<const internal::CollectiveAttrs&>(*task.attrs);
      if (attrs.readers.empty()) continue;  // read everywhere: broadcast
      ++point_to_point;
      CHECK(attrs.readers == std::vector<int>{1 - attrs.root});
    }
    CHECK(point_to_point == 2);  // the activations forward, their gradient back
  }
  Session one;
  const Trained expected = TrainConsistent(one, pipeline("0:0"), Model::kMlp);
  // With 3 ranks the activations and their gradient go point to point between ranks 0 and 1 (rank 2
  // holds no stage); the loss and the gradients every rank's updates read are broadcast.
  for (const auto& [collectives, world] : {std::pair{"shm", 2}, std::pair{"gloo", 2}, std::pair{"shm", 3},
                                           std::pair{"gloo", 3}}) {
    CAPTURE(collectives);
    CAPTURE(world);
    const int port = FreePort();
    // The calls are launched together: stage 0 works on the next call while stage 1 works on this one.
    const auto ranks = OnRanks<Trained>(world, [&](int rank) {
      Session session(RankOptions(rank, world, port, collectives));
      return TrainConsistent(session, pipeline("1:0"), Model::kMlp, /*in_flight=*/true);
    });
    for (int rank = 0; rank < world; ++rank) {
      CAPTURE(rank);
      CheckSameLosses(expected.losses, ranks[static_cast<std::size_t>(rank)].losses);  // returned in every rank
      const std::string& plan = ranks[static_cast<std::size_t>(rank)].plan;
      CHECK((plan.find("hidden-matmul") != std::string::npos) == (rank == 0));
      CHECK((plan.find("output-matmul") != std::string::npos) == (rank == 1));
      CHECK(plan.find("transfer(") != std::string::npos);
      CHECK(plan.find("collective_gate") != std::string::npos);
    }
    // Every rank makes every update (the other stage's gradients come to it): each holds every variable.
    for (const Trained& rank : ranks) CheckSameVariables(expected.variables, rank.variables);
  }
}

TEST_CASE("sessions across processes: placements name machines") {
  Watchdog dog(60s);
  const int port = FreePort();
  // Mirrored: the same devices on every machine are each process's own (here device 1 of each); the
  // consistent view names any machine's devices; what the session lacks is an error naming it.
  const auto results = OnRanks<std::vector<std::string>>(2, [port](int rank) {
    Session session(RankOptions(rank, 2, port, "auto", 2));
    std::vector<std::string> seen;
    auto job = [](const std::string& name, LogicalView view, const std::vector<std::string>& devices) {
      JobConfig config;
      config.view = view;
      JobBuilder builder(name, JobType::kPredict, config);
      ScopedPlacement place(builder, Placement("cpu", devices));
      Blob x = builder.Placeholder("x", Shape{4});
      builder.Output("y", ScalarMul(x, 2.0));
      return builder.Build();
    };
    const Tensor x = Tensor::FromVector<float>(Shape{4}, {1, 2, 3, 4});
    const Outputs mirrored = session.Call(job("mirrored", LogicalView::kMirrored, {"0:1", "1:1"}), {x});
    seen.push_back(fmt::format("{}", mirrored["y"].ToVector<float>()));
    seen.push_back(session.PlanDot(job("mirrored", LogicalView::kMirrored, {"0:1", "1:1"})).find("cpu:1") != std::string::npos
                       ? "on device 1" : "elsewhere");
    const Outputs consistent = session.Call(job("consistent", LogicalView::kConsistent, {"1:1"}), {x});
    seen.push_back(fmt::format("{}", consistent["y"].ToVector<float>()));
    for (const auto& [view, devices] : {std::pair{LogicalView::kMirrored, std::vector<std::string>{"0:0", "1:1"}},
                                        std::pair{LogicalView::kConsistent, std::vector<std::string>{"2:0"}}}) {
      try {
        session.Compile(job(view == LogicalView::kMirrored ? "bad_mirrored" : "bad_consistent", view, devices));
        seen.push_back("(no error)");
      } catch (const std::invalid_argument& error) {
        seen.push_back(error.what());
      }
    }
    return seen;
  });
  for (const auto& seen : results) {
    CHECK(seen[0] == "[2, 4, 6, 8]");
    CHECK(seen[1] == "on device 1");
    CHECK(seen[2] == "[2, 4, 6, 8]");  // made in rank 1, returned in both
    CHECK(seen[3].find("a mirrored job runs in each of the 2 processes on its own devices: name the same devices on "
                       "every machine") != std::string::npos);
    CHECK(seen[4].find("is placed on cpu \"2:0\", but the session has 2 machines (processes 0-1) with 2 devices each") !=
          std::string::npos);
  }
}

TEST_CASE("sessions across processes: bad options name the field") {
  SessionOptions options;
  options.distributed.world_size = 2;
  options.distributed.rank = 2;
  CHECK_THROWS_WITH_AS(Session{options}, doctest::Contains("[DistributedOptions] rank: expected 0 <= rank < world_size=2, got 2"),
                       std::invalid_argument);
  options.distributed.rank = 0;
  options.distributed.collectives = "mpi";
  CHECK_THROWS_WITH_AS(Session{options},
                       doctest::Contains("[DistributedOptions] collectives: expected \"auto\", \"shm\" or \"gloo\", got \"mpi\""),
                       std::invalid_argument);
}

TEST_CASE("sessions across processes: the job token comes from the options or WEIR_JOB_TOKEN, and must match") {
  Watchdog dog(60s);
  SessionOptions remote = RankOptions(0, 2, 29500, "auto");
  remote.distributed.master_addr = "10.255.255.1";
  unsetenv("WEIR_JOB_TOKEN");
  CHECK_THROWS_WITH_AS(Session{remote},
                       doctest::Contains("no job token, and master_addr 10.255.255.1 is not a loopback address: set "
                                         "WEIR_JOB_TOKEN to the same secret on every machine"),
                       std::invalid_argument);

  // Rank 0 has the token in its options, rank 1 from the environment (the threads share it).
  setenv("WEIR_JOB_TOKEN", "t0k3n", 1);
  const int port = FreePort();
  const auto ranks = OnRanks<int>(2, [port](int rank) {
    SessionOptions options = RankOptions(rank, 2, port, "auto");
    if (rank == 0) options.distributed.job_token = "t0k3n";
    Session session(options);
    return session.GetResource().processes;
  });
  CHECK(ranks == std::vector<int>{2, 2});

  // Rank 1's token differs: it is refused at once, and rank 0 waits for a rank 1 that never registers.
  const int port2 = FreePort();
  using Outcome = std::pair<std::string, double>;  // the error, and the seconds it took
  const auto outcomes = OnRanks<Outcome>(2, [port2](int rank) -> Outcome {
    SessionOptions options = RankOptions(rank, 2, port2, "auto");
    options.distributed.rendezvous_timeout = rank == 0 ? 3s : 30s;
    options.distributed.job_token = rank == 0 ? "t0k3n" : "guess";
    const auto start = std::chrono::steady_clock::now();
    std::string error = "(no error)";
    try {
      Session session(options);
    } catch (const std::exception& e) {
      error = e.what();
    }
    return {error, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
  });
  unsetenv("WEIR_JOB_TOKEN");
  CHECK(outcomes[0].first.find("rank 1 never connected") != std::string::npos);
  CHECK(outcomes[1].first.find(fmt::format("the master 127.0.0.1:{} (rank 0) refused this rank: the job token did not match",
                                           port2)) != std::string::npos);
  CHECK(outcomes[1].second < 10.0);  // no retry until its 30 s rendezvous timeout
}

TEST_CASE("sessions across processes: the options weir-launch's environment gives") {
  for (const char* name : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "WEIR_RDZV_TIMEOUT", "WEIR_COLLECTIVES"}) {
    unsetenv(name);
  }
  CHECK(DistributedOptions::FromEnvironment().world_size == 1);  // no WORLD_SIZE: one process
  setenv("WORLD_SIZE", "4", 1);
  setenv("RANK", "3", 1);
  setenv("MASTER_ADDR", "10.0.0.1", 1);
  setenv("MASTER_PORT", "29555", 1);
  setenv("WEIR_RDZV_TIMEOUT", "7", 1);
  setenv("WEIR_COLLECTIVES", "gloo", 1);
  setenv("WEIR_JOB_TOKEN", "s3cret", 1);
  const DistributedOptions options = DistributedOptions::FromEnvironment();
  CHECK(options.world_size == 4);
  CHECK(options.rank == 3);
  CHECK(options.master_addr == "10.0.0.1");
  CHECK(options.master_port == 29555);
  CHECK(options.rendezvous_timeout == 7s);
  CHECK(options.collectives == "gloo");
  CHECK(options.job_token == "s3cret");
  setenv("RANK", "4", 1);
  CHECK_THROWS_WITH_AS(DistributedOptions::FromEnvironment(),
                       "[distributed] environment variable RANK: expected an integer in [0, 3], got '4'",
                       std::invalid_argument);
  setenv("RANK", "0", 1);
  setenv("MASTER_PORT", "http", 1);
  CHECK_THROWS_WITH_AS(DistributedOptions::FromEnvironment(),
                       "[distributed] environment variable MASTER_PORT: expected an integer in [1, 65535], got 'http'",
                       std::invalid_argument);
  for (const char* name :
       {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "WEIR_RDZV_TIMEOUT", "WEIR_COLLECTIVES", "WEIR_JOB_TOKEN"}) {
    unsetenv(name);
  }
}

TEST_CASE("sessions across processes: a rank that never comes to a collective is named, and closing takes seconds") {
  Watchdog dog(90s);
  for (const std::string collectives : {"shm", "gloo"}) {
    CAPTURE(collectives);
    const int port = FreePort();
    std::promise<void> rank0_done;
    std::shared_future<void> rank0_finished = rank0_done.get_future().share();
    using Outcome = std::pair<std::string, double>;  // rank 0's error, and seconds from its call to its session's end
    const auto outcomes = OnRanks<Outcome>(2, [&](int rank) -> Outcome {
      SessionOptions options = RankOptions(rank, 2, port, collectives);
      options.distributed.collective_timeout = 2s;
      options.distributed.rendezvous_timeout = 60s;  // what closing would wait without the failure
      const Job job = TrainJob("train", Model::kMlp, 6, LogicalView::kMirrored, Sgd(PiecewiseConstantScheduler({}, {0.1})));
      std::string error;
      const auto start = std::chrono::steady_clock::now();
      {
        Session session(options);
        session.Compile(job);
        if (rank == 1) {  // stuck in its own code: never calls, and closes only once rank 0 has given up
          rank0_finished.wait();
          return {"", 0.0};
        }
        try {
          session.Call(job, {RandomImages(ImageShape(Model::kMlp, 6), 1), RandomLabels(6, 2)});
        } catch (const std::exception& e) {
          error = e.what();
        }
      }
      const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      rank0_done.set_value();
      return {error, took};
    });
    const auto& [error, took] = outcomes[0];
    INFO(error);
    CHECK(error.find("timed out after 2000 ms: rank 1 did not reach it") != std::string::npos);
    // The collective timeout, a second for the other ranks' word, kCloseAfterFailure, and slack.
    CHECK(took < 2 + 1 + 3 + 3);
  }
}

TEST_CASE("sessions across processes: ranks that make different numbers of calls fail at once, saying so") {
  Watchdog dog(90s);
  for (const std::string collectives : {"shm", "gloo"}) {
    CAPTURE(collectives);
    const int port = FreePort();
    using Outcome = std::pair<std::string, double>;  // rank 1's last error, and how long its last call took
    const auto outcomes = OnRanks<Outcome>(2, [&](int rank) -> Outcome {
      SessionOptions options = RankOptions(rank, 2, port, collectives);
      options.distributed.collective_timeout = 60s;  // what the extra call would wait without the notice
      const Job job = TrainJob("train", Model::kMlp, 6, LogicalView::kMirrored, Sgd(PiecewiseConstantScheduler({}, {0.1})));
      Session session(options);
      const int calls = rank == 0 ? 3 : 4;  // rank 1 makes one call more (a loop bounded by time)
      for (int call = 1; call <= calls; ++call) {
        const auto start = std::chrono::steady_clock::now();
        try {
          session.Call(job, {RandomImages(ImageShape(Model::kMlp, 6), 1), RandomLabels(6, 2)});
        } catch (const std::exception& e) {
          return {e.what(), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
        }
      }
      return {"", 0.0};
    });
    CHECK(outcomes[0].first.empty());
    const auto& [error, took] = outcomes[1];
    INFO(error);
    CHECK(error.find("rank 0 closed its session after 3 calls of job 'train'; rank 1 is in call 4 of job 'train'") !=
          std::string::npos);
    CHECK(took < 2);  // not the 60 s collective timeout
  }
}
