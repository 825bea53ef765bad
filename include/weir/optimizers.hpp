#pragma once
/// \file Optimizers for train jobs (OneFlow's flow.optimizer.*). A train job calls
/// JobBuilder::Minimize(optimizer, loss) once; the backward pass and one update per trainable
/// variable then run inside every call, as actors.
#include <cstdint>
#include <optional>

#include "weir/lr_schedule.hpp"

namespace weir {

struct Optimizer {
  enum class Kind : std::uint8_t { kSgd, kAdam, kAdamW, kRmsProp, kLamb };
  Kind kind = Kind::kSgd;
  LrSchedule learning_rate;
  /// kSgd: 0 is plain SGD (p -= lr·g); otherwise v = momentum·v - lr·g, p += v.
  double momentum = 0.9;
  /// kAdam, kAdamW, kLamb.
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  bool do_bias_correction = false;
  /// kAdamW, kLamb: decoupled weight decay.
  double weight_decay = 0.0;
  /// kRmsProp.
  double decay_rate = 0.99;
  bool centered = false;
  /// Clip the gradients by their global norm before the update.
  std::optional<double> clip_norm;
  /// The loss gradient is seeded with this value; gradients are divided by it again.
  double loss_scale_factor = 1.0;

  friend bool operator==(const Optimizer&, const Optimizer&) = default;
};

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
/// `optimizer` with gradient clipping by global norm.
Optimizer ClipByGlobalNorm(Optimizer optimizer, double clip_norm);

}  // namespace weir
