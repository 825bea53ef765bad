// batch_norm: hand-computed cases, the f32 oneDNN kernels against the f64 reference loops on every
// axis, finite-difference gradients (training and inference), the moving statistics, the layer and
// its variables in train, predict and checkpointed sessions, and bad inputs.
#include <doctest/doctest.h>

#include <sys/types.h>
#include <unistd.h>

#include <any>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gradient_check.hpp"
#include "graph/job_graph.hpp"
#include "kernels/attrs/batch_norm_attrs.hpp"
#include "op_test_util.hpp"
#include "weir/weir.hpp"

using namespace weir;
using weir::testing::CheckClose;
using weir::testing::CheckGradients;
using weir::testing::RunOp;

namespace {

std::mt19937& Rng() {
  static std::mt19937 rng(11);
  return rng;
}

Tensor RandomF32(Shape shape, float low = -1.f, float high = 1.f) {
  Tensor t(std::move(shape), DType::kF32);
  std::uniform_real_distribution<float> uniform(low, high);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) t.Data<float>()[i] = uniform(Rng());
  return t;
}

Tensor ToF64(const Tensor& t) {
  Tensor out(t.GetShape(), DType::kF64);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) out.Data<double>()[i] = t.Data<float>()[i];
  return out;
}

Tensor Full(Shape shape, double value, DType dtype = DType::kF32) {
  Tensor t(std::move(shape), dtype);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) {
    if (dtype == DType::kF32) t.Data<float>()[i] = static_cast<float>(value);
    else t.Data<double>()[i] = value;
  }
  return t;
}

void CheckNear(const Tensor& f32, const Tensor& f64, double tolerance) {
  REQUIRE(f32.GetShape() == f64.GetShape());
  int failures = 0;
  for (std::int64_t i = 0; i < f32.NumElements() && failures < 5; ++i) {
    const double a = f32.Data<float>()[i];
    const double b = f64.Data<double>()[i];
    if (std::abs(a - b) > tolerance * (1 + std::abs(b))) {
      ++failures;
      FAIL_CHECK("element ", i, ": f32 ", a, " vs f64 ", b);
    }
  }
}

// Per-channel mean and biased variance of x viewed as (outer, C, inner).
struct Moments {
  std::vector<double> mean, variance;
};
Moments ChannelMoments(const Tensor& x, int axis) {
  const Shape& s = x.GetShape();
  std::int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= s[i];
  for (int i = axis + 1; i < s.Rank(); ++i) inner *= s[i];
  const std::int64_t channels = s[axis];
  Moments m{std::vector<double>(static_cast<std::size_t>(channels)), std::vector<double>(static_cast<std::size_t>(channels))};
  const auto value = [&](std::int64_t i) {
    return x.GetDType() == DType::kF32 ? static_cast<double>(x.Data<float>()[i]) : x.Data<double>()[i];
  };
  for (std::int64_t c = 0; c < channels; ++c) {
    double sum = 0, squares = 0;
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < inner; ++i) sum += value((o * channels + c) * inner + i);
    const double mean = sum / static_cast<double>(outer * inner);
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < inner; ++i) {
        const double d = value((o * channels + c) * inner + i) - mean;
        squares += d * d;
      }
    m.mean[static_cast<std::size_t>(c)] = mean;
    m.variance[static_cast<std::size_t>(c)] = squares / static_cast<double>(outer * inner);
  }
  return m;
}

