// Plan-time fusion (graph/fusion.hpp): conv2d or matmul + bias_add [+ relu] run as one kernel with
// the same results as the ops one by one (checked against f64 jobs, which never fuse), and chains
// whose intermediate values the job returns stay unfused.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>

#include "weir/weir.hpp"

using namespace weir;

namespace {

Tensor Random(Shape shape, DType dtype, unsigned seed) {
  Tensor t(std::move(shape), dtype);
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) {
    if (dtype == DType::kF32) t.Data<float>()[i] = static_cast<float>(uniform(random));
    else t.Data<double>()[i] = uniform(random);
  }
  return t;
}

Tensor ToF64(const Tensor& t) {
  Tensor out(t.GetShape(), DType::kF64);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) out.Data<double>()[i] = t.Data<float>()[i];
  return out;
}

double MaxDifference(const Tensor& f32, const Tensor& f64) {
  REQUIRE(f32.GetShape() == f64.GetShape());
  double worst = 0;
  for (std::int64_t i = 0; i < f32.NumElements(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(f32.Data<float>()[i]) - f64.Data<double>()[i]));
  }
  return worst;
}

int Count(const std::string& text, const std::string& word) {
  int count = 0;
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++count;
  return count;
}

// (x, w, b) constants of `dtype`; y = act(op(x, w) + b) for a conv (NCHW or NHWC) or a matmul.
struct Case {
  std::string op;
  DataFormat format = DataFormat::kNCHW;
  bool relu = true;
  bool return_intermediate = false;
};

Job MakeJob(const Case& c, DType dtype) {
  JobBuilder builder("fused_" + c.op);
  const bool conv = c.op == "conv2d";
  const bool nhwc = c.format == DataFormat::kNHWC;
  const Shape x_shape = conv ? (nhwc ? Shape{3, 9, 9, 4} : Shape{3, 4, 9, 9}) : Shape{5, 7};
  const Shape w_shape = conv ? (nhwc ? Shape{6, 3, 3, 4} : Shape{6, 4, 3, 3}) : Shape{7, 6};
  const Blob x = builder.Placeholder("x", x_shape, dtype);
  const Blob w = builder.Constant(Random(w_shape, dtype, 2));
  const Blob b = builder.Constant(Random(Shape{6}, dtype, 3));
  const Blob product = conv ? Conv2D(x, w, {.padding = SamePadding(), .data_format = c.format}) : MatMul(x, w);
  const Blob biased = BiasAdd(product, b, {.axis = conv && nhwc ? 3 : 1});
  builder.Output("y", c.relu ? Relu(biased) : biased);
  if (c.return_intermediate) builder.Output("product", product);
  return builder.Build();
}

void CheckCase(const Case& c, bool expect_fused) {
  CAPTURE(c.op);
  CAPTURE(c.relu);
  const Shape x_shape = MakeJob(c, DType::kF32).Placeholders()[0].shape;
  const Tensor x = Random(x_shape, DType::kF32, 1);
  Session session;
  const Job f32 = MakeJob(c, DType::kF32);
  const Job f64 = MakeJob(c, DType::kF64);
  const std::string fused_type = c.op + "_bias_act";
  CHECK(Count(session.PlanDot(f32), fused_type) == (expect_fused ? 1 : 0));
  CHECK(Count(session.PlanDot(f64), fused_type) == 0);
  const Outputs got = session.Call(f32, {x});
  const Outputs want = session.Call(f64, {ToF64(x)});
  CHECK(MaxDifference(got["y"], want["y"]) < 1e-4);
  if (c.relu) {
    int positive = 0, zero = 0;  // the relu really applied: both sides of it occur
    for (std::int64_t i = 0; i < got["y"].NumElements(); ++i) (got["y"].Data<float>()[i] > 0 ? positive : zero)++;
    CHECK(positive > 0);
    CHECK(zero > 0);
  }
  if (c.return_intermediate) CHECK(MaxDifference(got["product"], want["product"]) < 1e-4);
}

}  // namespace

TEST_CASE("conv2d + bias_add + relu runs fused, NCHW and NHWC, with and without the relu") {
  CheckCase({.op = "conv2d", .format = DataFormat::kNCHW}, true);
  CheckCase({.op = "conv2d", .format = DataFormat::kNHWC}, true);
  CheckCase({.op = "conv2d", .format = DataFormat::kNCHW, .relu = false}, true);
}

TEST_CASE("matmul + bias_add + relu runs fused") {
  CheckCase({.op = "matmul"}, true);
  CheckCase({.op = "matmul", .relu = false}, true);
}

TEST_CASE("a chain whose intermediate value the job returns is not fused") {
  CheckCase({.op = "matmul", .return_intermediate = true}, false);
  CheckCase({.op = "conv2d", .return_intermediate = true}, false);
}

TEST_CASE("a fused dense layer and its fused SGD step train as the unfused f64 ones do") {
  // Two steps of relu(x w + b) -> sum with a decaying learning rate: the variables after them
  // match the f64 job's. Plain SGD runs w's gradient matmul and its update as one kernel;
  // momentum and a regularizer keep them apart.
  struct Setup {
    const char* what;
    double momentum;
    Regularizer regularizer;
    int fused_updates;
  };
  for (const Setup& setup : {Setup{"sgd", 0.0, {}, 1}, Setup{"momentum", 0.9, {}, 0}, Setup{"sgd+l2", 0.0, L2(0.1), 0}}) {
    CAPTURE(setup.what);
    std::map<std::string, Tensor> variables[2];
    Tensor initial_w;
    for (int f = 0; f < 2; ++f) {
      const DType dtype = f == 0 ? DType::kF32 : DType::kF64;
      JobBuilder builder("train_dense", JobType::kTrain);
      const Blob x = builder.Placeholder("x", Shape{8, 5}, dtype);
      VariableSpec spec{.shape = Shape{5, 4}, .dtype = dtype, .initializer = RandomUniformInitializer(-1, 1),
                        .regularizer = setup.regularizer};
      const Blob w = builder.Variable("w", spec);
      spec.shape = Shape{4};
      const Blob b = builder.Variable("b", spec);
      const Blob loss = ReduceSum(Relu(BiasAdd(MatMul(x, w), b)));
      builder.Minimize(Sgd(PiecewiseConstantScheduler({1}, {0.1, 0.03}), setup.momentum), loss);
      builder.Output("loss", loss);
      const Job job = builder.Build();
      SessionOptions options;
      options.seed = 3;
      Session session(options);
      Tensor input = Random(Shape{8, 5}, DType::kF32, 4);
      if (f == 1) input = ToF64(input);
      if (f == 0) {
        session.Compile(job);
        initial_w = ToF64(session.GetVariable("w"));
        const std::string dot = session.PlanDot(job);
        CHECK(Count(dot, "matmul_bias_act") == 1);
        CHECK(Count(dot, "matmul_sgd_update") == setup.fused_updates);
      }
      for (int step = 0; step < 3; ++step) session.Call(job, {input});
      variables[f] = session.GetVariables();
    }
    CHECK(MaxDifference(variables[0].at("w"), variables[1].at("w")) < 1e-5);
    CHECK(MaxDifference(variables[0].at("b"), variables[1].at("b")) < 1e-5);
    CHECK(MaxDifference(variables[0].at("w"), initial_w) > 1e-3);  // the steps moved w
  }
}
