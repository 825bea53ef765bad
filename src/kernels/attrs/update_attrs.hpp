#pragma once
// Typed attributes shared by the training ops' definitions (graph/ops) and their kernels.
#include "weir/job.hpp"
#include "weir/lr_schedule.hpp"
#include "weir/optimizers.hpp"

namespace weir::internal {

/// Attributes of the update ops (sgd_update, momentum_update, ...).
struct UpdateAttrs {
  Optimizer optimizer;
  Regularizer regularizer;
  /// Multiplies the incoming gradient first (1 / loss elements / loss scale).
  double gradient_scale = 1.0;
};

/// Attributes of clip_by_global_norm: every gradient times clip_norm / max(global_norm, clip_norm),
/// the global norm taken over the gradients times `gradient_scale` (the scale the updates apply).
struct ClipByGlobalNormAttrs {
  double clip_norm = 1.0;
  double gradient_scale = 1.0;
};

/// Attributes of learning_rate: the schedule evaluated at the train step.
struct LearningRateAttrs {
  LrSchedule schedule;
};

}  // namespace weir::internal