// A fresh folder under the system temp folder, removed with everything in it.
class ScratchDir {
 public:
  ScratchDir() : path_(std::filesystem::temp_directory_path() / fmt::format("weir_test_batch_norm-{}", ::getpid())) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace

TEST_CASE("batch_norm by hand: training normalizes with the batch statistics, inference with the moving ones") {
  // (4, 2), channels on axis 1: channel 0 {1,3,5,7} mean 4 var 5; channel 1 {10,20,30,40} mean 25 var 125.
  const std::vector<double> x{1, 10, 3, 20, 5, 30, 7, 40};
  const std::vector<double> gamma{2, 1}, beta{0.5, -1}, moving_mean{1, 2}, moving_variance{4, 9};
  const double epsilon = 1e-3;
  for (DType dtype : {DType::kF32, DType::kF64}) {
    INFO("dtype ", Name(dtype));
    const auto make = [&](Shape shape, const std::vector<double>& values) {
      Tensor t(std::move(shape), dtype);
      for (std::size_t i = 0; i < values.size(); ++i) {
        if (dtype == DType::kF32) t.Data<float>()[i] = static_cast<float>(values[i]);
        else t.Data<double>()[i] = values[i];
      }
      return t;
    };
    const std::vector<Tensor> inputs{make({4, 2}, x), make({2}, gamma), make({2}, beta), make({2}, moving_mean),
                                     make({2}, moving_variance)};
    std::vector<double> expected(8);
    const double mean[2] = {4, 25}, variance[2] = {5, 125};
    for (std::size_t i = 0; i < 8; ++i) {
      const std::size_t c = i % 2;
      expected[i] = gamma[c] * (x[i] - mean[c]) / std::sqrt(variance[c] + epsilon) + beta[c];
    }
    const auto train = RunOp("batch_norm", BatchNormAttrs{.axis = 1, .epsilon = epsilon, .training = true}, inputs);
    REQUIRE(train.size() == 3);
    const double tolerance = dtype == DType::kF32 ? 1e-5 : 1e-12;
    const auto check = [&](const Tensor& t, const Shape& shape, const std::vector<double>& values) {
      if (dtype == DType::kF32) CheckClose<float>(t, shape, values, tolerance);
      else CheckClose<double>(t, shape, values, tolerance);
    };
    check(train[0], {4, 2}, expected);
    check(train[1], {2}, {4, 25});
    check(train[2], {2}, {5, 125});  // biased
    for (std::size_t i = 0; i < 8; ++i) {
      const std::size_t c = i % 2;
      expected[i] = gamma[c] * (x[i] - moving_mean[c]) / std::sqrt(moving_variance[c] + epsilon) + beta[c];
    }
    const auto infer = RunOp("batch_norm", BatchNormAttrs{.axis = 1, .epsilon = epsilon, .training = false}, inputs);
    REQUIRE(infer.size() == 1);
    check(infer[0], {4, 2}, expected);

    // Backward by hand for channel 0 of training: x̂ = (x − 4)/sqrt(5.001), dy = 1 everywhere:
    // dbeta = 4, dgamma = Σx̂ = 0, dx = gamma·s·(1 − (4 + 0)/4) = 0.
    const Tensor dy = make({4, 2}, {1, 0, 1, 0, 1, 0, 1, 0});
    const auto grads = RunOp("batch_norm_grad", BatchNormAttrs{.axis = 1, .epsilon = epsilon, .training = true},
                             {dy, inputs[0], inputs[1], train[1], train[2]});
    check(grads[0], {4, 2}, {0, 0, 0, 0, 0, 0, 0, 0});
    check(grads[1], {2}, {0, 0});
    check(grads[2], {2}, {4, 0});
    // Inference: dx = gamma / sqrt(moving_variance + eps) · dy; dgamma = Σ dy·(x − mm)/sqrt(mv + eps).
    const auto inference_grads = RunOp("batch_norm_grad", BatchNormAttrs{.axis = 1, .epsilon = epsilon, .training = false},
                                       {dy, inputs[0], inputs[1], inputs[3], inputs[4]});
    const double s0 = 1 / std::sqrt(4 + epsilon);
    check(inference_grads[0], {4, 2}, {2 * s0, 0, 2 * s0, 0, 2 * s0, 0, 2 * s0, 0});
    check(inference_grads[1], {2}, {(0 + 2 + 4 + 6) * s0, 0});
    check(inference_grads[2], {2}, {4, 0});
  }
}

TEST_CASE("training output has per-channel mean 0 and variance 1 (gamma 1, beta 0), NCHW and NHWC") {
  for (int axis : {1, 3}) {
    INFO("axis ", axis);
    const Shape shape = axis == 1 ? Shape{8, 3, 5, 5} : Shape{8, 5, 5, 3};
    Tensor x = RandomF32(shape, -2.f, 6.f);
    const std::vector<Tensor> inputs{x, Full({3}, 1), Full({3}, 0), Full({3}, 0), Full({3}, 1)};
    const Tensor y = RunOp("batch_norm", BatchNormAttrs{.axis = axis, .epsilon = 1e-5}, inputs)[0];
    const Moments m = ChannelMoments(y, axis);
    for (int c = 0; c < 3; ++c) {
      CHECK(m.mean[static_cast<std::size_t>(c)] == doctest::Approx(0).epsilon(1e-5).scale(1));
      CHECK(m.variance[static_cast<std::size_t>(c)] == doctest::Approx(1).epsilon(1e-3));
    }
  }
}

TEST_CASE("f32 oneDNN batch_norm matches the f64 reference on every axis, forward and backward") {
  struct Case {
    Shape shape;
    int axis;
  };
  const std::vector<Case> cases{{{4, 3, 5, 6}, 1}, {{4, 5, 6, 3}, 3},  {{4, 5, 6, 3}, -1}, {{4, 3, 5, 6}, 2},
                                {{4, 3, 5, 6}, 0}, {{16, 7}, 1},      {{16, 7}, 0},       {{6, 4, 5}, 1},
                                {{2, 3, 4, 5, 2}, 1}, {{9}, 0},
                                // Enough channels for oneDNN's channel-blocked layout (with padded blocks).
                                {{2, 10, 3, 4}, 1}, {{3, 16, 5}, 1}, {{9, 2, 3}, 0}, {{2, 3, 17}, -1}};
  for (const Case& c : cases) {
    for (bool training : {true, false}) {
      INFO("x ", c.shape, " axis ", c.axis, " training ", training);
      const int axis = c.axis < 0 ? c.axis + c.shape.Rank() : c.axis;
      const std::int64_t channels = c.shape[axis];
      const std::vector<Tensor> inputs{RandomF32(c.shape, -1.f, 3.f), RandomF32({channels}, 0.5f, 2.f),
                                       RandomF32({channels}), RandomF32({channels}), RandomF32({channels}, 0.5f, 2.f)};
      std::vector<Tensor> inputs64;
      for (const Tensor& t : inputs) inputs64.push_back(ToF64(t));
      const BatchNormAttrs attrs{.axis = c.axis, .epsilon = 1e-3, .training = training};
      const auto y = RunOp("batch_norm", attrs, inputs);
      const auto y64 = RunOp("batch_norm", attrs, inputs64);
      REQUIRE(y.size() == y64.size());
      for (std::size_t i = 0; i < y.size(); ++i) CheckNear(y[i], y64[i], 1e-4);
      const Tensor dy = RandomF32(c.shape);
      const Tensor& mean = training ? y[1] : inputs[3];
      const Tensor& variance = training ? y[2] : inputs[4];
      const auto dx = RunOp("batch_norm_grad", attrs, {dy, inputs[0], inputs[1], mean, variance});
      const auto dx64 = RunOp("batch_norm_grad", attrs, {ToF64(dy), inputs64[0], inputs64[1], ToF64(mean), ToF64(variance)});
      for (std::size_t i = 0; i < 3; ++i) CheckNear(dx[i], dx64[i], 1e-4);
    }
  }
}

TEST_CASE("batch_norm gradients for x, gamma and beta match finite differences, training and inference") {
  Session session;
  int index = 0;
  for (const auto& [shape, axis] : std::vector<std::pair<Shape, int>>{{{3, 2, 2, 2}, 1}, {{2, 2, 3, 2}, -1}, {{3, 4}, 1},
                                                                      {{2, 3, 2}, 1}, {{2, 2, 3}, 0}}) {
    for (bool training : {true, false}) {
      INFO("x ", shape, " axis ", axis, " training ", training);
      const int resolved = axis < 0 ? axis + shape.Rank() : axis;
      const std::int64_t channels = shape[resolved];
      const std::string name = fmt::format("bn{}", index++);
      // The moving statistics are variables (training updates them in place, even in these predict jobs).
      const auto fn = [=](const std::vector<Blob>& in) {
        const VariableSpec mean{.shape = Shape{channels}, .dtype = DType::kF64, .initializer = ConstantInitializer(0.25), .trainable = false};
        const VariableSpec var{.shape = Shape{channels}, .dtype = DType::kF64, .initializer = ConstantInitializer(1.5), .trainable = false};
        const Blob moving_mean = internal::AddVariable(in[0].Graph(), name + "-moving_mean", mean);
        const Blob moving_variance = internal::AddVariable(in[0].Graph(), name + "-moving_variance", var);
        return BatchNorm(in[0], in[1], in[2], moving_mean, moving_variance,
                         {.axis = axis, .epsilon = 1e-3, .momentum = 0.9, .training = training});
      };
      CheckGradients(session, name, {testing::Random(shape), testing::Random({channels}), testing::Random({channels})}, fn);
    }
  }
}

TEST_CASE("moving statistics after k training calls follow the momentum formula with the unbiased variance") {
  // A train job: y = BN(x) with a loss on y; the optimizer trains gamma and beta, the moving
  // statistics follow the batches: moving = m·moving + (1 − m)·stat, variance unbiased.
  JobBuilder builder("bn_moving", JobType::kTrain);
  const Blob x = builder.Placeholder("x", Shape{6, 3, 2, 2});
  const Blob y = BatchNormalization(x, {.axis = 1, .momentum = 0.9, .name = "bn"});
  builder.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.0), ReduceMean(Mul(y, y)));
  builder.Output("y", y);
  const Job job = builder.Build();
  Session session;
  std::vector<double> mean(3, 0.0), variance(3, 1.0);  // the initializers: zeros and ones
  const std::int64_t count = 6 * 2 * 2;
  for (int call = 0; call < 4; ++call) {
    const Tensor input = RandomF32({6, 3, 2, 2}, -1.f + static_cast<float>(call), 2.f + 2.f * static_cast<float>(call));
    const Outputs out = session.Call(job, {input});
    const Moments m = ChannelMoments(input, 1);
    for (std::size_t c = 0; c < 3; ++c) {
      mean[c] = 0.9 * mean[c] + 0.1 * m.mean[c];
      variance[c] = 0.9 * variance[c] + 0.1 * m.variance[c] * static_cast<double>(count) / static_cast<double>(count - 1);
    }
    INFO("call ", call);
    CheckClose<float>(session.GetVariable("bn-moving_mean"), {3}, mean, 1e-5);
    CheckClose<float>(session.GetVariable("bn-moving_variance"), {3}, variance, 1e-5);
    // The output used this call's batch statistics: per-channel mean 0 (gamma/beta change only after).
    const Moments out_moments = ChannelMoments(out["y"], 1);
    if (call == 0) {
      for (double v : out_moments.mean) CHECK(v == doctest::Approx(0).scale(1).epsilon(1e-5));
    }
  }
}

