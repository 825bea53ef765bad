// Ops added by name with attributes by name (graph/attrs_by_name.hpp, AddOpByName): what the Python
// binding's add_op does for every op.
#include <doctest/doctest.h>

#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "weir/weir.hpp"

using namespace weir;
using internal::AttrMap;

TEST_CASE("an op added by name reads its attributes; those left out keep their defaults") {
  JobBuilder builder("by_name");
  Blob labels = builder.Placeholder("labels", Shape{4}, DType::kI32);
  const std::vector<Blob> out = internal::AddOpByName(
      "one_hot", {labels}, AttrMap{{"depth", std::int64_t{5}}, {"on_value", std::int64_t{2}}, {"dtype", DType::kF64}}, "hot");
  REQUIRE(out.size() == 1);
  CHECK(out[0].GetShape() == Shape{4, 5});
  CHECK(out[0].GetDType() == DType::kF64);
  const internal::JobGraph& graph = *labels.Graph();
  const auto& attrs = std::any_cast<const OneHotAttrs&>(graph.nodes.back().attrs);
  CHECK(attrs.on_value == 2.0);   // an int where a float is expected
  CHECK(attrs.off_value == 0.0);  // the default

  Blob x = builder.Placeholder("x", Shape{1, 3, 8, 8});
  const Blob pooled = internal::AddOpByName("max_pool2d", {x},
                                            AttrMap{{"ksize", std::vector<std::int64_t>{2, 2}},
                                                    {"strides", std::vector<std::int64_t>{2, 2}},
                                                    {"padding", std::string("SAME")}, {"data_format", std::string("NCHW")}},
                                            "")[0];
  CHECK(pooled.GetShape() == Shape{1, 3, 4, 4});
  const Blob unary = internal::AddOpByName("unary", {x}, AttrMap{{"kind", std::string("log1p")}}, "")[0];
  CHECK(std::any_cast<const UnaryAttrs&>(graph.nodes.back().attrs).kind == UnaryOpKind::kLog1p);
  CHECK(unary.GetShape() == x.GetShape());
}

TEST_CASE("attributes by name: unknown ops, unknown names and wrong types are errors naming the op and the attribute") {
  JobBuilder builder("by_name_errors");
  Blob x = builder.Placeholder("x", Shape{2, 3});
  const std::size_t nodes = x.Graph()->nodes.size();
  CHECK_THROWS_WITH_AS(internal::AddOpByName("no_such_op", {x}, {}, ""), "[no_such_op] unknown op type",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(internal::AddOpByName("matmul", {x, x}, AttrMap{{"transpose", true}}, ""),
                       "[matmul] has no attribute 'transpose' (its attributes: transpose_a, transpose_b, alpha)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(internal::AddOpByName("identity", {x}, AttrMap{{"alpha", 0.1}}, ""),
                       "[identity] has no attribute 'alpha' (its attributes: none)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(internal::AddOpByName("softmax", {x}, AttrMap{{"axis", 1.5}}, ""),
                       "[softmax] attribute 'axis': expected an int, got a float", std::invalid_argument);
  CHECK_THROWS_WITH_AS(internal::AddOpByName("unary", {x}, AttrMap{{"kind", std::string("cube")}}, ""),
                       doctest::Contains("[unary] attribute 'kind': expected one of exp, log, sqrt"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(internal::AddOpByName("conv2d", {x, x}, AttrMap{{"strides", std::vector<std::int64_t>{1, 1, 1}}}, ""),
                       "[conv2d] attribute 'strides': expected a list of 2 ints, got 3 of them", std::invalid_argument);
  CHECK_THROWS_WITH_AS(internal::AddOpByName("max_pool2d", {x}, AttrMap{{"padding", std::string("FULL")}}, ""),
                       "[max_pool2d] attribute 'padding': expected 'VALID', 'SAME' or explicit pads [top, bottom, left, right], got 'FULL'",
                       std::invalid_argument);
  CHECK(x.Graph()->nodes.size() == nodes);  // nothing half-done
}

TEST_CASE("batch_norm added by name adds its moving update when training, as BatchNorm does") {
  JobBuilder builder("by_name_batch_norm", JobType::kPredict);
  Blob x = builder.Placeholder("x", Shape{2, 3});
  const auto variable = [&](const char* name) { return builder.Variable(name, {.shape = Shape{3}}); };
  const std::vector<Blob> inputs{x, variable("gamma"), variable("beta"), variable("mean"), variable("var")};
  const std::size_t before = x.Graph()->nodes.size();
  internal::AddOpByName("batch_norm", inputs, AttrMap{{"axis", std::int64_t{1}}, {"training", true}}, "bn");
  const internal::JobGraph& graph = *x.Graph();
  REQUIRE(graph.nodes.size() == before + 2);
  CHECK(graph.nodes.back().type == "batch_norm_moving_update");
}
