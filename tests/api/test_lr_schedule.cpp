// Learning-rate schedules: every scheduler at hand-computed steps, warmups as OneFlow's kernel applies
// them (no decay inside the warmup, no step offset after it), and an error for every bad parameter.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <vector>

#include "weir/lr_schedule.hpp"

using namespace weir;

namespace {

doctest::Approx Near(double value) { return doctest::Approx(value).epsilon(1e-12); }

}  // namespace

TEST_CASE("piecewise constant: a step equal to a boundary still gets the earlier value") {
  const LrSchedule schedule = PiecewiseConstantScheduler({10, 20}, {1.0, 0.5, 0.25});
  CHECK(LearningRate(schedule, 0) == 1.0);
  CHECK(LearningRate(schedule, 9) == 1.0);
  CHECK(LearningRate(schedule, 10) == 1.0);
  CHECK(LearningRate(schedule, 11) == 0.5);
  CHECK(LearningRate(schedule, 19) == 0.5);
  CHECK(LearningRate(schedule, 20) == 0.5);
  CHECK(LearningRate(schedule, 21) == 0.25);
  CHECK(LearningRate(schedule, 100) == 0.25);

  // The form every OneFlow doc uses: a constant learning rate.
  const LrSchedule constant = PiecewiseConstantScheduler({}, {0.1});
  CHECK(LearningRate(constant, 0) == 0.1);
  CHECK(LearningRate(constant, 1'000'000) == 0.1);
}

TEST_CASE("piecewise scaling: base_lr times the scale of the interval, 1 before the first boundary") {
  const LrSchedule schedule = PiecewiseScalingScheduler(0.1, {10, 20}, std::vector<double>{0.5, 0.1});
  CHECK(LearningRate(schedule, 0) == Near(0.1));
  CHECK(LearningRate(schedule, 10) == Near(0.1));
  CHECK(LearningRate(schedule, 11) == Near(0.05));
  CHECK(LearningRate(schedule, 20) == Near(0.05));
  CHECK(LearningRate(schedule, 21) == Near(0.01));
  // The scalar form repeats the scale; scales are relative to base_lr, not cumulative (OneFlow).
  const LrSchedule scalar = PiecewiseScalingScheduler(0.1, {10, 20}, 0.5);
  CHECK(scalar.scales == std::vector<double>{1.0, 0.5, 0.5});
  CHECK(LearningRate(scalar, 21) == Near(0.05));
}

TEST_CASE("cosine: from base_lr down to alpha·base_lr at `steps`, flat beyond") {
  const LrSchedule plain = CosineScheduler(0.1, 100);
  CHECK(LearningRate(plain, 0) == Near(0.1));
  CHECK(LearningRate(plain, 25) == Near(0.05 * (1 + std::sqrt(0.5))));
  CHECK(LearningRate(plain, 50) == Near(0.05));
  CHECK(LearningRate(plain, 100) == doctest::Approx(0.0));
  CHECK(LearningRate(plain, 150) == doctest::Approx(0.0));

  const LrSchedule floored = CosineScheduler(0.1, 100, 0.1);
  CHECK(LearningRate(floored, 0) == Near(0.1));
  CHECK(LearningRate(floored, 50) == Near(0.1 * (0.9 * 0.5 + 0.1)));
  CHECK(LearningRate(floored, 100) == Near(0.01));
  CHECK(LearningRate(floored, 1000) == Near(0.01));
}

TEST_CASE("polynomial: to end_learning_rate at `steps`; with cycle the decay restarts on a longer span") {
  const LrSchedule linear = PolynomialScheduler(0.1, 10, 0.01);
  CHECK(LearningRate(linear, 0) == Near(0.1));
  CHECK(LearningRate(linear, 5) == Near(0.055));
  CHECK(LearningRate(linear, 10) == Near(0.01));
  CHECK(LearningRate(linear, 20) == Near(0.01));
  CHECK(LearningRate(PolynomialScheduler(0.1, 10, 0.01, 2.0), 5) == Near(0.09 * 0.25 + 0.01));
  // Defaults as OneFlow's: end 1e-4, power 1.
  CHECK(LearningRate(PolynomialScheduler(0.1, 10), 10) == Near(1e-4));

  const LrSchedule cycle = PolynomialScheduler(0.1, 10, 0.01, 1.0, true);
  CHECK(LearningRate(cycle, 0) == Near(0.09 * 0.9 + 0.01));  // OneFlow evaluates step 0 as step 1
  CHECK(LearningRate(cycle, 5) == Near(0.055));
  CHECK(LearningRate(cycle, 10) == Near(0.01));
  CHECK(LearningRate(cycle, 15) == Near(0.09 * 0.25 + 0.01));  // span 20
  CHECK(LearningRate(cycle, 20) == Near(0.01));
  CHECK(LearningRate(cycle, 21) == Near(0.09 * 0.3 + 0.01));  // span 30
}

