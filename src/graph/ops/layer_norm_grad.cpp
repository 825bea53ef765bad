// layer_norm_grad: (dy, x, mean, inv_variance) -> dx, layer_norm's gradient from its saved
// statistics: with x̂ = (x − mean)·inv_variance per row, dx = inv_variance·(dy − mean(dy) − x̂·mean(dy·x̂)).
#include "graph/op_registry.hpp"
#include "graph/sbp.hpp"
#include "kernels/attrs/layer_norm_attrs.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferLayerNormGrad(const InferContext& ctx) {
  const TensorMeta& dy = ctx.inputs[0];
  const TensorMeta& x = ctx.inputs[1];
  if (x.dtype != DType::kF32 && x.dtype != DType::kF64) throw OpError(ctx.op_type, "expects an f32 or f64 x, got {}", x.dtype);
  if (dy != x) throw OpError(ctx.op_type, "dy {} does not match x {}", dy.ToString(), x.ToString());
  const int axis = ResolveAxis(ctx.op_type, "begin_norm_axis", ctx.Get<LayerNormAttrs>().begin_norm_axis, x.shape.Rank());
  const TensorMeta statistics{Shape(std::vector<std::int64_t>(x.shape.Dims().begin(), x.shape.Dims().begin() + axis)), x.dtype};
  static constexpr std::string_view kNames[] = {"dy", "x", "mean", "inv_variance"};
  for (std::size_t i = 2; i < 4; ++i) {
    if (ctx.inputs[i] != statistics) {
      throw OpError(ctx.op_type, "{} must be {} (the rows of x {}), got {}", kNames[i], statistics.ToString(), x.shape,
                    ctx.inputs[i].ToString());
    }
  }
  return {x};
}

std::vector<SbpSignature> LayerNormGradSbp(const SbpContext& ctx) {
  const int axis = ResolveAxis(ctx.op_type, "begin_norm_axis", ctx.Get<LayerNormAttrs>().begin_norm_axis,
                               ctx.inputs[1].shape.Rank());
  std::vector<SbpSignature> signatures;
  for (int k = 0; k < axis; ++k) signatures.push_back({std::vector<Sbp>(4, Sbp::S(k)), {Sbp::S(k)}});
  return signatures;
}

std::vector<OpExample> LayerNormGradExamples() {
  std::vector<OpExample> examples;
  for (const auto& [x, axis, dtype] : {std::tuple{Shape{4, 3, 7}, -1, DType::kF64}, std::tuple{Shape{3, 4, 5}, 1, DType::kF64},
                                       std::tuple{Shape{9, 768}, 1, DType::kF32}, std::tuple{Shape{3, 1500}, 1, DType::kF32},
                                       std::tuple{Shape{0, 6}, 1, DType::kF32}}) {
    const int begin = axis < 0 ? axis + x.Rank() : axis;
    const Shape rows(std::vector<std::int64_t>(x.Dims().begin(), x.Dims().begin() + begin));
    examples.push_back({.attrs = LayerNormAttrs{axis, 1e-5}, .inputs = {{x, dtype}, {x, dtype}, {rows, dtype}, {rows, dtype}}});
  }
  return examples;
}

WEIR_REGISTER_OP({.type = "layer_norm_grad",
                  .num_inputs = 4,
                  .input_names = {"dy", "x", "mean", "inv_variance"},
                  .infer = InferLayerNormGrad,
                  .sbp = LayerNormGradSbp,
                  .read_attrs = ReadAttrs<LayerNormAttrs>(Attr("begin_norm_axis", &LayerNormAttrs::begin_norm_axis),
                                                          Attr("epsilon", &LayerNormAttrs::epsilon)),
                  .examples = LayerNormGradExamples});

}  // namespace
}  // namespace weir::internal
