// layer_norm: each row of x — the axes from begin_norm_axis on — normalized to mean 0 and variance 1,
// y = (x − mean) / √(variance + epsilon) (the biased variance), with the rows' mean and
// inv_variance = 1/√(variance + epsilon) as extra outputs (shape x.shape[:begin_norm_axis]) for the
// gradient. OneFlow's layer_norm without its scale and shift: flow.nn.layer_norm and
// flow.layers.layer_norm multiply by gamma and add beta after it. One op instead of the nine
// reductions and elementwise ops (and their gradients) that made up each layer norm before. Rows are
// independent: the axes before begin_norm_axis split.
#include <cmath>

#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/sbp.hpp"
#include "kernels/attrs/layer_norm_attrs.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferLayerNorm(const InferContext& ctx) {
  const auto& attrs = ctx.Get<LayerNormAttrs>();
  const TensorMeta& x = ctx.inputs[0];
  if (x.dtype != DType::kF32 && x.dtype != DType::kF64) throw OpError(ctx.op_type, "expects an f32 or f64 x, got {}", x.dtype);
  if (x.shape.Rank() < 1) throw OpError(ctx.op_type, "expects an x of rank >= 1, got {}", x.shape);
  const int axis = ResolveAxis(ctx.op_type, "begin_norm_axis", attrs.begin_norm_axis, x.shape.Rank());
  if (!(attrs.epsilon > 0.0 && std::isfinite(attrs.epsilon))) throw OpError(ctx.op_type, "epsilon must be positive, got {}", attrs.epsilon);
  const TensorMeta statistics{Shape(std::vector<std::int64_t>(x.shape.Dims().begin(), x.shape.Dims().begin() + axis)), x.dtype};
  if (statistics.shape.NumElements() > 0 && x.shape.NumElements() == 0) {
    throw OpError(ctx.op_type, "cannot normalize rows of no elements: x {} from begin_norm_axis {}", x.shape, attrs.begin_norm_axis);
  }
  return {x, statistics, statistics};
}

std::vector<Blob> LayerNormGradient(const GradContext& ctx) {
  if (!ctx.output_grads[0].Defined()) return {Blob()};  // only the statistics were read: no gradient flows back
  return {AddOp1("layer_norm_grad", {ctx.output_grads[0], ctx.inputs[0], ctx.outputs[1], ctx.outputs[2]},
                 ctx.Get<LayerNormAttrs>(), "")};
}

// Every axis before begin_norm_axis splits x, y and the statistics alike (they share those axes).
std::vector<SbpSignature> LayerNormSbp(const SbpContext& ctx) {
  const int axis = ResolveAxis(ctx.op_type, "begin_norm_axis", ctx.Get<LayerNormAttrs>().begin_norm_axis,
                               ctx.inputs[0].shape.Rank());
  std::vector<SbpSignature> signatures;
  for (int k = 0; k < axis; ++k) {
    signatures.push_back({std::vector<Sbp>(ctx.inputs.size(), Sbp::S(k)), std::vector<Sbp>(ctx.outputs.size(), Sbp::S(k))});
  }
  return signatures;
}

// BERT's rows (the last axis), a 3-D x normalized over its last two axes, an f64 one for finite
// differences, rows a GPU warp or block takes, and an empty batch.
std::vector<OpExample> LayerNormExamples() {
  return {{.attrs = LayerNormAttrs{-1, 1e-5}, .inputs = {{Shape{4, 3, 7}, DType::kF64}}},
          {.attrs = LayerNormAttrs{1, 1e-3}, .inputs = {{Shape{3, 4, 5}, DType::kF64}}},
          {.attrs = LayerNormAttrs{-1, 1e-12}, .inputs = {{Shape{9, 768}, DType::kF32}}},
          {.attrs = LayerNormAttrs{1, 1e-5}, .inputs = {{Shape{3, 1500}, DType::kF32}}},
          {.attrs = LayerNormAttrs{1, 1e-5}, .inputs = {{Shape{2, 1}, DType::kF32}}},
          {.attrs = LayerNormAttrs{1, 1e-5}, .inputs = {{Shape{0, 6}, DType::kF32}}}};
}

WEIR_REGISTER_OP({.type = "layer_norm",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferLayerNorm,
                  .gradient = LayerNormGradient,
                  .sbp = LayerNormSbp,
                  .read_attrs = ReadAttrs<LayerNormAttrs>(Attr("begin_norm_axis", &LayerNormAttrs::begin_norm_axis),
                                                          Attr("epsilon", &LayerNormAttrs::epsilon)),
                  .examples = LayerNormExamples});

}  // namespace
}  // namespace internal

Blob LayerNorm(const Blob& x, int begin_norm_axis, double epsilon, std::string_view name) {
  return internal::AddOp("layer_norm", {x}, internal::LayerNormAttrs{begin_norm_axis, epsilon}, name)[0];
}

}  // namespace weir