TEST_CASE("the layer's variables: names, shapes, trainability, center/scale, and the training default") {
  {
    JobBuilder builder("bn_vars", JobType::kTrain);
    const Blob x = builder.Placeholder("x", Shape{4, 5, 3});
    const Blob y = BatchNormalization(x, {.gamma_initializer = ConstantInitializer(2.0), .name = "norm"});  // axis -1: C = 3
    CHECK(y.GetShape() == Shape{4, 5, 3});
    builder.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.5}), 0.0), ReduceMean(Mul(y, Sigmoid(y))));
    builder.Output("y", y);
    const Job job = builder.Build();
    Session session;
    session.Compile(job);
    for (const char* suffix : {"gamma", "beta", "moving_mean", "moving_variance"}) {
      CHECK(session.GetVariable(fmt::format("norm-{}", suffix)).GetShape() == Shape{3});
    }
    CHECK(session.GetVariable("norm-gamma").ToVector<float>() == std::vector<float>{2, 2, 2});
    CHECK(session.GetVariable("norm-moving_variance").ToVector<float>() == std::vector<float>{1, 1, 1});
    session.Call(job, {RandomF32({4, 5, 3})});
    // gamma and beta are trained; the moving statistics move by the momentum rule only.
    CHECK(session.GetVariable("norm-gamma").ToVector<float>() != std::vector<float>{2, 2, 2});
    CHECK(session.GetVariable("norm-beta").ToVector<float>() != std::vector<float>{0, 0, 0});
    CHECK(session.GetVariable("norm-moving_mean").ToVector<float>() != std::vector<float>{0, 0, 0});
    CHECK(session.GetVariables().size() == 5);  // + the train step
  }
  {
    JobBuilder builder("bn_no_affine");
    const Blob x = builder.Placeholder("x", Shape{4, 2});
    builder.Output("y", BatchNormalization(x, {.axis = 1, .center = false, .scale = false, .name = "plain"}));
    const Job job = builder.Build();
    Session session;
    // A predict job uses the moving statistics (0 and 1): y = x / sqrt(1 + eps).
    const Tensor input = Tensor::FromVector<float>({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
    const Tensor y = session.Call(job, {input})[0];
    for (std::int64_t i = 0; i < 8; ++i) CHECK(y.Data<float>()[i] == doctest::Approx(input.Data<float>()[i] / std::sqrt(1.001)));
    CHECK_THROWS_AS(session.GetVariable("plain-gamma"), std::invalid_argument);
    CHECK_THROWS_AS(session.GetVariable("plain-beta"), std::invalid_argument);
    CHECK(session.GetVariable("plain-moving_mean").ToVector<float>() == std::vector<float>{0, 0});  // not updated
  }
}

TEST_CASE("inference uses (and keeps) the moving statistics; forced training updates them in a predict job") {
  Session session;
  JobBuilder predict("bn_predict");
  const Blob x = predict.Placeholder("x", Shape{5, 2});
  predict.Output("y", BatchNormalization(x, {.axis = 1, .epsilon = 1e-3, .name = "bn"}));
  const Job predict_job = predict.Build();
  session.Compile(predict_job);
  session.SetVariables({{"bn-moving_mean", Tensor::FromVector<float>({2}, {1, -1})},
                        {"bn-moving_variance", Tensor::FromVector<float>({2}, {4, 0.25})},
                        {"bn-gamma", Tensor::FromVector<float>({2}, {3, 1})},
                        {"bn-beta", Tensor::FromVector<float>({2}, {0, 10})}});
  const Tensor input = RandomF32({5, 2});
  const Tensor y = session.Call(predict_job, {input})[0];
  for (std::int64_t i = 0; i < 10; ++i) {
    const double expected = i % 2 == 0 ? 3 * (input.Data<float>()[i] - 1) / std::sqrt(4.001)
                                       : (input.Data<float>()[i] + 1) / std::sqrt(0.251) + 10;
    CHECK(y.Data<float>()[i] == doctest::Approx(expected).epsilon(1e-5));
  }
  CHECK(session.GetVariable("bn-moving_mean").ToVector<float>() == std::vector<float>{1, -1});

  // training = true in a predict job: batch statistics, and the moving ones move. A reader of the
  // moving mean in the same call (an identity of it) sees the value from before the update.
  JobBuilder forced("bn_forced");
  const Blob fx = forced.Placeholder("x", Shape{5, 2});
  forced.Output("y", BatchNormalization(fx, {.axis = 1, .momentum = 0.5, .training = true, .name = "bn"}));
  const Blob moving_mean = internal::AddVariable(fx.Graph(), "bn-moving_mean",
                                                 {.shape = Shape{2}, .initializer = ZerosInitializer(), .trainable = false});
  forced.Output("moving_mean", Identity(moving_mean));
  const Job forced_job = forced.Build();
  const Outputs out = session.Call(forced_job, {input});
  CHECK(out["moving_mean"].ToVector<float>() == std::vector<float>{1, -1});
  const Moments m = ChannelMoments(input, 1);
  CheckClose<float>(session.GetVariable("bn-moving_mean"), {2}, {0.5 * 1 + 0.5 * m.mean[0], 0.5 * -1 + 0.5 * m.mean[1]});
  CheckClose<float>(session.GetVariable("bn-moving_variance"), {2},
                    {0.5 * 4 + 0.5 * m.variance[0] * 5 / 4, 0.5 * 0.25 + 0.5 * m.variance[1] * 5 / 4});
  const Moments y_moments = ChannelMoments(out["y"], 1);
  CHECK(y_moments.mean[0] == doctest::Approx(0).scale(1).epsilon(1e-5));  // beta 0 on channel 0
  CHECK(y_moments.mean[1] == doctest::Approx(10).epsilon(1e-5));          // beta 10 on channel 1

  // A frozen layer (trainable = false) in a train job uses the moving statistics, as in OneFlow.
  JobBuilder frozen("bn_frozen", JobType::kTrain);
  const Blob z = frozen.Placeholder("x", Shape{5, 2});
  const Blob w = frozen.Variable("w", {.shape = Shape{2}, .initializer = OnesInitializer()});
  const Blob out_frozen = BatchNormalization(Mul(z, w), {.axis = 1, .trainable = false, .name = "bn"});
  frozen.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.0), ReduceMean(out_frozen));
  const Job frozen_job = frozen.Build();
  const Tensor gamma = session.GetVariable("bn-gamma");
  const Tensor moving = session.GetVariable("bn-moving_mean");
  session.Call(frozen_job, {input});
  CHECK(session.GetVariable("bn-gamma").ToVector<float>() == gamma.ToVector<float>());
  CHECK(session.GetVariable("bn-moving_mean").ToVector<float>() == moving.ToVector<float>());
  // d mean(gamma·(x·w − mm)·s + beta)/dw = gamma·s·mean(x) per channel, with the moving s.
  const std::vector<float> w_after = session.GetVariable("w").ToVector<float>();
  const std::vector<float> g = gamma.ToVector<float>();
  const std::vector<float> v = session.GetVariable("bn-moving_variance").ToVector<float>();
  for (std::size_t c = 0; c < 2; ++c) {
    const double grad = g[c] / std::sqrt(v[c] + 1e-3) * m.mean[c] * 5 / 10;
    CHECK(w_after[c] == doctest::Approx(1 - 0.1 * grad).epsilon(1e-5));
  }
}

