#pragma once
// Typed attributes shared by the training ops' definitions (graph/ops) and their kernels.
#include <string>
#include <vector>

#include "weir/op_attrs.hpp"
#include "weir/lr_schedule.hpp"

namespace weir::internal {

/// Attributes of the update ops (sgd_update, momentum_update, ...).
struct UpdateAttrs {
  Optimizer optimizer;
  Regularizer regularizer;
  /// Multiplies the incoming gradient first (1 / loss elements / loss scale).
  double gradient_scale = 1.0;
  /// The update's last input is a flag, f32(1): any value but 0 (a NaN too) leaves the variable and
  /// its slots as they are (dynamic loss scaling's step whose gradients are not finite).
  bool skip_if = false;
};

/// Attributes of dynamic_loss_scale_update, the schedule of dynamic loss scaling (OneFlow's
/// dynamic_loss_scale_schedule): after a step whose gradients were finite (flag 0) the count of good
/// steps grows, and at `increment_period` the scale is multiplied by `multiplier` and the count
/// restarts; after any other step the scale is divided by `multiplier` (not below 1), the count
/// restarts and the count of skipped steps grows.
struct DynamicLossScaleAttrs {
  std::int64_t increment_period = 2000;
  double multiplier = 2.0;
};

/// Attributes of multi_update, a kernel the planner fuses (graph/fusion.hpp): several updates of one
/// kind (sgd_update, momentum_update, adam_update or rmsprop_update), one optimizer, one learning rate
/// and train step, made by one kernel (on a GPU, one launch for all the tensors). Its inputs are the
/// members' inputs one member after the other, `arity[j]` of member j; no output.
struct MultiUpdateAttrs {
  std::string update;
  std::vector<UpdateAttrs> members;  // each variable's own regularizer and gradient scale
  std::vector<int> arity;
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
