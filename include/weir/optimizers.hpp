#pragma once
/// \file Optimizers for train jobs (OneFlow's flow.optimizer.*). A train job calls
/// JobBuilder::Minimize(optimizer, loss) once; the backward pass and one update per trainable
/// variable then run inside every call, as actors.
#include <cstdint>
#include <optional>
#include <vector>

#include "weir/lr_schedule.hpp"
#include "weir/op_attrs.hpp"

namespace weir {

/// OneFlow's SGD; note its default momentum is 0.9 (the docs pass momentum=0 for plain SGD).
Optimizer Sgd(LrSchedule learning_rate, double momentum = 0.9);
/// Adam without bias correction unless asked for, as OneFlow.
Optimizer Adam(LrSchedule learning_rate, double beta1 = 0.9, double beta2 = 0.999, double epsilon = 1e-8,
               bool do_bias_correction = false);
Optimizer AdamW(LrSchedule learning_rate, double weight_decay, double beta1 = 0.9, double beta2 = 0.999,
                double epsilon = 1e-8, bool do_bias_correction = false);
Optimizer RmsProp(LrSchedule learning_rate, double decay_rate = 0.99, double epsilon = 1e-8, bool centered = false);
Optimizer Lamb(LrSchedule learning_rate, double beta1 = 0.9, double beta2 = 0.999, double epsilon = 1e-6,
               double weight_decay = 0.0);
/// OneFlow's LARS: per variable, the rate lr · lars_coefficient · ‖p‖ / (epsilon + ‖g‖) (g regularized,
/// norms over the whole variable), then momentum: v = momentum_beta·v − rate·g, p += v.
Optimizer Lars(LrSchedule learning_rate, double momentum_beta = 0.9, double epsilon = 1e-9,
               double lars_coefficient = 0.0001);
/// `optimizer` with gradient clipping by global norm.
Optimizer ClipByGlobalNorm(Optimizer optimizer, double clip_norm);
/// Several optimizers in one job (OneFlow's CombinedOptimizer): each part names the variables it
/// trains (disjoint sets) and has no loss scale of its own; set the loss scale on the result.
Optimizer Combined(std::vector<Optimizer> parts);

}  // namespace weir