TEST_CASE("exponential, inverse time and natural exp decays, smooth and staircase") {
  const LrSchedule exponential = ExponentialScheduler(0.1, 10, 0.5);
  CHECK(LearningRate(exponential, 0) == Near(0.1));
  CHECK(LearningRate(exponential, 5) == Near(0.1 * std::sqrt(0.5)));
  CHECK(LearningRate(exponential, 10) == Near(0.05));
  CHECK(LearningRate(exponential, 25) == Near(0.1 * std::pow(0.5, 2.5)));
  const LrSchedule exponential_stairs = ExponentialScheduler(0.1, 10, 0.5, true);
  CHECK(LearningRate(exponential_stairs, 5) == Near(0.1));
  CHECK(LearningRate(exponential_stairs, 19) == Near(0.05));
  CHECK(LearningRate(exponential_stairs, 25) == Near(0.025));

  const LrSchedule inverse = InverseTimeScheduler(0.1, 10, 0.5);
  CHECK(LearningRate(inverse, 0) == Near(0.1));
  CHECK(LearningRate(inverse, 5) == Near(0.08));
  CHECK(LearningRate(inverse, 20) == Near(0.05));
  const LrSchedule inverse_stairs = InverseTimeScheduler(0.1, 10, 0.5, true);
  CHECK(LearningRate(inverse_stairs, 5) == Near(0.1));
  CHECK(LearningRate(inverse_stairs, 15) == Near(0.1 / 1.5));

  const LrSchedule natural = NaturalExpScheduler(0.1, 10, 0.5);
  CHECK(LearningRate(natural, 0) == Near(0.1));
  CHECK(LearningRate(natural, 20) == Near(0.1 * std::exp(-1.0)));
  CHECK(LearningRate(natural, 5) == Near(0.1 * std::exp(-0.25)));
  CHECK(LearningRate(NaturalExpScheduler(0.1, 10, 0.5, true), 15) == Near(0.1 * std::exp(-0.5)));
}

TEST_CASE("linear cosine follows TensorFlow's formula and holds beta·base_lr after `steps`") {
  const LrSchedule schedule = LinearCosineScheduler(1.0, 100);  // num_periods 0.5, alpha 0, beta 0.001
  CHECK(LearningRate(schedule, 0) == Near(1.001));
  CHECK(LearningRate(schedule, 25) == Near(0.75 * 0.5 * (1 + std::sqrt(0.5)) + 0.001));
  CHECK(LearningRate(schedule, 50) == Near(0.251));
  CHECK(LearningRate(schedule, 100) == Near(0.001));
  CHECK(LearningRate(schedule, 200) == Near(0.001));

  const LrSchedule full_period = LinearCosineScheduler(2.0, 100, 1.0, 0.1, 0.0);
  CHECK(LearningRate(full_period, 25) == Near(2.0 * 0.85 * 0.5));
  CHECK(LearningRate(full_period, 50) == doctest::Approx(0.0));
  CHECK(LearningRate(full_period, 100) == Near(2.0 * 0.1));
}

