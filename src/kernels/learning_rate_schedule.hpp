#pragma once
// The learning rate a schedule gives at a train step: the math of the learning_rate kernel
// (kernels/functors/learning_rate.hpp, which the CUDA kernel shares), which weir::LearningRate (the
// public API, which validates first) also uses.
#include <cstdint>

#include "weir/lr_schedule.hpp"

namespace weir::internal {

/// The warmup while train_step < warmup.steps, else the decay at the raw train_step (OneFlow's
/// learning-rate kernel). `schedule` must be valid (Validate) and train_step >= 0.
double ScheduledLearningRate(const LrSchedule& schedule, std::int64_t train_step);

}  // namespace weir::internal
