#include "graph/train_lowering.hpp"

#include <algorithm>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "graph/autodiff.hpp"
#include "graph/op_registry.hpp"
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
  Require(optimizer.decay_rate >= 0 && optimizer.decay_rate < 1, optimizer, "decay_rate", "in [0, 1)",
          optimizer.decay_rate);
  Require(optimizer.loss_scale_factor > 0, optimizer, "loss_scale_factor", "positive", optimizer.loss_scale_factor);
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

void LowerTraining(const std::shared_ptr<JobGraph>& graph) {
  const Optimizer& optimizer = *graph->optimizer;
  const Blob loss(graph, graph->loss_value);

  // Outputs that name a variable this step updates read its value from before the update: the
  // planner copies them for every job type (CompilePlan), so nothing is inserted here.

  std::vector<Blob> variables;
  std::vector<VariableAttrs> variable_attrs;
  for (const OpNode& node : graph->nodes) {
    if (node.type != kVariableOp) continue;
    const auto& attrs = std::any_cast<const VariableAttrs&>(node.attrs);
    if (!attrs.spec.trainable || !IsFloating(*attrs.spec.dtype)) continue;
    variables.emplace_back(graph, node.outputs[0]);
    variable_attrs.push_back(attrs);
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
  std::vector<Blob> wrt = variables;
  for (const WatchSpec& watch : graph->watches) {
    if (watch.diff) wrt.emplace_back(graph, watch.value);
  }
  std::vector<Blob> grads = BuildGradients(loss, wrt, seed);
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

  for (std::size_t i = 0; i < variables.size(); ++i) {
    if (!grads[i].Defined()) continue;  // the loss does not depend on this variable
    const VariableAttrs& attrs = variable_attrs[i];
    Optimizer own = optimizer;  // this variable's: without decay where the filter leaves it out
    if (own.weight_decay != 0 && !Decays(optimizer, attrs.name)) own.weight_decay = 0;
    const UpdateAttrs update{std::move(own), attrs.spec.regularizer, gradient_scale};
    Blob grad = grads[i];
    const std::string name = attrs.name + "-update";
    const PlacementOverride placed(*graph, graph->nodes[static_cast<std::size_t>(
                                               graph->values[static_cast<std::size_t>(variables[i].ValueId())].producer)]
                                               .placement);  // an update runs where its variable lives
    switch (optimizer.kind) {
      case Optimizer::Kind::kSgd:
        if (optimizer.momentum == 0.0) {
          AddOp("sgd_update", {variables[i], grad, learning_rate}, update, name);
        } else {
          AddOp("momentum_update", {variables[i], grad, learning_rate, Slot(graph, attrs, "momentum")}, update, name);
        }
        break;
      case Optimizer::Kind::kAdam:
      case Optimizer::Kind::kAdamW: {
        std::vector<Blob> inputs{variables[i], grad, learning_rate, Slot(graph, attrs, "m"), Slot(graph, attrs, "v")};
        if (optimizer.do_bias_correction) inputs.push_back(step);
        AddOp("adam_update", inputs, update, name);
        break;
      }
      case Optimizer::Kind::kRmsProp:
        if (!optimizer.centered) {
          AddOp("rmsprop_update", {variables[i], grad, learning_rate, Slot(graph, attrs, "mean_square")}, update, name);
        } else {
          AddOp("rmsprop_update",
                {variables[i], grad, learning_rate, Slot(graph, attrs, "mean_square"),
                 Slot(graph, attrs, "mean_gradient")},
                update, name);
        }
        break;
      case Optimizer::Kind::kLamb:  // always bias-corrected, as OneFlow's LAMB
        AddOp("lamb_update",
              {variables[i], grad, learning_rate, Slot(graph, attrs, "m"), Slot(graph, attrs, "v"), step}, update,
              name);
        break;
    }
  }
  AddOp("increment", {step}, std::any{}, "train_step_increment");
}

}  // namespace internal
}  // namespace weir
