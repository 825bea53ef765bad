#include "kernels/learning_rate_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace weir::internal {
namespace {

using Kind = LrSchedule::Kind;

// The index of the interval `step` falls in; a step equal to a boundary belongs to the interval
// before it (OneFlow's `cur_batch_num <= boundaries[i]`, as TensorFlow's piecewise_constant).
std::size_t IntervalOf(const std::vector<std::int64_t>& boundaries, std::int64_t step) {
  std::size_t i = 0;
  while (i < boundaries.size() && step > boundaries[i]) ++i;
  return i;
}

double DecayedLearningRate(const LrSchedule& schedule, std::int64_t train_step) {
  const double lr = schedule.base_lr;
  const double step = static_cast<double>(train_step);
  const double steps = static_cast<double>(schedule.steps);
  switch (schedule.kind) {
    case Kind::kPiecewiseConstant: return schedule.values[IntervalOf(schedule.boundaries, train_step)];
    case Kind::kPiecewiseScaling: return lr * schedule.scales[IntervalOf(schedule.boundaries, train_step)];
    case Kind::kCosine: {
      const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * std::min(step, steps) / steps));
      return lr * ((1.0 - schedule.alpha) * cosine + schedule.alpha);
    }
    case Kind::kPolynomial: {
      double current = step;
      double decay_steps = steps;
      if (schedule.cycle) {
        // OneFlow treats step 0 as step 1 here (TensorFlow keeps 0 and returns base_lr); we follow OneFlow.
        if (train_step == 0) current = 1.0;
        decay_steps *= std::ceil(current / decay_steps);
      } else {
        current = std::min(current, decay_steps);
      }
      return (lr - schedule.end_learning_rate) * std::pow(1.0 - current / decay_steps, schedule.power) +
             schedule.end_learning_rate;
    }
    case Kind::kExponential:
    case Kind::kInverseTime:
    case Kind::kNaturalExp: {
      double progress = step / steps;
      if (schedule.staircase) progress = std::floor(progress);
      if (schedule.kind == Kind::kExponential) return lr * std::pow(schedule.decay_rate, progress);
      if (schedule.kind == Kind::kInverseTime) return lr / (1.0 + schedule.decay_rate * progress);
      return lr * std::exp(-schedule.decay_rate * progress);
    }
    case Kind::kLinearCosine: {
      const double current = std::min(step, steps);
      const double linear = (steps - current) / steps;
      const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * 2.0 * schedule.num_periods * current / steps));
      return lr * ((schedule.alpha + linear) * cosine + schedule.beta);
    }
  }
  return lr;
}

}  // namespace

double ScheduledLearningRate(const LrSchedule& schedule, std::int64_t train_step) {
  const Warmup& warmup = schedule.warmup;
  // OneFlow: inside the warmup the decay is skipped; after it the decay sees the raw step.
  if (warmup.kind != Warmup::Kind::kNone && train_step < warmup.steps) {
    const double base_lr = schedule.kind == Kind::kPiecewiseConstant ? schedule.values.front() : schedule.base_lr;
    if (warmup.kind == Warmup::Kind::kConstant) return base_lr * warmup.multiplier;
    const double progress = static_cast<double>(train_step) / static_cast<double>(warmup.steps);
    return base_lr * (warmup.start_multiplier + (1.0 - warmup.start_multiplier) * progress);
  }
  return DecayedLearningRate(schedule, train_step);
}

}  // namespace weir::internal
