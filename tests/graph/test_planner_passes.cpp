// The planner's passes (src/graph/planner/), each tested alone on its own input.
#include <doctest/doctest.h>

#include <any>
#include <limits>

#include "graph/planner.hpp"
#include "graph/planner/boxing.hpp"
#include "graph/planner/gradient_averaging.hpp"
#include "graph/planner/liveness.hpp"
#include "graph/planner/lowering.hpp"
#include "graph/planner/node_lowering.hpp"
#include "graph/planner/placement.hpp"
#include "graph/planner/register_sizing.hpp"
#include "graph/planner/sbp_choice.hpp"
#include "graph/planner/unread_inputs.hpp"
#include "kernels/collectives/collective_attrs.hpp"
#include "weir/weir.hpp"

using namespace weir;
using internal::CollectiveAttrs;
using internal::ReduceOp;
using internal::Placed;
using internal::Sbp;
using internal::TensorMeta;

namespace {

const internal::JobGraph& GraphOf(const Job& job) { return *job.Graph(); }

int NodeNamed(const internal::JobGraph& graph, const std::string& name) {
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (graph.nodes[n].name == name) return static_cast<int>(n);
  }
  FAIL("no node ", name);
  return -1;
}

internal::Topology TopologyOf(const internal::JobGraph& graph, int devices, int processes = 1) {
  internal::PlanOptions options;
  options.devices = devices;
  options.processes = processes;
  return internal::Topology::Of(graph, options);
}

}  // namespace

TEST_CASE("liveness: an op no output needs is dead; an op without outputs is live for its side effect") {
  JobBuilder builder("live");
  Blob x = builder.Placeholder("x", Shape{4});
  Blob dead = Relu(x);
  builder.Output("y", Sigmoid(x));
  const Job job = builder.Build();
  const internal::JobGraph& graph = GraphOf(job);
  const std::vector<bool> live = internal::LiveNodes(graph);
  CHECK(live[static_cast<std::size_t>(graph.values[static_cast<std::size_t>(dead.ValueId())].producer)] == false);
  CHECK(live[static_cast<std::size_t>(graph.values[static_cast<std::size_t>(x.ValueId())].producer)]);
  CHECK(std::count(live.begin(), live.end(), true) == 2);  // x and the sigmoid
}

TEST_CASE("placement: the default is every device; a placement names its devices; devices the session lacks are refused") {
  JobBuilder builder("placed");
  Blob x = builder.Placeholder("x", Shape{4});
  Blob y;
  {
    ScopedPlacement stage(builder, Placement("cpu", {"0:1"}));
    y = Relu(x);
  }
  builder.Output("y", y);
  const Job job = builder.Build();
  const internal::JobGraph& graph = GraphOf(job);
  const std::vector<bool> live = internal::LiveNodes(graph);
  const auto devices = internal::PlaceNodes(graph, live, TopologyOf(graph, 2));
  CHECK(devices[static_cast<std::size_t>(NodeNamed(graph, "x"))] == std::vector<int>{0, 1});
  CHECK(devices[static_cast<std::size_t>(graph.values[static_cast<std::size_t>(y.ValueId())].producer)] == std::vector<int>{1});
  CHECK_THROWS_WITH_AS(internal::PlaceNodes(graph, live, TopologyOf(graph, 1)),
                       "[placement] job 'placed': op 'relu_0' is placed on cpu \"0:1\", but the session has one machine (0) "
                       "with 1 device (0:0); set the device count with SessionOptions::cpu_devices (flow.config.cpu_device_num)",
                       std::invalid_argument);
}

TEST_CASE("placement: a mirrored job across processes names the same devices on every machine") {
  JobBuilder builder("mirrored", JobType::kPredict, JobConfig{.view = LogicalView::kMirrored});
  Blob x = builder.Placeholder("x", Shape{4});
  Blob y;
  {
    ScopedPlacement stage(builder, Placement("cpu", {"0:0", "1:1"}));
    y = Relu(x);
  }
  builder.Output("y", y);
  const Job job = builder.Build();
  const internal::JobGraph& graph = GraphOf(job);
  CHECK_THROWS_WITH_AS(internal::PlaceNodes(graph, internal::LiveNodes(graph), TopologyOf(graph, 2, 2)),
                       doctest::Contains("name the same devices on every machine"), std::invalid_argument);
}

