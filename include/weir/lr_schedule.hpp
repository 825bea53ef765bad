#pragma once
/// \file Learning-rate schedules: OneFlow's `flow.optimizer.*Scheduler` and `flow.optimizer.warmup.*` as
/// typed descriptions, and the learning rate they give at a train step.
#include <cstdint>
#include <string>
#include <vector>

namespace weir {

/// A warmup in front of a schedule. While train_step < steps the learning rate is the schedule's base
/// learning rate times the warmup multiplier; the decay is not applied then (OneFlow's kernel).
struct Warmup {
  enum class Kind : std::uint8_t { kNone, kConstant, kLinear };
  Kind kind = Kind::kNone;
  std::int64_t steps = 0;
  /// kConstant: in (0, 1).
  double multiplier = 1.0;
  /// kLinear: in [0, 1); the multiplier rises linearly from it to 1 over `steps`.
  double start_multiplier = 0.0;

  friend bool operator==(const Warmup&, const Warmup&) = default;
};

/// `flow.optimizer.warmup.constant(steps, multiplier)`.
Warmup ConstantWarmup(std::int64_t steps, double multiplier);
/// `flow.optimizer.warmup.linear(steps, start_multiplier)`.
Warmup LinearWarmup(std::int64_t steps, double start_multiplier);

/// One of OneFlow's learning-rate schedulers. Build one with the factory functions below; only the
/// fields of its `kind` are read.
struct LrSchedule {
  enum class Kind : std::uint8_t {
    kPiecewiseConstant,
    kPiecewiseScaling,
    kCosine,
    kPolynomial,
    kExponential,
    kInverseTime,
    kNaturalExp,
    kLinearCosine,
  };
  Kind kind = Kind::kPiecewiseConstant;
  /// The learning rate the decay and the warmup scale. kPiecewiseConstant ignores it: its warmup
  /// scales values[0] (the factory copies values[0] here for display).
  double base_lr = 0.0;
  /// kPiecewiseConstant, kPiecewiseScaling: strictly increasing train steps. A step equal to a
  /// boundary still belongs to the interval before it.
  std::vector<std::int64_t> boundaries;
  /// kPiecewiseConstant: the learning rate of each interval (boundaries.size() + 1 entries).
  std::vector<double> values;
  /// kPiecewiseScaling: the factor of base_lr in each interval (boundaries.size() + 1 entries, the first 1).
  std::vector<double> scales;
  /// The decay's length in train steps (every kind but the piecewise ones).
  std::int64_t steps = 0;
  /// kCosine: the fraction of base_lr the decay ends at. kLinearCosine: added to the linear decay.
  double alpha = 0.0;
  /// kLinearCosine.
  double beta = 0.001;
  double num_periods = 0.5;
  /// kPolynomial.
  double end_learning_rate = 1e-4;
  double power = 1.0;
  bool cycle = false;
  /// kExponential, kInverseTime, kNaturalExp.
  double decay_rate = 0.0;
  bool staircase = false;
  Warmup warmup;

  friend bool operator==(const LrSchedule&, const LrSchedule&) = default;
};

/// values[i] while boundaries[i-1] < step <= boundaries[i]; `({}, {0.1})` is a constant 0.1.
LrSchedule PiecewiseConstantScheduler(std::vector<std::int64_t> boundaries, std::vector<double> values,
                                      Warmup warmup = {});
/// base_lr until the first boundary, then base_lr · scale[i] after boundary i (scale.size() == boundaries.size()).
LrSchedule PiecewiseScalingScheduler(double base_lr, std::vector<std::int64_t> boundaries, std::vector<double> scale,
                                     Warmup warmup = {});
/// OneFlow's scalar form: the same scale after every boundary.
LrSchedule PiecewiseScalingScheduler(double base_lr, std::vector<std::int64_t> boundaries, double scale,
                                     Warmup warmup = {});
/// base_lr · ((1 - alpha) · 0.5 · (1 + cos(π · min(step, steps) / steps)) + alpha).
LrSchedule CosineScheduler(double base_lr, std::int64_t steps, double alpha = 0.0, Warmup warmup = {});
/// (base_lr - end) · (1 - step / steps)^power + end, with step clamped to steps; with `cycle` the decay
/// restarts: steps becomes steps · ceil(step / steps) (OneFlow counts step 0 as step 1 there).
LrSchedule PolynomialScheduler(double base_lr, std::int64_t steps, double end_learning_rate = 1e-4, double power = 1.0,
                               bool cycle = false, Warmup warmup = {});
/// base_lr · decay_rate^(step / steps), the exponent floored if `staircase`.
LrSchedule ExponentialScheduler(double base_lr, std::int64_t steps, double decay_rate, bool staircase = false,
                                Warmup warmup = {});
/// base_lr / (1 + decay_rate · step / steps), the ratio floored if `staircase`.
LrSchedule InverseTimeScheduler(double base_lr, std::int64_t steps, double decay_rate, bool staircase = false,
                                Warmup warmup = {});
/// base_lr · exp(-decay_rate · step / steps), the ratio floored if `staircase`.
LrSchedule NaturalExpScheduler(double base_lr, std::int64_t steps, double decay_rate, bool staircase = false,
                               Warmup warmup = {});
/// TensorFlow's linear cosine decay, with s = min(step, steps):
/// base_lr · ((alpha + (steps - s) / steps) · 0.5 · (1 + cos(2π · num_periods · s / steps)) + beta).
LrSchedule LinearCosineScheduler(double base_lr, std::int64_t steps, double num_periods = 0.5, double alpha = 0.0,
                                 double beta = 0.001, Warmup warmup = {});

/// Throws std::invalid_argument naming the scheduler, the parameter, the expected and the received value.
void Validate(const LrSchedule& schedule);

/// The learning rate at `train_step` (0 for the first step), as OneFlow's learning-rate kernel computes
/// it: the warmup while train_step < warmup.steps, else the decay at the raw train_step (not offset by
/// the warmup's length).
double LearningRate(const LrSchedule& schedule, std::int64_t train_step);

/// "CosineScheduler(base_lr=0.1, steps=1000, alpha=0, warmup=linear(steps=10, start_multiplier=0))".
std::string Describe(const LrSchedule& schedule);

}  // namespace weir