TEST_CASE("a train job with batch normalization learns: the loss decreases") {
  // NCHW images of two classes told apart by their mean brightness, scaled far from unit variance.
  JobBuilder builder("bn_train", JobType::kTrain);
  const Blob images = builder.Placeholder("images", Shape{16, 2, 4, 4});
  const Blob labels = builder.Placeholder("labels", Shape{16}, DType::kI32);
  Blob h = BatchNormalization(images, {.axis = 1, .momentum = 0.9, .name = "bn1"});
  h = Relu(h);
  h = MaxPool2D(h, {.padding = SamePadding()});
  h = Flatten(h);
  const Blob logits = Dense(h, 2, {.kernel_initializer = RandomNormalInitializer(0, 0.1), .name = "fc"});
  const Blob loss = SparseSoftmaxCrossEntropy(labels, logits);
  builder.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.9), loss);
  builder.Output("loss", loss);
  const Job job = builder.Build();
  Session session;
  std::bernoulli_distribution coin(0.5);
  std::normal_distribution<float> noise(0.f, 1.f);
  const auto batch = [&] {
    Tensor x(Shape{16, 2, 4, 4}, DType::kF32);
    std::vector<std::int32_t> y(16);
    for (std::int64_t n = 0; n < 16; ++n) {
      y[static_cast<std::size_t>(n)] = coin(Rng()) ? 1 : 0;
      for (std::int64_t i = 0; i < 32; ++i) {
        x.Data<float>()[n * 32 + i] = 100.f + 50.f * noise(Rng()) + (y[static_cast<std::size_t>(n)] ? 60.f : -60.f);
      }
    }
    return std::pair{x, Tensor::FromVector<std::int32_t>({16}, y)};
  };
  const auto mean_loss = [&](const Tensor& t) {
    double sum = 0;
    for (float v : t.ToVector<float>()) sum += v;
    return sum / static_cast<double>(t.NumElements());
  };
  double first = 0, last = 0;
  for (int step = 0; step < 40; ++step) {
    const auto [x, y] = batch();
    const double loss_value = mean_loss(session.Call(job, {x, y})[0]);
    if (step < 5) first += loss_value / 5;
    if (step >= 35) last += loss_value / 5;
  }
  MESSAGE(fmt::format("mean loss of the first 5 steps {:.4f}, of the last 5 {:.4f}", first, last));
  CHECK(last < 0.5 * first);
  // The moving mean tracks the data (about 100 per channel).
  for (float v : session.GetVariable("bn1-moving_mean").ToVector<float>()) CHECK(v == doctest::Approx(100).epsilon(0.2));
}

