// batch_norm: y = gamma · (x − mean) / sqrt(var + epsilon) + beta per channel (OneFlow's
// "normalization"). Training uses the batch statistics, returned as extra outputs (mean and biased
// variance, per channel) for the gradient and the moving-statistic update; inference uses the
// moving statistics and has y only. A 16-bit x may come with f32 parameters (mixed precision, as
// OneFlow's normalization takes them): y has x's dtype, the statistics the parameters'.
#include <cmath>

#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "kernels/attrs/batch_norm_attrs.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferBatchNorm(const InferContext& ctx) {
  const auto& attrs = ctx.Get<BatchNormAttrs>();
  const TensorMeta& x = ctx.inputs[0];
  if (!IsFloating(x.dtype)) throw OpError(ctx.op_type, "expects a floating x, got {}", x.dtype);
  if (x.shape.Rank() < 1) throw OpError(ctx.op_type, "expects an x of rank >= 1, got {}", x.shape);
  const int axis = ResolveAxis(ctx.op_type, "axis", attrs.axis, x.shape.Rank());
  if (!(attrs.epsilon > 0.0 && std::isfinite(attrs.epsilon))) {
    throw OpError(ctx.op_type, "epsilon must be positive, got {}", attrs.epsilon);
  }
  if (!(attrs.momentum >= 0.0 && attrs.momentum <= 1.0)) {
    throw OpError(ctx.op_type, "momentum must be in [0, 1], got {}", attrs.momentum);
  }
  const TensorMeta params{Shape{x.shape[axis]}, BatchNormParamsDType(x.dtype, ctx.inputs[1].dtype)};
  static constexpr std::string_view kNames[] = {"x", "gamma", "beta", "moving_mean", "moving_variance"};
  for (std::size_t i = 1; i < 5; ++i) {
    if (ctx.inputs[i] != params) {
      throw OpError(ctx.op_type, "{} must be {} (channels of x {} on axis {}), got {}", kNames[i], params.ToString(),
                    x.shape, axis, ctx.inputs[i].ToString());
    }
  }
  if (!attrs.training) return {x};
  if (x.shape[axis] > 0 && x.shape.NumElements() / x.shape[axis] == 0) {
    throw OpError(ctx.op_type, "training needs at least one element per channel, x is {}", x.shape);
  }
  return {x, params, params};
}

// dx, dgamma and dbeta in one backward op; in training the statistics are the batch's (outputs 1
// and 2), otherwise the moving ones (inputs 3 and 4), constants either way for the moving stats.
std::vector<Blob> BatchNormGradient(const GradContext& ctx) {
  const auto& attrs = ctx.Get<BatchNormAttrs>();
  const Blob& dy = ctx.output_grads[0];
  if (!dy.Defined()) return std::vector<Blob>(5);  // only the statistics outputs carry a gradient: none flows back
  const Blob& mean = attrs.training ? ctx.outputs[1] : ctx.inputs[3];
  const Blob& variance = attrs.training ? ctx.outputs[2] : ctx.inputs[4];
  const std::vector<Blob> grads = AddOp("batch_norm_grad", {dy, ctx.inputs[0], ctx.inputs[1], mean, variance}, attrs, {});
  return {ctx.needs_grad[0] ? grads[0] : Blob(), ctx.needs_grad[1] ? grads[1] : Blob(),
          ctx.needs_grad[2] ? grads[2] : Blob(), Blob(), Blob()};
}

// Generic callers (the Python binding) get what BatchNorm adds: the moving update too when training.
std::vector<Blob> BuildBatchNorm(const std::vector<Blob>& inputs, const std::any& attrs, std::string_view name) {
  if (inputs.size() != 5) throw OpError("batch_norm", "expects 5 inputs, got {}", inputs.size());
  return {BatchNorm(inputs[0], inputs[1], inputs[2], inputs[3], inputs[4], std::any_cast<const BatchNormAttrs&>(attrs), name)};
}

WEIR_REGISTER_OP({.type = "batch_norm",
                  .num_inputs = 5,
                  .input_names = {"x", "gamma", "beta", "moving_mean", "moving_variance"},
                  .infer = InferBatchNorm,
                  .gradient = BatchNormGradient,
                  .read_attrs = ReadAttrs<BatchNormAttrs>(Attr("axis", &BatchNormAttrs::axis), Attr("epsilon", &BatchNormAttrs::epsilon),
                                                         Attr("momentum", &BatchNormAttrs::momentum),
                                                         Attr("training", &BatchNormAttrs::training)),
                  .build = BuildBatchNorm});

// The moving statistics are updated in place by a separate op, so that only training mutates them
// and the planner orders every reader of them first.
void CheckUpdatable(const Blob& blob, std::string_view what) {
  const JobGraph& graph = *blob.Graph();
  const ValueInfo& value = graph.values[static_cast<std::size_t>(blob.ValueId())];
  if (graph.nodes[static_cast<std::size_t>(value.producer)].type != kVariableOp) {
    throw OpError("batch_norm", "training updates {} in place, so it must be a variable, got '{}'", what, value.name);
  }
  for (const OpNode& node : graph.nodes) {
    if (node.type != "batch_norm_moving_update") continue;
    for (std::size_t i = 0; i < 2; ++i) {
      if (node.inputs[i] == blob.ValueId()) {
        throw OpError("batch_norm", "{} '{}' is already updated by '{}' in job '{}': a variable has one writer per job",
                      what, value.name, node.name, graph.name);
      }
    }
  }
}

}  // namespace
}  // namespace internal

Blob BatchNorm(const Blob& x, const Blob& gamma, const Blob& beta, const Blob& moving_mean, const Blob& moving_variance,
               BatchNormAttrs attrs, std::string_view name) {
  if (attrs.training) {
    // Checked before anything is added, so a rejected call leaves the job unchanged.
    for (const auto& [blob, what] : {std::pair{&moving_mean, "moving_mean"}, std::pair{&moving_variance, "moving_variance"}}) {
      if (!blob->Defined()) throw internal::OpError("batch_norm", "input '{}' is an undefined blob", what);
      if (x.Defined() && blob->Graph() != x.Graph()) throw internal::OpError("batch_norm", "input '{}' belongs to another job", what);
      internal::CheckUpdatable(*blob, what);
    }
  }
  const std::vector<Blob> outputs = internal::AddOp("batch_norm", {x, gamma, beta, moving_mean, moving_variance}, attrs, name);
  if (attrs.training) {
    const Shape shape = x.GetShape();
    const int axis = attrs.axis < 0 ? attrs.axis + shape.Rank() : attrs.axis;
    const std::int64_t count = shape[axis] == 0 ? 0 : shape.NumElements() / shape[axis];
    internal::AddOp("batch_norm_moving_update", {moving_mean, moving_variance, outputs[1], outputs[2]},
                    internal::BatchNormMovingUpdateAttrs{attrs.momentum, count},
                    name.empty() ? std::string() : fmt::format("{}-moving_update", name));
  }
  return outputs[0];
}

}  // namespace weir
