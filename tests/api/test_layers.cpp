// Layers and hooks: dense (variable names, shapes, initializers), dropout (train only, seeded,
// gradient through the kept elements), watch and watch_diff.
#include <doctest/doctest.h>

#include <atomic>

#include "weir/weir.hpp"

using namespace weir;

namespace {

Tensor Full(Shape shape, float value) {
  Tensor t(std::move(shape), DType::kF32);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) t.Data<float>()[i] = value;
  return t;
}

}  // namespace

TEST_CASE("dense creates <name>-weight (units, in) and <name>-bias and computes x Wt + b") {
  JobBuilder builder("dense");
  Blob x = builder.Placeholder("x", Shape{2, 3});
  Blob y = Dense(x, 4, {.activation = Activation::kRelu, .kernel_initializer = ConstantInitializer(0.5),
                        .bias_initializer = ConstantInitializer(-1.0), .name = "fc"});
  CHECK(y.GetShape() == Shape{2, 4});
  builder.Output("y", y);
  const Job job = builder.Build();
  Session session;
  const Outputs out = session.Call(job, {Tensor::FromVector<float>({2, 3}, {1, 1, 1, 4, 0, 0})});
  // row 0: 0.5*3 - 1 = 0.5; row 1: 0.5*4 - 1 = 1
  CHECK(out[0].ToVector<float>() == std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f, 1, 1, 1, 1});
  CHECK(session.GetVariable("fc-weight").GetShape() == Shape{4, 3});
  CHECK(session.GetVariable("fc-bias").GetShape() == Shape{4});

  JobBuilder rank3("dense_rank3");
  Blob z = Dense(rank3.Placeholder("z", Shape{2, 5, 3}), 7, {.name = "fc3"});
  CHECK(z.GetShape() == Shape{2, 5, 7});
  CHECK_THROWS_AS(Dense(rank3.Placeholder("bad", Shape{3}), 2), std::invalid_argument);
  CHECK_THROWS_AS(Dense(z, 0), std::invalid_argument);
}

TEST_CASE("dropout is the identity in predict jobs; in train jobs it is seeded and scales kept elements") {
  JobBuilder predict("dropout_predict");
  Blob x = predict.Placeholder("x", Shape{1000});
  CHECK(Dropout(x, {.rate = 0.5}).ValueId() == x.ValueId());
  CHECK_THROWS_AS(Dropout(x, {.rate = 1.0}), std::invalid_argument);

  const auto make = [](const std::string& name) {
    JobBuilder train(name, JobType::kTrain);
    Blob in = train.Placeholder("x", Shape{1000});
    Blob w = train.Variable("w", {.shape = Shape{1000}, .initializer = OnesInitializer()});
    Blob y = Dropout(Mul(in, w), {.rate = 0.25, .seed = 42});
    train.Minimize(Sgd(PiecewiseConstantScheduler({}, {1.0}), 0.0), y);
    train.Output("y", y);
    return train.Build();
  };
  Session first;
  Session second;
  const Job a = make("dropout_a");
  const Outputs out1 = first.Call(a, {Full({1000}, 3.f)});
  const Outputs out2 = second.Call(a, {Full({1000}, 3.f)});
  CHECK(out1[0].ToVector<float>() == out2[0].ToVector<float>());  // same seed, same mask
  int kept = 0;
  for (float v : out1[0].ToVector<float>()) {
    CHECK((v == 0.f || v == doctest::Approx(4.f)));  // 3 / (1 - 0.25)
    kept += v != 0.f;
  }
  CHECK(kept > 700);
  CHECK(kept < 800);
  // d(sum y)/dw = x * mask / (1 - rate) / 1000 elements of the loss; lr 1.
  const std::vector<float> y = out1[0].ToVector<float>();
  const std::vector<float> w = first.GetVariable("w").ToVector<float>();
  for (std::size_t i = 0; i < w.size(); ++i) {
    CHECK(w[i] == doctest::Approx(y[i] != 0.f ? 1.0 - 4.0 / 1000 : 1.0));
  }
  CHECK(first.Call(a, {Full({1000}, 3.f)})[0].ToVector<float>() != y);  // a new mask per call
}

TEST_CASE("watch hands values to handlers in call order, off the actor threads; watch_diff hands gradients") {
  JobBuilder builder("watched", JobType::kTrain);
  Blob x = builder.Placeholder("x", Shape{2});
  Blob w = builder.Variable("watched-w", {.shape = Shape{2}, .initializer = ConstantInitializer(2.0)});
  Blob h = Mul(x, w);
  std::vector<float> values;
  std::vector<float> diffs;
  Watch(h, [&](const Tensor& t) { values.push_back(t.Data<float>()[0]); });
  WatchDiff(h, [&](const Tensor& t) { diffs.push_back(t.Data<float>()[1]); });
  builder.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.0), ReduceSum(ScalarMul(h, 3.0)));
  builder.Output("h", h);
  const Job job = builder.Build();
  CHECK(job.OutputNames() == std::vector<std::string>{"h"});
  Session session;
  const Outputs out = session.Call(job, {Tensor::FromVector<float>({2}, {1, 5})});
  CHECK(out.Size() == 1);
  REQUIRE(values.size() == 1);
  CHECK(values[0] == 2.f);
  CHECK(diffs == std::vector<float>{3.f});  // d(sum 3h)/dh, unscaled
  for (int i = 0; i < 20; ++i) {
    session.CallAsync(job, {Tensor::FromVector<float>({2}, {static_cast<float>(i), 0})}, [](CallResult r) { r.ThrowIfError(); });
  }
  session.Sync();
  REQUIRE(values.size() == 21);
  float previous_w = 2.f - 0.1f * 3;  // after the first call (x[0] = 1)
  for (int i = 1; i < 21; ++i) {
    // h[0] = x[0] * w[0], with w[0] shrinking by 0.1 * 3 * x[0] after each call.
    CHECK(values[static_cast<std::size_t>(i)] == doctest::Approx((i - 1) * previous_w));
    previous_w -= 0.1f * 3 * static_cast<float>(i - 1);
  }

  JobBuilder predict("watch_predict");
  CHECK_THROWS_AS(WatchDiff(predict.Placeholder("p", Shape{1}), [](const Tensor&) {}), std::invalid_argument);
  CHECK_THROWS_AS(Watch(predict.Placeholder("q", Shape{1}), nullptr), std::invalid_argument);
}