TEST_CASE("checkpoints save and load the moving statistics with gamma and beta") {
  ScratchDir dir;
  const auto make_job = [] {
    JobBuilder builder("bn_ckpt", JobType::kTrain);
    const Blob x = builder.Placeholder("x", Shape{8, 3});
    const Blob y = BatchNormalization(x, {.momentum = 0.5, .name = "bn"});
    builder.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.0), ReduceMean(Mul(y, Tanh(y))));
    builder.Output("y", y);
    return builder.Build();
  };
  std::map<std::string, Tensor> saved;
  {
    Session session;
    const Job job = make_job();
    for (int i = 0; i < 3; ++i) session.Call(job, {RandomF32({8, 3}, 1.f, 4.f)});
    saved = session.GetVariables();
    session.SaveCheckpoint((dir / "ckpt").string());
  }
  for (const char* name : {"bn-gamma", "bn-beta", "bn-moving_mean", "bn-moving_variance"}) {
    CHECK(std::filesystem::exists(dir / "ckpt" / name / "out"));
  }
  CHECK(saved.at("bn-moving_mean").ToVector<float>() != std::vector<float>{0, 0, 0});
  Session restored;
  restored.Compile(make_job());
  restored.LoadCheckpoint((dir / "ckpt").string());
  for (const char* name : {"bn-gamma", "bn-beta", "bn-moving_mean", "bn-moving_variance"}) {
    INFO(name);
    CHECK(restored.GetVariable(name).ToVector<float>() == saved.at(name).ToVector<float>());
  }
}