TEST_CASE("warmup scales base_lr while step < warmup steps; the decay then sees the raw step") {
  const LrSchedule linear = CosineScheduler(0.1, 100, 0.0, LinearWarmup(10, 0.0));
  CHECK(LearningRate(linear, 0) == 0.0);
  CHECK(LearningRate(linear, 5) == Near(0.05));
  CHECK(LearningRate(linear, 9) == Near(0.09));
  // Not cosine(0) = 0.1: OneFlow does not offset the decay by the warmup.
  CHECK(LearningRate(linear, 10) == Near(0.05 * (1 + std::cos(std::numbers::pi * 0.1))));
  CHECK(LearningRate(linear, 50) == Near(0.05));

  const LrSchedule constant = CosineScheduler(0.1, 100, 0.0, ConstantWarmup(10, 0.5));
  CHECK(LearningRate(constant, 0) == Near(0.05));
  CHECK(LearningRate(constant, 9) == Near(0.05));
  CHECK(LearningRate(constant, 10) == Near(0.05 * (1 + std::cos(std::numbers::pi * 0.1))));

  const LrSchedule ramp = ExponentialScheduler(1.0, 10, 0.5, false, LinearWarmup(4, 0.25));
  CHECK(LearningRate(ramp, 0) == Near(0.25));
  CHECK(LearningRate(ramp, 2) == Near(0.625));
  CHECK(LearningRate(ramp, 4) == Near(std::pow(0.5, 0.4)));

  // Inside the warmup the decay is skipped altogether: the first value times the multiplier.
  const LrSchedule piecewise = PiecewiseConstantScheduler({10, 20}, {1.0, 0.5, 0.25}, ConstantWarmup(15, 0.1));
  CHECK(LearningRate(piecewise, 12) == Near(0.1));
  CHECK(LearningRate(piecewise, 14) == Near(0.1));
  CHECK(LearningRate(piecewise, 15) == 0.5);
  CHECK(LearningRate(PiecewiseScalingScheduler(0.2, {3}, 0.5, LinearWarmup(5, 0.5)), 4) == Near(0.2 * 0.9));

  // A zero-length warmup never applies.
  CHECK(LearningRate(CosineScheduler(0.1, 100, 0.0, LinearWarmup(0, 0.0)), 0) == Near(0.1));
}

TEST_CASE("Describe names the scheduler, its parameters and its warmup") {
  CHECK(Describe(CosineScheduler(0.1, 1000, 0.0, LinearWarmup(10, 0.0))) ==
        "CosineScheduler(base_lr=0.1, steps=1000, alpha=0, warmup=linear(steps=10, start_multiplier=0))");
  CHECK(Describe(PiecewiseConstantScheduler({10, 20}, {1.0, 0.5, 0.25})) ==
        "PiecewiseConstantScheduler(boundaries=[10, 20], values=[1, 0.5, 0.25])");
  CHECK(Describe(ExponentialScheduler(0.1, 10, 0.5, true, ConstantWarmup(5, 0.5))) ==
        "ExponentialScheduler(base_lr=0.1, steps=10, decay_rate=0.5, staircase=true, warmup=constant(steps=5, "
        "multiplier=0.5))");
}