TEST_CASE("SBP choice: the signature that moves the fewest bytes, all-broadcast on a tie or on one device") {
  const TensorMeta x{Shape{8, 4}, DType::kF32};
  const TensorMeta w{Shape{4, 2}, DType::kF32};
  const TensorMeta y{Shape{8, 2}, DType::kF32};
  const std::any attrs = MatMulAttrs{};
  const Placed whole{{0}, {0}, false, Sbp::B()};
  const Placed rows{{1, 2}, {0, 1}, false, Sbp::S(0)};
  internal::SignatureQuery query{"matmul", &attrs, {{"x", x, whole}, {"w", w, whole}}, {y}, {0, 1}};
  // Whole inputs: slicing x costs a little, so the op stays whole.
  CHECK(internal::ChooseSignature(query) == internal::SbpSignature{{Sbp::B(), Sbp::B()}, {Sbp::B()}});
  // x already in rows: data parallel, no boxing.
  query.inputs[0].placed = rows;
  CHECK(internal::ChooseSignature(query) == internal::SbpSignature{{Sbp::S(0), Sbp::B()}, {Sbp::S(0)}});
  // One device: always whole.
  query.devices = {0};
  CHECK(internal::ChooseSignature(query) == internal::SbpSignature{{Sbp::B(), Sbp::B()}, {Sbp::B()}});
}

TEST_CASE("SBP choice: an update runs whole only cannot write a split variable in place") {
  const TensorMeta p{Shape{8, 4}, DType::kF32};
  const TensorMeta scalar{Shape{}, DType::kF32};
  const Placed rows{{1, 2}, {0, 1}, false, Sbp::S(0)};
  const Placed whole{{0}, {0}, false, Sbp::B()};
  internal::SignatureQuery query{"lamb_update", nullptr,
                                 {{"w", p, rows}, {"g", p, whole}, {"lr", scalar, whole}, {"m", p, whole},
                                  {"v", p, whole}, {"step", {Shape{}, DType::kI64}, whole}},
                                 {}, {0, 1}};
  CHECK_THROWS_WITH_AS(internal::ChooseSignature(query),
                       "[lamb_update] cannot update 'w' in place: it is S(0) over 2 devices and the op runs only whole "
                       "(use an elementwise optimizer such as SGD, momentum, Adam or RMSProp with split variables)",
                       std::invalid_argument);
}

TEST_CASE("boxing cost: bytes moved between devices") {
  const std::vector<int> two{0, 1};
  CHECK(internal::BoxingCost({{0, 1}, two, false, Sbp::S(0)}, 800, Sbp::S(0), two) == 0.0);
  CHECK(internal::BoxingCost({{0}, {0}, false, Sbp::B()}, 800, Sbp::B(), two) == 0.0);
  CHECK(internal::BoxingCost({{0, 1}, two, false, Sbp::P()}, 800, Sbp::S(0), two) == doctest::Approx(400));  // reduce-scatter
  CHECK(internal::BoxingCost({{0, 1}, two, false, Sbp::P()}, 800, Sbp::B(), two) == doctest::Approx(800));  // all-reduce
  CHECK(internal::BoxingCost({{0, 1}, two, false, Sbp::S(0)}, 800, Sbp::S(1), two) == doctest::Approx(200));  // all-to-all
  CHECK(internal::BoxingCost({{0}, {0}, false, Sbp::B()}, 800, Sbp::S(0), two) == doctest::Approx(4));  // a local slice
  CHECK(internal::BoxingCost({{0}, {0}, false, Sbp::B()}, 800, Sbp::P(), two) == std::numeric_limits<double>::infinity());
}

TEST_CASE("gradient averaging: buckets of the threshold's bytes, one all-reduce each, chained in order") {
  JobBuilder builder("buckets", JobType::kPredict, JobConfig{.view = LogicalView::kMirrored});
  for (const char* name : {"a", "b", "c"}) builder.Output(name, builder.Placeholder(name, Shape{16}));  // 64 bytes each
  const Job job = builder.Build();
  const internal::JobGraph& graph = GraphOf(job);
  internal::PlanOptions options;
  options.devices = 2;
  options.processes = 2;
  options.fusion_threshold_bytes = 128;
  internal::Plan plan;
  internal::Lowering lowering(graph, options, internal::Topology::Of(graph, options), plan);
  const std::vector<bool> live = internal::LiveNodes(graph);
  const auto devices = internal::PlaceNodes(graph, live, lowering.topology);
  lowering.SetInputPieces({2, 2, 2});
  internal::Boxing boxing(lowering);
  internal::GradientAveraging averaging(lowering, boxing);
  internal::LowerNodes(lowering, live, devices, internal::ChooseFusedKernels(graph, live, lowering.topology, options),
                       boxing, averaging);
  const std::vector<int>& values = graph.placeholder_values;
  for (int value : values) CHECK(lowering.PlacedOf(value).registers.size() == 2);  // a piece per device

  for (int value : values) averaging.AddToBucket(value);
  CHECK(averaging.BucketHolds({values[2]}));
  REQUIRE(boxing.Collectives().size() == 1);  // a and b: 128 bytes
  averaging.CloseBucket();
  REQUIRE(boxing.Collectives().size() == 2);  // c
  const auto& first = std::any_cast<const CollectiveAttrs&>(*plan.tasks[static_cast<std::size_t>(boxing.Collectives()[0])].attrs);
  const auto& second = std::any_cast<const CollectiveAttrs&>(*plan.tasks[static_cast<std::size_t>(boxing.Collectives()[1])].attrs);
  CHECK(first.tensors == 2);
  CHECK(second.tensors == 1);
  CHECK(first.across_processes);
  CHECK(first.op == ReduceOp::kMean);
  // The second waits for the first (a control edge): every process runs them in one order.
  const internal::TaskDesc& later = plan.tasks[static_cast<std::size_t>(boxing.Collectives()[1])];
  CHECK(std::any_of(later.consumed.begin(), later.consumed.end(), [&](int reg) {
    return plan.registers[static_cast<std::size_t>(reg)].producer == boxing.Collectives()[0];
  }));
  // Averaged: one register every device reads.
  for (int value : values) CHECK(lowering.PlacedOf(value).registers.size() == 1);
}

