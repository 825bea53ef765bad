// Quantization-aware training (graph/quantization_pass.hpp): which values the pass fake-quantizes,
// that a scope with it off is left alone, and that the activations' moving statistics move in train
// jobs only. flow.quantization's tests (tests/python) check the values against the observers.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "weir/weir.hpp"

using namespace weir;

namespace {

JobConfig Qat() {
  JobConfig config;
  config.quantization_aware_training = JobConfig::QuantizationAwareTraining{.moving_min_max_stop_update_after_iters = 1};
  return config;
}

// x (2, 3) -> matmul(w) -> matmul(v) under a scope with quantization off: x, w and the first
// product (which the second reads) are quantized; v and the job's result are not.
Job DenseJob(JobType type) {
  JobBuilder builder(type == JobType::kTrain ? "qat_train" : "qat_predict", type, Qat());
  const Blob x = builder.Placeholder("x", Shape{2, 3});
  const Blob y = MatMul(x, builder.Variable("w", {.shape = Shape{3, 4}, .initializer = ConstantInitializer(0.5)}));
  builder.PushQuantizationScope(false);
  const Blob z = MatMul(y, builder.Variable("v", {.shape = Shape{4, 2}, .initializer = ConstantInitializer(0.25)}));
  builder.PopQuantizationScope();
  builder.Output("z", z);
  if (type == JobType::kTrain) builder.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.0}), 0.0), ReduceSum(z));
  return builder.Build();
}

}  // namespace

TEST_CASE("quantization-aware training quantizes an int8 op's inputs and result, not ops under a scope with it off") {
  const Job train = DenseJob(JobType::kTrain);
  CHECK(train.QuantizedValues() == 3);
  CHECK(DenseJob(JobType::kPredict).QuantizedValues() == 3);

  JobBuilder off("qat_off", JobType::kPredict);  // no quantization_aware_training: nothing changes
  off.Output("y", MatMul(off.Placeholder("x", Shape{2, 3}), off.Variable("w", {.shape = Shape{3, 4}})));
  CHECK(off.Build().QuantizedValues() == 0);
}

TEST_CASE("quantization-aware training moves the activations' statistics in train calls until the set step") {
  Session session;
  const Job train = DenseJob(JobType::kTrain);
  const Job predict = DenseJob(JobType::kPredict);
  const auto moving_max = [&] { return session.GetVariable("x-fake-quant-observer-fake-quant-moving-max").ToVector<float>()[0]; };
  // 1 as a grid step: max |x| = 127 makes scale 1, so the product of x by w = 0.5 is exact.
  const auto call = [&](const Job& job, float top) {
    return session.Call(job, {Tensor::FromVector<float>(Shape{2, 3}, {top, -1, 2, 3, 4.4f, 5})})["z"].ToVector<float>();
  };
  call(train, 127);
  CHECK(moving_max() == 127);  // the first call's range
  call(train, 27);             // step 1 <= 1: moves
  const float moved = 127 * 0.95f + 27 * 0.05f;
  CHECK(moving_max() == doctest::Approx(moved));
  call(train, 7);  // step 2: stays
  CHECK(moving_max() == doctest::Approx(moved));
  // A predict call reads the statistics (and moves none). x's grid step is moved / 127; the first
  // product's moving max|y| is 64 (call 1: rows 127 - 1 + 2 and 3 + 4 + 5 halved) blended once
  // with call 2's 29 steps halved.
  const std::vector<float> z = call(predict, 1);
  CHECK(moving_max() == doctest::Approx(moved));
  const double step = moved / 127.0;
  const double y_step = (64 * 0.95 + 29 * step * 0.5 * 0.05) / 127;
  const auto quantized = [](double value, double grid) { return std::nearbyint(value / grid) * grid; };
  // Rows of x on its grid: 1, -1, 2 -> 2 steps; 3, 4.4, 5 -> 3 + 5 + 5 = 13 steps; times w = 0.5,
  // then y on its grid; z sums y's four columns times v = 0.25.
  const double row0 = quantized(2 * step * 0.5, y_step);
  const double row1 = quantized(13 * step * 0.5, y_step);
  const std::vector<double> expected{row0, row0, row1, row1};
  for (std::size_t i = 0; i < z.size(); ++i) CHECK(z[i] == doctest::Approx(expected[i]).epsilon(1e-5));
}