TEST_CASE("every bad parameter is rejected with the scheduler, the parameter, the expected and the received value") {
  CHECK_THROWS_WITH_AS(ConstantWarmup(10, 0.0), "[ConstantWarmup] multiplier: expected in (0, 1), got 0",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ConstantWarmup(10, 1.5), "[ConstantWarmup] multiplier: expected in (0, 1), got 1.5",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ConstantWarmup(-1, 0.5), "[ConstantWarmup] steps: expected >= 0, got -1",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(LinearWarmup(10, 1.0), "[LinearWarmup] start_multiplier: expected in [0, 1), got 1",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(LinearWarmup(10, -0.1), "[LinearWarmup] start_multiplier: expected in [0, 1), got -0.1",
                       std::invalid_argument);

  CHECK_THROWS_WITH_AS(PiecewiseConstantScheduler({10, 20}, {1.0, 0.5}),
                       "[PiecewiseConstantScheduler] values size: expected 3 (one more than boundaries), got 2",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(PiecewiseConstantScheduler({}, {}),
                       "[PiecewiseConstantScheduler] values size: expected 1 (one more than boundaries), got 0",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(PiecewiseConstantScheduler({20, 10}, {1.0, 0.5, 0.25}),
                       "[PiecewiseConstantScheduler] boundaries[1]: expected > boundaries[0] (20), got 10 "
                       "(boundaries must increase strictly: [20, 10])",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(PiecewiseConstantScheduler({10, 10}, {1.0, 0.5, 0.25}),
                       "[PiecewiseConstantScheduler] boundaries[1]: expected > boundaries[0] (10), got 10 "
                       "(boundaries must increase strictly: [10, 10])",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(PiecewiseConstantScheduler({10}, {1.0, -0.5}),
                       "[PiecewiseConstantScheduler] values[1]: expected >= 0, got -0.5", std::invalid_argument);
  CHECK_THROWS_WITH_AS(PiecewiseConstantScheduler({10}, {NAN, 0.5}),
                       "[PiecewiseConstantScheduler] values[0]: expected >= 0, got nan", std::invalid_argument);
  CHECK_THROWS_WITH_AS(PiecewiseScalingScheduler(0.1, {10, 20}, std::vector<double>{0.5}),
                       "[PiecewiseScalingScheduler] scale size: expected 2 (one per boundary), got 1",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(PiecewiseScalingScheduler(-0.1, {10}, 0.5),
                       "[PiecewiseScalingScheduler] base_lr: expected >= 0, got -0.1", std::invalid_argument);
  CHECK_THROWS_WITH_AS(PiecewiseScalingScheduler(0.1, {10}, -0.5),
                       "[PiecewiseScalingScheduler] scales[1]: expected >= 0, got -0.5", std::invalid_argument);

  CHECK_THROWS_WITH_AS(CosineScheduler(0.1, 0), "[CosineScheduler] steps: expected > 0, got 0", std::invalid_argument);
  CHECK_THROWS_WITH_AS(CosineScheduler(-0.1, 10), "[CosineScheduler] base_lr: expected >= 0, got -0.1",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(CosineScheduler(0.1, 10, 1.5), "[CosineScheduler] alpha: expected in [0, 1], got 1.5",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(PolynomialScheduler(0.1, -5), "[PolynomialScheduler] steps: expected > 0, got -5",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(PolynomialScheduler(0.1, 10, 1e-4, 0.0), "[PolynomialScheduler] power: expected > 0, got 0",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(PolynomialScheduler(0.1, 10, -1.0),
                       "[PolynomialScheduler] end_learning_rate: expected >= 0, got -1", std::invalid_argument);
  CHECK_THROWS_WITH_AS(ExponentialScheduler(0.1, 0, 0.5), "[ExponentialScheduler] steps: expected > 0, got 0",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ExponentialScheduler(0.1, 10, 0.0), "[ExponentialScheduler] decay_rate: expected > 0, got 0",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(InverseTimeScheduler(0.1, 0, 0.5), "[InverseTimeScheduler] steps: expected > 0, got 0",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(InverseTimeScheduler(0.1, 10, -1.0),
                       "[InverseTimeScheduler] decay_rate: expected >= 0, got -1", std::invalid_argument);
  CHECK_THROWS_WITH_AS(NaturalExpScheduler(0.1, 0, 0.5), "[NaturalExpScheduler] steps: expected > 0, got 0",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(NaturalExpScheduler(0.1, 10, NAN), "[NaturalExpScheduler] decay_rate: expected >= 0, got nan",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(LinearCosineScheduler(0.1, 0), "[LinearCosineScheduler] steps: expected > 0, got 0",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(LinearCosineScheduler(0.1, 10, -1.0),
                       "[LinearCosineScheduler] num_periods: expected >= 0, got -1", std::invalid_argument);
  CHECK_THROWS_WITH_AS(LinearCosineScheduler(0.1, 10, 0.5, INFINITY),
                       "[LinearCosineScheduler] alpha: expected a finite number, got inf", std::invalid_argument);
  CHECK_THROWS_WITH_AS(LinearCosineScheduler(0.1, 10, 0.5, 0.0, NAN),
                       "[LinearCosineScheduler] beta: expected a finite number, got nan", std::invalid_argument);

  CHECK_THROWS_WITH_AS(LearningRate(CosineScheduler(0.1, 10), -1), "[LearningRate] train_step: expected >= 0, got -1",
                       std::invalid_argument);

  // A description built by hand is checked when it is used, warmup included.
  LrSchedule by_hand = CosineScheduler(0.1, 10);
  by_hand.warmup = Warmup{Warmup::Kind::kConstant, 5, 2.0, 0.0};
  CHECK_THROWS_WITH_AS(LearningRate(by_hand, 0), "[CosineScheduler] warmup.multiplier: expected in (0, 1), got 2",
                       std::invalid_argument);
  by_hand = LrSchedule{};  // piecewise constant without values
  CHECK_THROWS_WITH_AS(Validate(by_hand),
                       "[PiecewiseConstantScheduler] values size: expected 1 (one more than boundaries), got 0",
                       std::invalid_argument);
}