TEST_CASE("register sizing: a register read on another device has two slots") {
  internal::Plan plan;
  plan.streams = {{Device::Cpu(), internal::StreamKind::kCompute, 0}, {Device{Device::Kind::kCpu, 1}, internal::StreamKind::kCompute, 0}};
  const int a = plan.AddTask(internal::TaskKind::kKernel, "a", 0);
  const int b = plan.AddTask(internal::TaskKind::kKernel, "b", 0);
  const int c = plan.AddTask(internal::TaskKind::kKernel, "c", 1);
  const int local = plan.AddRegister("local", a, 1, {Shape{4}, DType::kF32});
  const int crossing = plan.AddRegister("crossing", b, 1, {Shape{4}, DType::kF32});
  plan.Consume(b, local);
  plan.Consume(c, crossing);
  plan.AddControlEdge(a, c);  // zero bytes: nothing to pipeline
  internal::SizePipelineRegisters(plan);
  CHECK(plan.registers[static_cast<std::size_t>(local)].register_num == 1);
  CHECK(plan.registers[static_cast<std::size_t>(crossing)].register_num == 2);
  CHECK(plan.registers.back().register_num == 1);
}

TEST_CASE("unread inputs: an input actor nobody reads is removed, the rest renumbered") {
  internal::Plan plan;
  plan.streams = {{Device::Cpu(), internal::StreamKind::kCompute, 0}};
  plan.source_task = plan.AddTask(internal::TaskKind::kSourceTick, "source_tick", 0);
  const int tick = plan.AddRegister("tick", plan.source_task, 2, {Shape{0}, DType::kU8});
  const int unread = plan.AddTask(internal::TaskKind::kInput, "unread", 0);
  plan.Consume(unread, tick);
  plan.AddRegister("unread", unread, 2, {Shape{4}, DType::kF32});
  const int read = plan.AddTask(internal::TaskKind::kInput, "read", 0);
  plan.Consume(read, tick);
  const int value = plan.AddRegister("read", read, 2, {Shape{4}, DType::kF32});
  plan.sink_task = plan.AddTask(internal::TaskKind::kSink, "sink", 0);
  plan.Consume(plan.sink_task, value);
  internal::DropUnreadInputsAndVariables(plan);
  REQUIRE(plan.tasks.size() == 3);
  CHECK(plan.tasks[1].name == "read");
  CHECK(plan.sink_task == 2);
  CHECK(plan.registers[static_cast<std::size_t>(plan.tasks[1].produced.front())].consumers == std::vector<int>{2});
  CHECK_NOTHROW(plan.CheckEveryTaskReachesSink());
}

TEST_CASE("outputs: the sink reads a reshape's register (its input's) in the reshape's shape") {
  JobBuilder builder("reshaped");
  Blob x = builder.Placeholder("x", Shape{2, 3});
  builder.Output("y", Reshape(x, {.shape = {3, -1}}));
  const Job job = builder.Build();
  const auto plan = internal::CompilePlan(job.Graph(), {});
  const internal::TaskDesc& sink = plan->tasks[static_cast<std::size_t>(plan->sink_task)];
  REQUIRE(sink.input_metas.size() == 1);
  CHECK(sink.input_metas[0].shape == Shape{3, 2});
  CHECK(plan->registers[static_cast<std::size_t>(sink.consumed[static_cast<std::size_t>(sink.input_slots[0])])].meta.shape ==
        Shape{2, 3});  // no copy: the placeholder's register
}
