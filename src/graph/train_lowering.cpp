#include "graph/train_lowering.hpp"

#include <algorithm>
#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "graph/autodiff.hpp"
#include "graph/op_registry.hpp"
#include "kernels/attrs/gradient_attrs.hpp"
#include "kernels/attrs/update_attrs.hpp"
#include "weir/initializers.hpp"
#include "weir/ops.hpp"

namespace weir {

Optimizer Sgd(LrSchedule learning_rate, double momentum) {
  Optimizer optimizer;
  optimizer.kind = Optimizer::Kind::kSgd;
  optimizer.learning_rate = std::move(learning_rate);
  optimizer.momentum = momentum;
  return optimizer;
}

Optimizer Adam(LrSchedule learning_rate, double beta1, double beta2, double epsilon, bool do_bias_correction) {
  Optimizer optimizer;
  optimizer.kind = Optimizer::Kind::kAdam;
  optimizer.learning_rate = std::move(learning_rate);
  optimizer.beta1 = beta1;
  optimizer.beta2 = beta2;
  optimizer.epsilon = epsilon;
  optimizer.do_bias_correction = do_bias_correction;
  return optimizer;
}

Optimizer AdamW(LrSchedule learning_rate, double weight_decay, double beta1, double beta2, double epsilon,
                bool do_bias_correction) {
  Optimizer optimizer = Adam(std::move(learning_rate), beta1, beta2, epsilon, do_bias_correction);
  optimizer.kind = Optimizer::Kind::kAdamW;
  optimizer.weight_decay = weight_decay;
  return optimizer;
}

Optimizer RmsProp(LrSchedule learning_rate, double decay_rate, double epsilon, bool centered) {
  Optimizer optimizer;
  optimizer.kind = Optimizer::Kind::kRmsProp;
  optimizer.learning_rate = std::move(learning_rate);
  optimizer.decay_rate = decay_rate;
  optimizer.epsilon = epsilon;
  optimizer.centered = centered;
  return optimizer;
}

Optimizer Lamb(LrSchedule learning_rate, double beta1, double beta2, double epsilon, double weight_decay) {
  Optimizer optimizer = Adam(std::move(learning_rate), beta1, beta2, epsilon, false);
  optimizer.kind = Optimizer::Kind::kLamb;
  optimizer.weight_decay = weight_decay;
  return optimizer;
}

Optimizer Lars(LrSchedule learning_rate, double momentum_beta, double epsilon, double lars_coefficient) {
  Optimizer optimizer;
  optimizer.kind = Optimizer::Kind::kLars;
  optimizer.learning_rate = std::move(learning_rate);
  optimizer.momentum = momentum_beta;
  optimizer.epsilon = epsilon;
  optimizer.lars_coefficient = lars_coefficient;
  return optimizer;
}

Optimizer ClipByGlobalNorm(Optimizer optimizer, double clip_norm) {
  optimizer.clip_norm = clip_norm;
  return optimizer;
}

namespace internal {

namespace {

std::string_view KindName(Optimizer::Kind kind) {
  switch (kind) {
    case Optimizer::Kind::kSgd: return "sgd";
    case Optimizer::Kind::kAdam: return "adam";
    case Optimizer::Kind::kAdamW: return "adamw";
    case Optimizer::Kind::kRmsProp: return "rmsprop";
    case Optimizer::Kind::kLamb: return "lamb";
    case Optimizer::Kind::kLars: return "lars";
  }
  return "?";
}

void Require(bool ok, const Optimizer& optimizer, std::string_view parameter, std::string_view expected, double got) {
  if (!ok) {
    throw std::invalid_argument(fmt::format("[optimizer {}] '{}' must be {}, got {}", KindName(optimizer.kind),
                                            parameter, expected, got));
  }
}

// The slot variable `<variable>-<suffix>` an optimizer keeps per variable, zero-initialised.
Blob Slot(const std::shared_ptr<JobGraph>& graph, const VariableAttrs& variable, std::string_view suffix) {
  VariableSpec spec;
  spec.shape = variable.spec.shape;
  spec.dtype = variable.spec.dtype;
  spec.trainable = false;
  spec.distribute = variable.spec.distribute;  // a split variable's slots are split alike
  return AddVariable(graph, fmt::format("{}-{}", variable.name, suffix), spec);
}

// Whether `variable` decays under the optimizer's weight decay: OneFlow's filter, each pattern searched
// for in the variable's name.
bool Decays(const Optimizer& optimizer, const std::string& variable) {
  const auto found = [&variable](const std::vector<std::string>& patterns) {
    return std::any_of(patterns.begin(), patterns.end(),
                       [&variable](const std::string& pattern) { return std::regex_search(variable, std::regex(pattern)); });
  };
  if (!optimizer.weight_decay_includes.empty()) return found(optimizer.weight_decay_includes);
  return !found(optimizer.weight_decay_excludes);
}

void RequirePatterns(const Optimizer& optimizer, std::string_view parameter, const std::vector<std::string>& patterns) {
  for (const std::string& pattern : patterns) {
    try {
      std::regex(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& error) {
      throw std::invalid_argument(fmt::format("[optimizer {}] '{}' pattern '{}' is not a regular expression: {}",
                                              KindName(optimizer.kind), parameter, pattern, error.what()));
    }
  }
}

}  // namespace

void ValidateOptimizer(const Optimizer& optimizer) {
  Validate(optimizer.learning_rate);
  Require(optimizer.momentum >= 0 && optimizer.momentum < 1, optimizer, "momentum", "in [0, 1)", optimizer.momentum);
  Require(optimizer.beta1 >= 0 && optimizer.beta1 < 1, optimizer, "beta1", "in [0, 1)", optimizer.beta1);
  Require(optimizer.beta2 >= 0 && optimizer.beta2 < 1, optimizer, "beta2", "in [0, 1)", optimizer.beta2);
  // 0 is allowed, as in OneFlow and Keras: the user then guards against a zero denominator.
  Require(optimizer.epsilon >= 0, optimizer, "epsilon", "non-negative", optimizer.epsilon);
  Require(optimizer.weight_decay >= 0, optimizer, "weight_decay", "non-negative", optimizer.weight_decay);
  Require(optimizer.lars_coefficient >= 0, optimizer, "lars_coefficient", "non-negative", optimizer.lars_coefficient);
  Require(optimizer.decay_rate >= 0 && optimizer.decay_rate < 1, optimizer, "decay_rate", "in [0, 1)",
          optimizer.decay_rate);
  Require(optimizer.loss_scale_factor > 0, optimizer, "loss_scale_factor", "positive", optimizer.loss_scale_factor);
  if (const auto& dynamic = optimizer.dynamic_loss_scale) {
    Require(dynamic->initial_loss_scale >= 1 && std::isfinite(dynamic->initial_loss_scale), optimizer,
            "dynamic_loss_scale.initial_loss_scale", ">= 1 and finite", dynamic->initial_loss_scale);
    Require(dynamic->increment_period >= 1, optimizer, "dynamic_loss_scale.increment_period", ">= 1",
            dynamic->increment_period);
    Require(dynamic->multiplier > 1 && std::isfinite(dynamic->multiplier), optimizer, "dynamic_loss_scale.multiplier",
            "> 1 and finite", dynamic->multiplier);
    Require(optimizer.loss_scale_factor == 1.0, optimizer, "loss_scale_factor", "1 with dynamic_loss_scale",
            optimizer.loss_scale_factor);
  }
  if (optimizer.clip_norm) Require(*optimizer.clip_norm > 0, optimizer, "clip_norm", "positive", *optimizer.clip_norm);
  if (optimizer.lazy && (optimizer.kind != Optimizer::Kind::kAdam || !optimizer.do_bias_correction)) {
    throw std::invalid_argument(fmt::format("[optimizer {}] 'lazy' is LazyAdam's: Adam with bias correction",
                                            KindName(optimizer.kind)));
  }
  if (!optimizer.weight_decay_includes.empty() && !optimizer.weight_decay_excludes.empty()) {
    throw std::invalid_argument(fmt::format("[optimizer {}] give 'weight_decay_includes' or 'weight_decay_excludes', not both",
                                            KindName(optimizer.kind)));
  }
  RequirePatterns(optimizer, "weight_decay_includes", optimizer.weight_decay_includes);
  RequirePatterns(optimizer, "weight_decay_excludes", optimizer.weight_decay_excludes);
}

namespace {

// A non-trainable f32 or i64 scalar variable of dynamic loss scaling, starting at `initial`.
Blob ScaleVariable(const std::shared_ptr<JobGraph>& graph, const std::string& name, DType dtype, double initial) {
  VariableSpec spec;
  spec.shape = Shape{1};
  spec.dtype = dtype;
  spec.trainable = false;
  spec.initializer = ConstantInitializer(initial);
  return AddVariable(graph, name, spec);
}

// `scalar` (f32(1)) in the dtype of `like` and shaped to broadcast against it.
Blob ScalarLike(const Blob& scalar, const Blob& like) {
  Blob value = like.GetDType() == scalar.GetDType() ? scalar : Cast(scalar, {like.GetDType()});
  return like.GetShape().Rank() == 0 ? Reshape(value, {.shape = {}}) : value;
}

// Dynamic loss scaling's flag, f32(1): 0 when every gradient is finite, NaN otherwise (each gradient
// times 0, summed: inf·0 and NaN·0 are NaN).
Blob NonFiniteFlag(const std::vector<Blob>& gradients) {
  Blob flag;
  for (const Blob& gradient : gradients) {
    if (!gradient.Defined()) continue;
    Blob zeros = ReduceSum(ScalarMul(gradient, 0.0));
    if (zeros.GetDType() != DType::kF32) zeros = Cast(zeros, {DType::kF32});
    flag = flag.Defined() ? Add(flag, zeros) : zeros;
  }
  return Reshape(flag, {.shape = {1}});
}

}  // namespace

std::string LossScaleVariableName(std::string_view job_name) { return fmt::format("System-Train-LossScale-{}", job_name); }
std::string LossScaleGoodStepsVariableName(std::string_view job_name) {
  return fmt::format("System-Train-LossScaleGoodSteps-{}", job_name);
}
std::string SkippedStepsVariableName(std::string_view job_name) {
  return fmt::format("System-Train-SkippedSteps-{}", job_name);
}

void LowerTraining(const std::shared_ptr<JobGraph>& graph) {
  const Optimizer& optimizer = *graph->optimizer;
  const Blob loss(graph, graph->loss_value);

  // Outputs that name a variable this step updates read its value from before the update: the
  // planner copies them for every job type (CompilePlan), so nothing is inserted here.

  std::vector<Blob> variables;
  std::vector<VariableAttrs> variable_attrs;
  std::vector<std::string> trainable;  // by name, for the error below
  const std::vector<std::string>& chosen = optimizer.variables;
  for (const OpNode& node : graph->nodes) {
    if (node.type != kVariableOp) continue;
    const auto& attrs = std::any_cast<const VariableAttrs&>(node.attrs);
    if (!attrs.spec.trainable || !IsFloating(*attrs.spec.dtype)) continue;
    trainable.push_back(attrs.name);
    if (!chosen.empty() && std::find(chosen.begin(), chosen.end(), attrs.name) == chosen.end()) continue;
    variables.emplace_back(graph, node.outputs[0]);
    variable_attrs.push_back(attrs);
  }
  for (const std::string& name : chosen) {
    if (std::find(trainable.begin(), trainable.end(), name) == trainable.end()) {
      throw std::invalid_argument(fmt::format("[optimizer {}] variables: '{}' is not a trainable floating variable of job "
                                              "'{}' (those are: {})", KindName(optimizer.kind), name, graph->name,
                                              fmt::join(trainable, ", ")));
    }
  }

  Blob seed;
  if (optimizer.loss_scale_factor != 1.0) {
    Tensor scale(loss.GetShape(), loss.GetDType());
    for (std::int64_t i = 0; i < scale.NumElements(); ++i) {
      if (loss.GetDType() == DType::kF32) scale.Data<float>()[i] = static_cast<float>(optimizer.loss_scale_factor);
      else scale.Data<double>()[i] = optimizer.loss_scale_factor;
    }
    seed = AddConstant(graph, scale, "loss_scale");
  }
  // Dynamic loss scaling: the seed is the scale variable, spread over the loss.
  Blob loss_scale;
  if (const auto& dynamic = optimizer.dynamic_loss_scale) {
    loss_scale = ScaleVariable(graph, LossScaleVariableName(graph->name), DType::kF32, dynamic->initial_loss_scale);
    const Blob scale = ScalarLike(loss_scale, loss);
    seed = scale.GetShape() == loss.GetShape() ? scale
                                                : AddOp1("broadcast_to", {scale}, BroadcastToAttrs{loss.GetShape()},
                                                         "loss_scale_seed");
  }
  std::vector<Blob> wrt = variables;
  for (const WatchSpec& watch : graph->watches) {
    if (watch.diff) wrt.emplace_back(graph, watch.value);
  }
  std::vector<Blob> grads = BuildGradients(loss, wrt, seed);
  if (loss_scale.Defined()) {  // every gradient divided by the scale again
    const Blob inverse = Reciprocal(loss_scale);
    for (Blob& grad : grads) {
      if (grad.Defined()) grad = Mul(grad, ScalarLike(inverse, grad));
    }
  }
  for (std::size_t w = 0, g = variables.size(); w < graph->watches.size(); ++w) {
    if (!graph->watches[w].diff) continue;
    Blob grad = grads[g++];
    if (!grad.Defined()) {  // the loss does not depend on it: its gradient is zero
      grad = ScalarMul(Blob(graph, graph->watches[w].value), 0.0);
    }
    graph->outputs.emplace_back(fmt::format("{}{}", kWatchOutputPrefix, w), grad.ValueId());
  }
  grads.resize(variables.size());
  for (const Blob& grad : grads) {
    if (grad.Defined()) graph->variable_gradients.push_back(grad.ValueId());
  }
  const double gradient_scale = 1.0 / (static_cast<double>(loss.GetShape().NumElements()) * optimizer.loss_scale_factor);
  if (optimizer.clip_norm) {
    // One op over every gradient, so that the norm is global; the updates then see clipped gradients.
    std::vector<Blob> defined;
    for (const Blob& grad : grads) {
      if (grad.Defined()) defined.push_back(grad);
    }
    if (!defined.empty()) {
      const std::vector<Blob> clipped = AddOp("clip_by_global_norm", defined,
                                              ClipByGlobalNormAttrs{*optimizer.clip_norm, gradient_scale},
                                              "clip_by_global_norm");
      for (std::size_t i = 0, c = 0; i < grads.size(); ++i) {
        if (grads[i].Defined()) grads[i] = clipped[c++];
      }
    }
  }

  VariableSpec step_spec;
  step_spec.shape = Shape{1};
  step_spec.dtype = DType::kI64;
  step_spec.trainable = false;
  const Blob step = AddVariable(graph, TrainStepVariableName(graph->name), step_spec);
  const Blob learning_rate = AddOp1("learning_rate", {step}, LearningRateAttrs{optimizer.learning_rate}, "learning_rate");
  // Dynamic loss scaling: each update skips a step whose flag says some gradient is not finite.
  const Blob skip_flag = loss_scale.Defined() ? NonFiniteFlag(grads) : Blob();

  for (std::size_t i = 0; i < variables.size(); ++i) {
    if (!grads[i].Defined()) continue;  // the loss does not depend on this variable
    const VariableAttrs& attrs = variable_attrs[i];
    Optimizer own = optimizer;  // this variable's: without decay where the filter leaves it out
    if (own.weight_decay != 0 && !Decays(optimizer, attrs.name)) own.weight_decay = 0;
    const UpdateAttrs update{std::move(own), attrs.spec.regularizer, gradient_scale, skip_flag.Defined()};
    Blob grad = grads[i];
    const std::string name = attrs.name + "-update";
    const PlacementOverride placed(*graph, graph->nodes[static_cast<std::size_t>(
                                               graph->values[static_cast<std::size_t>(variables[i].ValueId())].producer)]
                                               .placement);  // an update runs where its variable lives
    // (variable, gradient, learning rate, the optimizer's slots[, train step][, skip flag])
    std::string_view type;
    std::vector<Blob> inputs{variables[i], grad, learning_rate};
    switch (optimizer.kind) {
      case Optimizer::Kind::kSgd:
        type = optimizer.momentum == 0.0 ? "sgd_update" : "momentum_update";
        if (optimizer.momentum != 0.0) inputs.push_back(Slot(graph, attrs, "momentum"));
        break;
      case Optimizer::Kind::kAdam:
      case Optimizer::Kind::kAdamW:
        type = "adam_update";
        inputs.insert(inputs.end(), {Slot(graph, attrs, "m"), Slot(graph, attrs, "v")});
        if (optimizer.do_bias_correction) inputs.push_back(step);
        break;
      case Optimizer::Kind::kRmsProp:
        type = "rmsprop_update";
        inputs.push_back(Slot(graph, attrs, "mean_square"));
        if (optimizer.centered) inputs.push_back(Slot(graph, attrs, "mean_gradient"));
        break;
      case Optimizer::Kind::kLamb:  // always bias-corrected, as OneFlow's LAMB
        type = "lamb_update";
        inputs.insert(inputs.end(), {Slot(graph, attrs, "m"), Slot(graph, attrs, "v"), step});
        break;
      case Optimizer::Kind::kLars:
        type = "lars_update";
        inputs.push_back(Slot(graph, attrs, "momentum"));
        break;
    }
    if (skip_flag.Defined()) inputs.push_back(skip_flag);
    AddOp(type, inputs, update, name);
  }
  if (const auto& dynamic = optimizer.dynamic_loss_scale) {
    const Blob good_steps = ScaleVariable(graph, LossScaleGoodStepsVariableName(graph->name), DType::kI64, 0);
    const Blob skipped_steps = ScaleVariable(graph, SkippedStepsVariableName(graph->name), DType::kI64, 0);
    AddOp("dynamic_loss_scale_update", {loss_scale, good_steps, skipped_steps, skip_flag},
          DynamicLossScaleAttrs{dynamic->increment_period, dynamic->multiplier}, "dynamic_loss_scale_update");
  }
  AddOp("increment", {step}, std::any{}, "train_step_increment");
}

}  // namespace internal
}  // namespace weir
