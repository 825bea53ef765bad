// Building jobs: inference while building, errors that name the op and show shapes, and plans.
#include <doctest/doctest.h>

#include "graph/planner.hpp"
#include "weir/weir.hpp"

using namespace weir;

TEST_CASE("ops infer shapes and dtypes while the job is built") {
  JobBuilder builder("mlp", JobType::kPredict, JobConfig{.default_dtype = DType::kF64});
  Blob x = builder.Placeholder("x", Shape{100, 784});
  CHECK(x.GetDType() == DType::kF64);
  CHECK(x.Name() == "x");
  Blob w = builder.Constant(Tensor(Shape{784, 512}, DType::kF64), "w");
  Blob h = Relu(MatMul(x, w, {}, "hidden"));
  CHECK(h.GetShape() == Shape{100, 512});
  CHECK(h.GetDType() == DType::kF64);
  Blob t = MatMul(x, x, {.transpose_a = true});
  CHECK(t.GetShape() == Shape{784, 784});
  CHECK(MatMul(w, x, {.transpose_a = true, .transpose_b = true}).GetShape() == Shape{512, 100});
  builder.Output("h", h);
  const Job job = builder.Build();
  CHECK(job.Name() == "mlp");
  CHECK(job.Placeholders().size() == 1);
  CHECK(job.Placeholders()[0].shape == Shape{100, 784});
}

TEST_CASE("inference errors name the op and show the shapes") {
  JobBuilder builder("bad");
  Blob x = builder.Placeholder("x", Shape{100, 784});
  Blob w = builder.Placeholder("w", Shape{512, 10});
  CHECK_THROWS_WITH_AS(MatMul(x, w), "[matmul] inner dims differ: (100,784) vs (512,10)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(MatMul(x, w, {.transpose_b = true}), "[matmul] inner dims differ: (100,784) vs (512,10)^T",
                       std::invalid_argument);
  Blob i = builder.Placeholder("i", Shape{100, 784}, DType::kI32);
  CHECK_THROWS_WITH_AS(MatMul(x, i), "[matmul] dtypes differ: f32 vs i32", std::invalid_argument);
  CHECK_THROWS_WITH_AS(Relu(i), "[unary] relu expects a floating (f32 or f64) x, got i32", std::invalid_argument);
  CHECK_THROWS_WITH_AS(Relu(Blob()), "[unary] input 'x' is an undefined blob", std::invalid_argument);
}

TEST_CASE("builder misuse is refused") {
  JobBuilder builder("misuse");
  Blob x = builder.Placeholder("x", Shape{2});
  CHECK_THROWS_AS(builder.Placeholder("x", Shape{2}), std::invalid_argument);  // name taken
  CHECK_THROWS_AS(builder.Placeholder("", Shape{2}), std::invalid_argument);
  CHECK_THROWS_AS(builder.Build(), std::invalid_argument);  // no outputs

  JobBuilder other("other");
  Blob y = other.Placeholder("y", Shape{2});
  CHECK_THROWS_WITH_AS(MatMul(x, y), "[matmul] input 'b' belongs to another job", std::invalid_argument);
  CHECK_THROWS_AS(builder.Output("y", y), std::invalid_argument);

  builder.Output("x", Relu(x));
  CHECK_THROWS_AS(builder.Output("x", x), std::invalid_argument);  // output name taken
  const Job job = builder.Build();
  CHECK_THROWS_AS(Relu(x), std::logic_error);  // built jobs are immutable
  CHECK_THROWS_AS(JobBuilder(""), std::invalid_argument);
}

TEST_CASE("the planner gives every live op an actor, 2 slots on source edges, and 1 elsewhere") {
  JobBuilder builder("planned");
  Blob x = builder.Placeholder("x", Shape{4, 3});
  Blob unused = builder.Placeholder("unused", Shape{1});
  Relu(unused);  // dead: no output needs it
  Blob w = builder.Constant(Tensor(Shape{3, 2}, DType::kF32));
  builder.Output("y", Relu(MatMul(x, w)));
  const Job job = builder.Build();

  const auto plan = internal::CompilePlan(job.Graph(), {});
  // source tick, input x, constant, matmul, relu, sink
  REQUIRE(plan->tasks.size() == 6);
  CHECK(plan->tasks[static_cast<std::size_t>(plan->source_task)].kind == internal::TaskKind::kSourceTick);
  CHECK(plan->tasks[static_cast<std::size_t>(plan->sink_task)].kind == internal::TaskKind::kSink);
  for (const internal::RegisterDesc& reg : plan->registers) {
    const auto producer = plan->tasks[static_cast<std::size_t>(reg.producer)].kind;
    const bool source_edge = producer == internal::TaskKind::kSourceTick || producer == internal::TaskKind::kInput;
    CHECK(reg.register_num == (source_edge ? 2 : 1));
    CHECK(reg.slot_bytes == reg.meta.NumBytes());
    CHECK_FALSE(reg.consumers.empty());
  }
  CHECK(plan->RegisterBytes() == 2 * 48 + 24 + 32 + 32);
  const std::string dot = plan->ToDot();
  CHECK(dot.find("digraph \"planned\"") == 0);
  CHECK(dot.find("register_num=2") != std::string::npos);
  CHECK(dot.find("matmul") != std::string::npos);
}

TEST_CASE("compiling refuses jobs that cannot run") {
  JobBuilder train("train", JobType::kTrain);
  train.Output("x", Relu(train.Placeholder("x", Shape{2})));
  CHECK_THROWS_WITH_AS(train.Build(), "[build] job 'train' is a train job but has no optimizer: call Minimize(optimizer, loss)",
                       std::invalid_argument);

  JobBuilder f64("f64_matmul_ok");
  Blob a = f64.Placeholder("a", Shape{2, 2}, DType::kF64);
  f64.Output("y", MatMul(a, a));
  CHECK_NOTHROW(internal::CompilePlan(f64.Build().Graph(), {}));
}

TEST_CASE("slice infers Python's slice lengths and refuses a step of 0 or lists of another length") {
  JobBuilder builder("slices");
  Blob x = builder.Placeholder("x", Shape{4, 5});
  CHECK(Slice(x, {.start = {-1, 10}, .stop = {-5, -10}, .step = {-1, -2}}).GetShape() == Shape{4, 3});
  CHECK(Slice(x, {.start = {2, 0}, .stop = {1, 5}, .step = {1, 1}}).GetShape() == Shape{0, 5});
  CHECK_THROWS_WITH_AS(Slice(x, {.start = {0, 0}, .stop = {4, 5}, .step = {1, 0}}),
                       "[slice] step must not be 0: x is (4,5), got start [0,0], stop [4,5], step [1,0]",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Slice(x, {.start = {0}, .stop = {4}, .step = {1}}),
                       "[slice] start, stop and step need one entry per axis of x: x is (4,5), got start [0], stop [4], step [1]",
                       std::invalid_argument);
}
