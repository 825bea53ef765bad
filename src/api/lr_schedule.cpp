// Learning-rate schedules: parameter checks and OneFlow's learning-rate kernel
// (oneflow/core/kernel/learning_rate_schedule_kernel.cpp), formula for formula.
#include "weir/lr_schedule.hpp"

#include "kernels/learning_rate_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

namespace weir {

namespace {

using Kind = LrSchedule::Kind;

std::string_view SchedulerName(Kind kind) {
  switch (kind) {
    case Kind::kPiecewiseConstant: return "PiecewiseConstantScheduler";
    case Kind::kPiecewiseScaling: return "PiecewiseScalingScheduler";
    case Kind::kCosine: return "CosineScheduler";
    case Kind::kPolynomial: return "PolynomialScheduler";
    case Kind::kExponential: return "ExponentialScheduler";
    case Kind::kInverseTime: return "InverseTimeScheduler";
    case Kind::kNaturalExp: return "NaturalExpScheduler";
    case Kind::kLinearCosine: return "LinearCosineScheduler";
  }
  return "LrSchedule";
}

[[noreturn]] void ThrowBadParameter(std::string_view who, std::string_view parameter, std::string_view expected,
                                    const std::string& got) {
  throw std::invalid_argument(fmt::format("[{}] {}: expected {}, got {}", who, parameter, expected, got));
}

void CheckFinite(std::string_view who, std::string_view parameter, double value) {
  if (!std::isfinite(value)) ThrowBadParameter(who, parameter, "a finite number", fmt::format("{}", value));
}

void CheckNonNegative(std::string_view who, std::string_view parameter, double value) {
  if (!(value >= 0.0) || !std::isfinite(value)) ThrowBadParameter(who, parameter, ">= 0", fmt::format("{}", value));
}

void CheckPositive(std::string_view who, std::string_view parameter, double value) {
  if (!(value > 0.0) || !std::isfinite(value)) ThrowBadParameter(who, parameter, "> 0", fmt::format("{}", value));
}

// The ranges OneFlow's kernel CHECKs (a crash there, an error here).
void CheckWarmup(const Warmup& warmup, std::string_view who, std::string_view prefix) {
  if (warmup.kind == Warmup::Kind::kNone) return;
  if (warmup.steps < 0) {
    ThrowBadParameter(who, fmt::format("{}steps", prefix), ">= 0", fmt::format("{}", warmup.steps));
  }
  if (warmup.kind == Warmup::Kind::kConstant && !(warmup.multiplier > 0.0 && warmup.multiplier < 1.0)) {
    ThrowBadParameter(who, fmt::format("{}multiplier", prefix), "in (0, 1)", fmt::format("{}", warmup.multiplier));
  }
  if (warmup.kind == Warmup::Kind::kLinear && !(warmup.start_multiplier >= 0.0 && warmup.start_multiplier < 1.0)) {
    ThrowBadParameter(who, fmt::format("{}start_multiplier", prefix), "in [0, 1)",
                      fmt::format("{}", warmup.start_multiplier));
  }
}

void CheckBoundaries(std::string_view who, const std::vector<std::int64_t>& boundaries) {
  for (std::size_t i = 1; i < boundaries.size(); ++i) {
    if (boundaries[i] <= boundaries[i - 1]) {
      ThrowBadParameter(who, fmt::format("boundaries[{}]", i), fmt::format("> boundaries[{}] ({})", i - 1, boundaries[i - 1]),
                        fmt::format("{} (boundaries must increase strictly: [{}])", boundaries[i],
                                    fmt::join(boundaries, ", ")));
    }
  }
}

// One entry per interval, each a finite, non-negative number.
void CheckIntervals(std::string_view who, std::string_view parameter, const std::vector<double>& entries,
                    std::size_t expected_size, std::string_view size_rule) {
  if (entries.size() != expected_size) {
    ThrowBadParameter(who, fmt::format("{} size", parameter), fmt::format("{} ({})", expected_size, size_rule),
                      fmt::format("{}", entries.size()));
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    CheckNonNegative(who, fmt::format("{}[{}]", parameter, i), entries[i]);
  }
}

std::string DescribeWarmup(const Warmup& warmup) {
  switch (warmup.kind) {
    case Warmup::Kind::kNone: return "none";
    case Warmup::Kind::kConstant: return fmt::format("constant(steps={}, multiplier={})", warmup.steps, warmup.multiplier);
    case Warmup::Kind::kLinear:
      return fmt::format("linear(steps={}, start_multiplier={})", warmup.steps, warmup.start_multiplier);
  }
  return "?";
}

LrSchedule Decay(Kind kind, double base_lr, std::int64_t steps, Warmup warmup) {
  LrSchedule schedule;
  schedule.kind = kind;
  schedule.base_lr = base_lr;
  schedule.steps = steps;
  schedule.warmup = warmup;
  return schedule;
}

LrSchedule Validated(LrSchedule schedule) {
  Validate(schedule);
  return schedule;
}

}  // namespace

Warmup ConstantWarmup(std::int64_t steps, double multiplier) {
  Warmup warmup{Warmup::Kind::kConstant, steps, multiplier, 0.0};
  CheckWarmup(warmup, "ConstantWarmup", "");
  return warmup;
}

Warmup LinearWarmup(std::int64_t steps, double start_multiplier) {
  Warmup warmup{Warmup::Kind::kLinear, steps, 1.0, start_multiplier};
  CheckWarmup(warmup, "LinearWarmup", "");
  return warmup;
}

LrSchedule PiecewiseConstantScheduler(std::vector<std::int64_t> boundaries, std::vector<double> values, Warmup warmup) {
  LrSchedule schedule;
  schedule.kind = Kind::kPiecewiseConstant;
  // The warmup scales the first value, as OneFlow passes values[0] as the base learning rate.
  schedule.base_lr = values.empty() ? 0.0 : values.front();
  schedule.boundaries = std::move(boundaries);
  schedule.values = std::move(values);
  schedule.warmup = warmup;
  return Validated(std::move(schedule));
}

LrSchedule PiecewiseScalingScheduler(double base_lr, std::vector<std::int64_t> boundaries, std::vector<double> scale,
                                     Warmup warmup) {
  LrSchedule schedule;
  schedule.kind = Kind::kPiecewiseScaling;
  schedule.base_lr = base_lr;
  if (scale.size() != boundaries.size()) {
    ThrowBadParameter("PiecewiseScalingScheduler", "scale size",
                      fmt::format("{} (one per boundary)", boundaries.size()), fmt::format("{}", scale.size()));
  }
  schedule.boundaries = std::move(boundaries);
  schedule.scales.reserve(scale.size() + 1);
  schedule.scales.push_back(1.0);
  schedule.scales.insert(schedule.scales.end(), scale.begin(), scale.end());
  schedule.warmup = warmup;
  return Validated(std::move(schedule));
}

LrSchedule PiecewiseScalingScheduler(double base_lr, std::vector<std::int64_t> boundaries, double scale,
                                     Warmup warmup) {
  std::vector<double> scales(boundaries.size(), scale);
  return PiecewiseScalingScheduler(base_lr, std::move(boundaries), std::move(scales), warmup);
}

LrSchedule CosineScheduler(double base_lr, std::int64_t steps, double alpha, Warmup warmup) {
  LrSchedule schedule = Decay(Kind::kCosine, base_lr, steps, warmup);
  schedule.alpha = alpha;
  return Validated(std::move(schedule));
}

LrSchedule PolynomialScheduler(double base_lr, std::int64_t steps, double end_learning_rate, double power, bool cycle,
                               Warmup warmup) {
  LrSchedule schedule = Decay(Kind::kPolynomial, base_lr, steps, warmup);
  schedule.end_learning_rate = end_learning_rate;
  schedule.power = power;
  schedule.cycle = cycle;
  return Validated(std::move(schedule));
}

LrSchedule ExponentialScheduler(double base_lr, std::int64_t steps, double decay_rate, bool staircase, Warmup warmup) {
  LrSchedule schedule = Decay(Kind::kExponential, base_lr, steps, warmup);
  schedule.decay_rate = decay_rate;
  schedule.staircase = staircase;
  return Validated(std::move(schedule));
}

LrSchedule InverseTimeScheduler(double base_lr, std::int64_t steps, double decay_rate, bool staircase, Warmup warmup) {
  LrSchedule schedule = Decay(Kind::kInverseTime, base_lr, steps, warmup);
  schedule.decay_rate = decay_rate;
  schedule.staircase = staircase;
  return Validated(std::move(schedule));
}

LrSchedule NaturalExpScheduler(double base_lr, std::int64_t steps, double decay_rate, bool staircase, Warmup warmup) {
  LrSchedule schedule = Decay(Kind::kNaturalExp, base_lr, steps, warmup);
  schedule.decay_rate = decay_rate;
  schedule.staircase = staircase;
  return Validated(std::move(schedule));
}

LrSchedule LinearCosineScheduler(double base_lr, std::int64_t steps, double num_periods, double alpha, double beta,
                                 Warmup warmup) {
  LrSchedule schedule = Decay(Kind::kLinearCosine, base_lr, steps, warmup);
  schedule.num_periods = num_periods;
  schedule.alpha = alpha;
  schedule.beta = beta;
  return Validated(std::move(schedule));
}

void Validate(const LrSchedule& schedule) {
  const std::string_view who = SchedulerName(schedule.kind);
  CheckWarmup(schedule.warmup, who, "warmup.");
  switch (schedule.kind) {
    case Kind::kPiecewiseConstant:
      CheckBoundaries(who, schedule.boundaries);
      CheckIntervals(who, "values", schedule.values, schedule.boundaries.size() + 1, "one more than boundaries");
      return;
    case Kind::kPiecewiseScaling:
      CheckNonNegative(who, "base_lr", schedule.base_lr);
      CheckBoundaries(who, schedule.boundaries);
      CheckIntervals(who, "scales", schedule.scales, schedule.boundaries.size() + 1,
                     "one more than boundaries, the first 1");
      return;
    case Kind::kCosine:
    case Kind::kPolynomial:
    case Kind::kExponential:
    case Kind::kInverseTime:
    case Kind::kNaturalExp:
    case Kind::kLinearCosine: break;
  }
  CheckNonNegative(who, "base_lr", schedule.base_lr);
  if (schedule.steps <= 0) ThrowBadParameter(who, "steps", "> 0", fmt::format("{}", schedule.steps));
  switch (schedule.kind) {
    case Kind::kCosine:
      if (!(schedule.alpha >= 0.0 && schedule.alpha <= 1.0)) {
        ThrowBadParameter(who, "alpha", "in [0, 1]", fmt::format("{}", schedule.alpha));
      }
      break;
    case Kind::kPolynomial:
      CheckNonNegative(who, "end_learning_rate", schedule.end_learning_rate);
      CheckPositive(who, "power", schedule.power);
      break;
    // A rate <= 0 would make pow() NaN or the learning rate grow without bound.
    case Kind::kExponential: CheckPositive(who, "decay_rate", schedule.decay_rate); break;
    case Kind::kInverseTime:
    case Kind::kNaturalExp: CheckNonNegative(who, "decay_rate", schedule.decay_rate); break;
    case Kind::kLinearCosine:
      CheckNonNegative(who, "num_periods", schedule.num_periods);
      CheckFinite(who, "alpha", schedule.alpha);
      CheckFinite(who, "beta", schedule.beta);
      break;
    case Kind::kPiecewiseConstant:
    case Kind::kPiecewiseScaling: break;
  }
}

double LearningRate(const LrSchedule& schedule, std::int64_t train_step) {
  Validate(schedule);
  if (train_step < 0) ThrowBadParameter("LearningRate", "train_step", ">= 0", fmt::format("{}", train_step));
  return internal::ScheduledLearningRate(schedule, train_step);
}

std::string Describe(const LrSchedule& schedule) {
  const std::string_view who = SchedulerName(schedule.kind);
  std::string params;
  switch (schedule.kind) {
    case Kind::kPiecewiseConstant:
      params = fmt::format("boundaries=[{}], values=[{}]", fmt::join(schedule.boundaries, ", "),
                           fmt::join(schedule.values, ", "));
      break;
    case Kind::kPiecewiseScaling:
      params = fmt::format("base_lr={}, boundaries=[{}], scales=[{}]", schedule.base_lr,
                           fmt::join(schedule.boundaries, ", "), fmt::join(schedule.scales, ", "));
      break;
    case Kind::kCosine:
      params = fmt::format("base_lr={}, steps={}, alpha={}", schedule.base_lr, schedule.steps, schedule.alpha);
      break;
    case Kind::kPolynomial:
      params = fmt::format("base_lr={}, steps={}, end_learning_rate={}, power={}, cycle={}", schedule.base_lr,
                           schedule.steps, schedule.end_learning_rate, schedule.power, schedule.cycle);
      break;
    case Kind::kExponential:
    case Kind::kInverseTime:
    case Kind::kNaturalExp:
      params = fmt::format("base_lr={}, steps={}, decay_rate={}, staircase={}", schedule.base_lr, schedule.steps,
                           schedule.decay_rate, schedule.staircase);
      break;
    case Kind::kLinearCosine:
      params = fmt::format("base_lr={}, steps={}, num_periods={}, alpha={}, beta={}", schedule.base_lr,
                           schedule.steps, schedule.num_periods, schedule.alpha, schedule.beta);
      break;
  }
  if (schedule.warmup.kind != Warmup::Kind::kNone) params += fmt::format(", warmup={}", DescribeWarmup(schedule.warmup));
  return fmt::format("{}({})", who, params);
}

}  // namespace weir
