#include "graph/train_lowering.hpp"

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>
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

Optimizer Combined(std::vector<Optimizer> parts) {
  Optimizer combined;
  combined.parts = std::move(parts);
  return combined;
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

// How messages name an optimizer: its kind, or "combined".
std::string_view Name(const Optimizer& optimizer) { return optimizer.parts.empty() ? KindName(optimizer.kind) : "combined"; }

void Require(bool ok, const Optimizer& optimizer, std::string_view parameter, std::string_view expected, double got) {
  if (!ok) {
    throw std::invalid_argument(fmt::format("[optimizer {}] '{}' must be {}, got {}", Name(optimizer), parameter,
                                            expected, got));
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

void ValidateLossScale(const Optimizer& optimizer) {
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
}

// A combined optimizer's parts: single optimizers, each valid, without a loss scale, naming disjoint
// sets of variables (every part of several names some).
void ValidateParts(const Optimizer& combined) {
  std::set<std::string, std::less<>> named;
  for (std::size_t i = 0; i < combined.parts.size(); ++i) {
    const Optimizer& part = combined.parts[i];
    const auto fail = [&](std::string_view why) {
      throw std::invalid_argument(fmt::format("[optimizer combined] part {} ({}) {}", i, Name(part), why));
    };
    if (!part.parts.empty()) fail("is itself combined: give every optimizer in one list");
    if (part.loss_scale_factor != 1.0 || part.dynamic_loss_scale) {
      fail("has a loss scale of its own: set the loss scale on the combined optimizer");
    }
    if (part.variables.empty() && combined.parts.size() > 1) fail("names no variables: each of several parts names those it trains");
    ValidateOptimizer(part);
    for (const std::string& name : part.variables) {
      if (!named.insert(name).second) fail(fmt::format("names variable '{}' that another part names too: a variable has one optimizer", name));
    }
  }
}

}  // namespace

void ValidateOptimizer(const Optimizer& optimizer) {
  ValidateLossScale(optimizer);
  if (!optimizer.parts.empty()) {
    ValidateParts(optimizer);
    return;
  }
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

// The trainable floating variables of `graph` and, for each, the index of the part (of `parts`)
// that trains it: the part that names it, or the one that names none.
struct Trained {
  std::vector<Blob> variables;
  std::vector<VariableAttrs> attrs;
  std::vector<std::size_t> part_of;
};
Trained TrainedVariables(const std::shared_ptr<JobGraph>& graph, const std::vector<Optimizer>& parts) {
  Trained trained;
  std::vector<std::string> trainable;  // by name, for the error below
  for (const OpNode& node : graph->nodes) {
    if (node.type != kVariableOp) continue;
    const auto& attrs = std::any_cast<const VariableAttrs&>(node.attrs);
    if (!attrs.spec.trainable || !IsFloating(*attrs.spec.dtype)) continue;
    trainable.push_back(attrs.name);
    for (std::size_t p = 0; p < parts.size(); ++p) {
      const std::vector<std::string>& chosen = parts[p].variables;
      if (!chosen.empty() && std::find(chosen.begin(), chosen.end(), attrs.name) == chosen.end()) continue;
      trained.variables.emplace_back(graph, node.outputs[0]);
      trained.attrs.push_back(attrs);
      trained.part_of.push_back(p);
      break;
    }
  }
  for (const Optimizer& part : parts) {
    for (const std::string& name : part.variables) {
      if (std::find(trainable.begin(), trainable.end(), name) == trainable.end()) {
        throw std::invalid_argument(fmt::format("[optimizer {}] variables: '{}' is not a trainable floating variable of "
                                                "job '{}' (those are: {})", KindName(part.kind), name, graph->name,
                                                fmt::join(trainable, ", ")));
      }
    }
  }
  return trained;
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

  // The optimizers that train: a combined optimizer's parts, or the optimizer itself.
  const std::vector<Optimizer> single{optimizer};
  const std::vector<Optimizer>& parts = optimizer.parts.empty() ? single : optimizer.parts;
  const auto [variables, variable_attrs, part_of] = TrainedVariables(graph, parts);

  Blob seed;
  if (optimizer.loss_scale_factor != 1.0) {
    // Filled in f64 and cast to the loss's dtype (f16, bf16, or an integer loss's, rounded).
    Tensor scale(loss.GetShape(), DType::kF64);
    std::fill_n(scale.Data<double>(), scale.NumElements(), optimizer.loss_scale_factor);
    seed = AddConstant(graph, scale, "loss_scale");
    if (loss.GetDType() != DType::kF64) seed = Cast(seed, {.dtype = loss.GetDType()});
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
      if (!grad.Defined()) continue;
      if (IsFloating(grad.GetDType())) {
        grad = Mul(grad, ScalarLike(inverse, grad));
      } else {  // an integer gradient (a watched integer blob) is divided in f32 and rounded back
        const Blob wide = Cast(grad, {.dtype = DType::kF32});
        grad = Cast(Mul(wide, ScalarLike(inverse, wide)), {.dtype = grad.GetDType()});
      }
    }
  }
  for (std::size_t w = 0, g = variables.size(); w < graph->watches.size(); ++w) {
    if (!graph->watches[w].diff) continue;
    Blob grad = grads[g++];
    if (!grad.Defined()) {  // the loss does not depend on it: its gradient is zero (of any dtype)
      const TensorMeta& watched = graph->values[static_cast<std::size_t>(graph->watches[w].value)].meta;
      grad = AddConstant(graph, Tensor(watched.shape, watched.dtype), {});
    }
    graph->outputs.emplace_back(fmt::format("{}{}", kWatchOutputPrefix, w), grad.ValueId());
  }
  grads.resize(variables.size());
  for (const Blob& grad : grads) {
    if (grad.Defined()) graph->variable_gradients.push_back(grad.ValueId());
  }
  const double gradient_scale = 1.0 / (static_cast<double>(loss.GetShape().NumElements()) * optimizer.loss_scale_factor);
  // A part's ops are named with its index when there are several.
  const auto part_name = [&](std::string_view name, std::size_t p) {
    return parts.size() == 1 ? std::string(name) : fmt::format("{}-{}", name, p);
  };
  for (std::size_t p = 0; p < parts.size(); ++p) {
    if (!parts[p].clip_norm) continue;
    // One op over every gradient of the part, so that the norm is global over them; the updates then
    // see clipped gradients.
    std::vector<Blob> defined;
    for (std::size_t i = 0; i < grads.size(); ++i) {
      if (grads[i].Defined() && part_of[i] == p) defined.push_back(grads[i]);
    }
    if (defined.empty()) continue;
    const std::vector<Blob> clipped = AddOp("clip_by_global_norm", defined,
                                            ClipByGlobalNormAttrs{*parts[p].clip_norm, gradient_scale},
                                            part_name("clip_by_global_norm", p));
    for (std::size_t i = 0, c = 0; i < grads.size(); ++i) {
      if (grads[i].Defined() && part_of[i] == p) grads[i] = clipped[c++];
    }
  }

  VariableSpec step_spec;
  step_spec.shape = Shape{1};
  step_spec.dtype = DType::kI64;
  step_spec.trainable = false;
  const Blob step = AddVariable(graph, TrainStepVariableName(graph->name), step_spec);
  std::vector<Blob> learning_rates;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    learning_rates.push_back(
        AddOp1("learning_rate", {step}, LearningRateAttrs{parts[p].learning_rate}, part_name("learning_rate", p)));
  }
  // Dynamic loss scaling: each update skips a step whose flag says some gradient is not finite.
  const Blob skip_flag = loss_scale.Defined() ? NonFiniteFlag(grads) : Blob();

  for (std::size_t i = 0; i < variables.size(); ++i) {
    if (!grads[i].Defined()) continue;  // the loss does not depend on this variable
    const VariableAttrs& attrs = variable_attrs[i];
    const Optimizer& part = parts[part_of[i]];
    Optimizer own = part;  // this variable's: without decay where the filter leaves it out
    if (own.weight_decay != 0 && !Decays(part, attrs.name)) own.weight_decay = 0;
    const UpdateAttrs update{std::move(own), attrs.spec.regularizer, gradient_scale, skip_flag.Defined()};
    Blob grad = grads[i];
    const std::string name = attrs.name + "-update";
    const PlacementOverride placed(*graph, graph->nodes[static_cast<std::size_t>(
                                               graph->values[static_cast<std::size_t>(variables[i].ValueId())].producer)]
                                               .placement);  // an update runs where its variable lives
    // (variable, gradient, learning rate, the optimizer's slots[, train step][, skip flag])
    std::string_view type;
    std::vector<Blob> inputs{variables[i], grad, learning_rates[part_of[i]]};
    switch (part.kind) {
      case Optimizer::Kind::kSgd:
        type = part.momentum == 0.0 ? "sgd_update" : "momentum_update";
        if (part.momentum != 0.0) inputs.push_back(Slot(graph, attrs, "momentum"));
        break;
      case Optimizer::Kind::kAdam:
      case Optimizer::Kind::kAdamW:
        type = "adam_update";
        inputs.insert(inputs.end(), {Slot(graph, attrs, "m"), Slot(graph, attrs, "v")});
        if (part.do_bias_correction) inputs.push_back(step);
        break;
      case Optimizer::Kind::kRmsProp:
        type = "rmsprop_update";
        inputs.push_back(Slot(graph, attrs, "mean_square"));
        if (part.centered) inputs.push_back(Slot(graph, attrs, "mean_gradient"));
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
