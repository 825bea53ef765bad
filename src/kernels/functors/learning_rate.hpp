#pragma once
// The learning rate a schedule gives at a train step (OneFlow's learning-rate kernel), for the CPU
// kernel (and weir::LearningRate) and the CUDA kernel's device code alike. The schedule is read
// through a view whose arrays may be in host or device memory.
#include <cmath>
#include <cstdint>

#include "kernels/functors/host_device.hpp"
#include "weir/lr_schedule.hpp"

namespace weir::internal {

struct ScheduleView {
  LrSchedule::Kind kind = LrSchedule::Kind::kPiecewiseConstant;
  double base_lr = 0;
  const std::int64_t* boundaries = nullptr;  // boundary_count of them
  std::int64_t boundary_count = 0;
  const double* values = nullptr;  // kPiecewiseConstant: boundary_count + 1
  const double* scales = nullptr;  // kPiecewiseScaling: boundary_count + 1
  std::int64_t steps = 0;
  double alpha = 0, beta = 0, num_periods = 0, end_learning_rate = 0, power = 1, decay_rate = 0;
  bool cycle = false, staircase = false;
  Warmup::Kind warmup = Warmup::Kind::kNone;
  std::int64_t warmup_steps = 0;
  double warmup_multiplier = 1, warmup_start_multiplier = 0;
};

/// The view of `schedule` with its arrays at the given addresses (its own, or copies on a device).
inline ScheduleView ViewOf(const LrSchedule& schedule, const std::int64_t* boundaries, const double* values,
                           const double* scales) {
  ScheduleView v;
  v.kind = schedule.kind;
  v.base_lr = schedule.base_lr;
  v.boundaries = boundaries;
  v.boundary_count = static_cast<std::int64_t>(schedule.boundaries.size());
  v.values = values;
  v.scales = scales;
  v.steps = schedule.steps;
  v.alpha = schedule.alpha;
  v.beta = schedule.beta;
  v.num_periods = schedule.num_periods;
  v.end_learning_rate = schedule.end_learning_rate;
  v.power = schedule.power;
  v.decay_rate = schedule.decay_rate;
  v.cycle = schedule.cycle;
  v.staircase = schedule.staircase;
  v.warmup = schedule.warmup.kind;
  v.warmup_steps = schedule.warmup.steps;
  v.warmup_multiplier = schedule.warmup.multiplier;
  v.warmup_start_multiplier = schedule.warmup.start_multiplier;
  return v;
}

// The index of the interval `step` falls in; a step equal to a boundary belongs to the interval
// before it (OneFlow's `cur_batch_num <= boundaries[i]`, as TensorFlow's piecewise_constant).
WEIR_HOST_DEVICE inline std::int64_t IntervalOf(const ScheduleView& v, std::int64_t step) {
  std::int64_t i = 0;
  while (i < v.boundary_count && step > v.boundaries[i]) ++i;
  return i;
}

WEIR_HOST_DEVICE inline double DecayedLearningRate(const ScheduleView& v, std::int64_t train_step) {
  using Kind = LrSchedule::Kind;
  constexpr double kPi = 3.14159265358979323846;
  const double lr = v.base_lr;
  const double step = static_cast<double>(train_step);
  const double steps = static_cast<double>(v.steps);
  switch (v.kind) {
    case Kind::kPiecewiseConstant: return v.values[IntervalOf(v, train_step)];
    case Kind::kPiecewiseScaling: return lr * v.scales[IntervalOf(v, train_step)];
    case Kind::kCosine: {
      const double cosine = 0.5 * (1.0 + std::cos(kPi * (step < steps ? step : steps) / steps));
      return lr * ((1.0 - v.alpha) * cosine + v.alpha);
    }
    case Kind::kPolynomial: {
      double current = step;
      double decay_steps = steps;
      if (v.cycle) {
        // OneFlow treats step 0 as step 1 here (TensorFlow keeps 0 and returns base_lr); we follow OneFlow.
        if (train_step == 0) current = 1.0;
        decay_steps *= std::ceil(current / decay_steps);
      } else {
        current = current < decay_steps ? current : decay_steps;
      }
      return (lr - v.end_learning_rate) * std::pow(1.0 - current / decay_steps, v.power) + v.end_learning_rate;
    }
    case Kind::kExponential:
    case Kind::kInverseTime:
    case Kind::kNaturalExp: {
      double progress = step / steps;
      if (v.staircase) progress = std::floor(progress);
      if (v.kind == Kind::kExponential) return lr * std::pow(v.decay_rate, progress);
      if (v.kind == Kind::kInverseTime) return lr / (1.0 + v.decay_rate * progress);
      return lr * std::exp(-v.decay_rate * progress);
    }
    case Kind::kLinearCosine: {
      const double current = step < steps ? step : steps;
      const double linear = (steps - current) / steps;
      const double cosine = 0.5 * (1.0 + std::cos(kPi * 2.0 * v.num_periods * current / steps));
      return lr * ((v.alpha + linear) * cosine + v.beta);
    }
  }
  return lr;
}

/// The warmup while train_step < warmup steps, else the decay at the raw train_step. The schedule
/// must be valid (LrSchedule validation) and train_step >= 0.
WEIR_HOST_DEVICE inline double ScheduledLearningRate(const ScheduleView& v, std::int64_t train_step) {
  // OneFlow: inside the warmup the decay is skipped; after it the decay sees the raw step.
  if (v.warmup != Warmup::Kind::kNone && train_step < v.warmup_steps) {
    const double base_lr = v.kind == LrSchedule::Kind::kPiecewiseConstant ? v.values[0] : v.base_lr;
    if (v.warmup == Warmup::Kind::kConstant) return base_lr * v.warmup_multiplier;
    const double progress = static_cast<double>(train_step) / static_cast<double>(v.warmup_steps);
    return base_lr * (v.warmup_start_multiplier + (1.0 - v.warmup_start_multiplier) * progress);
  }
  return DecayedLearningRate(v, train_step);
}

}  // namespace weir::internal