TEST_CASE("batch_norm rejects bad inputs naming the argument, the expected and the received value") {
  JobBuilder builder("bn_errors");
  const Blob x = builder.Placeholder("x", Shape{4, 3});
  const Blob c3 = builder.Placeholder("c3", Shape{3});
  const Blob c2 = builder.Placeholder("c2", Shape{2});
  const Blob mm = builder.Variable("mm", {.shape = Shape{3}, .trainable = false});
  const Blob mv = builder.Variable("mv", {.shape = Shape{3}, .initializer = OnesInitializer(), .trainable = false});
  CHECK_THROWS_WITH_AS(BatchNorm(x, c2, c3, mm, mv), "[batch_norm] gamma must be f32(3) (channels of x (4,3) on axis 1), got f32(2)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(BatchNorm(x, c3, c3, mm, mv, {.axis = 2}), "[batch_norm] axis 2 out of range for rank 2",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(BatchNorm(x, c3, c3, mm, mv, {.epsilon = 0}), "[batch_norm] epsilon must be positive, got 0",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(BatchNorm(x, c3, c3, mm, mv, {.momentum = 1.5}), "[batch_norm] momentum must be in [0, 1], got 1.5",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(BatchNorm(x, c3, c3, c3, mv), "[batch_norm] training updates moving_mean in place, so it must be a variable, got 'c3'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(BatchNorm(builder.Placeholder("xi", Shape{4, 3}, DType::kI32), c3, c3, mm, mv),
                       "[batch_norm] expects a floating x, got i32", std::invalid_argument);
  CHECK_THROWS_WITH_AS(BatchNorm(builder.Placeholder("empty", Shape{0, 3}), c3, c3, mm, mv),
                       "[batch_norm] training needs at least one element per channel, x is (0,3)", std::invalid_argument);
  // Inference reads the moving statistics only: placeholders are fine there, and so is an empty batch.
  CHECK(BatchNorm(x, c3, c3, c3, c3, {.training = false}).GetShape() == Shape{4, 3});
  CHECK(RunOp("batch_norm", BatchNormAttrs{.training = false},
              {Tensor(Shape{0, 3}, DType::kF32), Full({3}, 1), Full({3}, 0), Full({3}, 0), Full({3}, 1)})[0]
            .GetShape() == Shape{0, 3});
  // One writer per variable and job.
  BatchNorm(x, c3, c3, mm, mv, {}, "first");
  CHECK_THROWS_WITH_AS(BatchNorm(x, c3, c3, mm, mv, {}, "second"),
                       "[batch_norm] moving_mean 'mm' is already updated by 'first-moving_update' in job 'bn_errors': a "
                       "variable has one writer per job",
                       std::invalid_argument);

  // The layer.
  CHECK_THROWS_WITH_AS(BatchNormalization(x, {.axis = 2}), "[batch_normalization] 'axis' must be in [-2, 2) for x (4,3), got 2",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(BatchNormalization(Blob{}), "[batch_normalization] argument 'x' is an undefined blob", std::invalid_argument);
  BatchNormalization(x, {.name = "twice"});
  CHECK_THROWS_WITH_AS(BatchNormalization(x, {.name = "twice"}), "[batch_norm] op name 'twice' is already used in job 'bn_errors'",
                       std::invalid_argument);
  // The backward op checks its operands.
  CHECK_THROWS_WITH_AS(RunOp("batch_norm_grad", BatchNormAttrs{},
                             {Full({4, 3}, 1), Full({4, 3}, 1), Full({3}, 1), Full({2}, 0), Full({3}, 1)}),
                       "[batch_norm_grad] mean must be f32(3) for x (4,3) on axis 1, got f32(2)", std::invalid_argument);
}

// --- cost ---------------------------------------------------------------------------------------

namespace {

// One kernel, created once as a task would, run `iterations` times; the mean milliseconds per run.
double KernelMilliseconds(std::string_view type, std::any attrs, const std::vector<Tensor>& inputs, int iterations) {
  using namespace weir::internal;
  std::vector<TensorMeta> input_metas;
  for (const Tensor& t : inputs) input_metas.push_back({t.GetShape(), t.GetDType()});
  const std::vector<TensorMeta> output_metas = FindOp(type).infer(InferContext{type, type, &attrs, input_metas});
  auto kernel = FindKernel({std::string(type), Device::Kind::kCpu, input_metas[0].dtype})(
      KernelSetup{type, type, &attrs, input_metas, output_metas, Device::Cpu()});
  std::vector<Tensor> outputs;
  std::vector<ConstTensorView> in;
  std::vector<TensorView> out;
  for (std::size_t i = 0; i < inputs.size(); ++i) in.push_back({inputs[i].RawData(), &input_metas[i]});
  for (const TensorMeta& meta : output_metas) outputs.emplace_back(meta.shape, meta.dtype);
  for (std::size_t i = 0; i < outputs.size(); ++i) out.push_back({outputs[i].RawData(), &output_metas[i]});
  kernel->Run(in, out);  // warm-up: first touch of the output pages
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) kernel->Run(in, out);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / iterations;
}

}  // namespace

// Reports timings only: on a shared machine oneDNN's OpenMP threads make them too noisy to assert on.
TEST_CASE("timing report: f32 batch_norm on a LeNet-sized activation, NCHW and NHWC") {
  for (const auto& [shape, axis] : std::vector<std::pair<Shape, int>>{{{100, 32, 28, 28}, 1}, {{100, 28, 28, 32}, 3}}) {
    const std::int64_t channels = shape[axis];
    const std::vector<Tensor> inputs{RandomF32(shape), Full({channels}, 1), Full({channels}, 0), Full({channels}, 0),
                                     Full({channels}, 1)};
    const BatchNormAttrs attrs{.axis = axis};
    const double forward = KernelMilliseconds("batch_norm", attrs, inputs, 5);
    const double backward = KernelMilliseconds("batch_norm_grad", attrs, {inputs[0], inputs[0], inputs[1], inputs[3], inputs[4]}, 5);
    MESSAGE(fmt::format("batch_norm {} axis {} (training): forward {:.2f} ms, backward {:.2f} ms", shape, axis, forward, backward));
  }
}

TEST_CASE("16-bit moving statistics move in double and are rounded once (a float16 batch norm's)") {
  using weir::testing::RunOp;
  const auto half = [](std::vector<float> values) {
    Tensor t(Shape{static_cast<std::int64_t>(values.size())}, DType::kF16);
    for (std::size_t i = 0; i < values.size(); ++i) t.Data<weir::float16>()[i] = weir::float16(values[i]);
    return t;
  };
  Tensor moving_mean = half({1, 2}), moving_variance = half({1, 1});
  // No outputs: the statistics are written in place.
  RunOp("batch_norm_moving_update", weir::internal::BatchNormMovingUpdateAttrs{0.9, 5},
        {moving_mean, moving_variance, half({3, 0}), half({2, 4})});
  const std::vector<double> mean{0.9 * 1 + 0.1 * 3, 0.9 * 2}, variance{0.9 + 0.1 * 2 * 1.25, 0.9 + 0.1 * 4 * 1.25};
  for (std::size_t c = 0; c < 2; ++c) {
    CHECK(moving_mean.Data<weir::float16>()[c].bits == weir::float16(static_cast<float>(mean[c])).bits);
    CHECK(moving_variance.Data<weir::float16>()[c].bits == weir::float16(static_cast<float>(variance[c])).bits);
  }
}

TEST_CASE("bf16 x with f32 parameters (mixed precision) gives the f32 results on the rounded x, rounded once") {
  const auto bf16 = [](const Tensor& t) {
    Tensor out(t.GetShape(), DType::kBF16);
    for (std::int64_t i = 0; i < t.NumElements(); ++i) out.Data<weir::bfloat16>()[i] = weir::bfloat16(t.Data<float>()[i]);
    return out;
  };
  const auto f32 = [](const Tensor& t) {
    if (t.GetDType() == DType::kF32) return t;
    Tensor out(t.GetShape(), DType::kF32);
    for (std::int64_t i = 0; i < t.NumElements(); ++i) out.Data<float>()[i] = static_cast<float>(t.Data<weir::bfloat16>()[i]);
    return out;
  };
  // Each element within half a bf16 ulp (2^-8 relative) of the f32 kernel's result and its own f32 rounding
  // noise (relative to the largest element: dx cancels); f32 outputs within f32 noise.
  const auto check_rounded_once = [](const Tensor& got, const Tensor& want, double relative) {
    REQUIRE(got.GetShape() == want.GetShape());
    double largest = 0;
    for (std::int64_t i = 0; i < want.NumElements(); ++i) largest = std::max(largest, std::abs(double{want.Data<float>()[i]}));
    int failures = 0;
    for (std::int64_t i = 0; i < want.NumElements() && failures < 5; ++i) {
      const double a = got.Data<float>()[i], b = want.Data<float>()[i];
      if (std::abs(a - b) > relative * std::abs(b) + 1e-5 * largest) {
        ++failures;
        FAIL_CHECK("element ", i, ": ", a, " vs f32 ", b);
      }
    }
  };
  struct Case {
    Shape shape;
    int axis;
  };
  // Channel blocks (NCHW, 16 channels), channels last, too few channels for blocks, and a 2-D x.
  for (const Case& c : std::vector<Case>{{{4, 16, 5, 6}, 1}, {{4, 5, 6, 16}, 3}, {{6, 3, 4, 5}, 1}, {{16, 7}, 1}}) {
    for (bool training : {true, false}) {
      INFO("x ", c.shape, " axis ", c.axis, " training ", training);
      const std::int64_t channels = c.shape[c.axis];
      const Tensor x = bf16(RandomF32(c.shape, -1.f, 3.f)), dy = bf16(RandomF32(c.shape));
      const std::vector<Tensor> params{RandomF32({channels}, 0.5f, 2.f), RandomF32({channels}), RandomF32({channels}),
                                       RandomF32({channels}, 0.5f, 2.f)};
      const BatchNormAttrs attrs{.axis = c.axis, .epsilon = 1e-3, .training = training};
      const auto y = RunOp("batch_norm", attrs, {x, params[0], params[1], params[2], params[3]});
      const auto y32 = RunOp("batch_norm", attrs, {f32(x), params[0], params[1], params[2], params[3]});
      REQUIRE(y[0].GetDType() == DType::kBF16);
      check_rounded_once(f32(y[0]), y32[0], 1.0 / 256);
      for (std::size_t i = 1; i < y.size(); ++i) {
        REQUIRE(y[i].GetDType() == DType::kF32);  // the batch statistics
        check_rounded_once(y[i], y32[i], 1e-5);
      }
      const Tensor& mean = training ? y32[1] : params[2];
      const Tensor& variance = training ? y32[2] : params[3];
      const auto dx = RunOp("batch_norm_grad", attrs, {dy, x, params[0], mean, variance});
      const auto dx32 = RunOp("batch_norm_grad", attrs, {f32(dy), f32(x), params[0], mean, variance});
      REQUIRE(dx[0].GetDType() == DType::kBF16);
      check_rounded_once(f32(dx[0]), dx32[0], 1.0 / 256);
      check_rounded_once(dx[1], dx32[1], 1e-5);
      check_rounded_once(dx[2], dx32[2], 1e-5);
    }
  }
  // gamma must have x's dtype or, for a 16-bit x, f32; the rest must match gamma.
  const Tensor x = bf16(RandomF32({2, 3})), params = RandomF32({3});
  CHECK_THROWS_WITH_AS(RunOp("batch_norm", BatchNormAttrs{.axis = 1}, {x, params, bf16(params), params, params}),
                       "[batch_norm] beta must be f32(3) (channels of x (2,3) on axis 1), got bf16(3)", std::invalid_argument);
}
