// combined_margin_loss: logits x (N, C) of cosines and labels (N) -> x with each row's label entry
// replaced by cos(m1 * acos(x) + m2) - m3 (OneFlow's flow.combined_margin_loss, the margins of
// SphereFace, ArcFace and CosFace; kernels/functors/combined_margin.hpp). A label outside [0, C) fails
// the call. (OneFlow leaves such a row as it is, for its split of the classes over devices, which Weir
// does not offer for this op.) Its gradient, combined_margin_loss_grad (dy, x, labels) -> dx, is dy
// with the label entries scaled by the margin's derivative.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "kernels/functors/combined_margin.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

// x (N, C) float and labels (N) i32/i64, checked for both ops; `first` is x's position in the inputs.
void CheckMarginInputs(const InferContext& ctx, std::size_t first) {
  const TensorMeta& x = ctx.inputs[first];
  const TensorMeta& labels = ctx.inputs[first + 1];
  if (x.dtype != DType::kF32 && x.dtype != DType::kF64) throw OpError(ctx.op_type, "expects f32 or f64 x, got {}", x.dtype);
  if (x.shape.Rank() != 2) throw OpError(ctx.op_type, "x must be (N, C), got {}", x.shape);
  if (labels.dtype != DType::kI32 && labels.dtype != DType::kI64) {
    throw OpError(ctx.op_type, "expects i32 or i64 labels, got {}", labels.dtype);
  }
  if (labels.shape.Rank() != 1 || labels.shape[0] != x.shape[0]) {
    throw OpError(ctx.op_type, "labels must be ({}) for x {}, got {}", x.shape[0], x.shape, labels.shape);
  }
}

std::vector<TensorMeta> InferCombinedMarginLoss(const InferContext& ctx) {
  CheckMarginInputs(ctx, 0);
  return {ctx.inputs[0]};
}

std::vector<TensorMeta> InferCombinedMarginLossGrad(const InferContext& ctx) {
  CheckMarginInputs(ctx, 1);
  if (ctx.inputs[0] != ctx.inputs[1]) throw OpError(ctx.op_type, "dy {} must match x {}", ctx.inputs[0].ToString(), ctx.inputs[1].ToString());
  return {ctx.inputs[1]};
}

std::vector<Blob> CombinedMarginLossGradient(const GradContext& ctx) {
  if (!ctx.needs_grad[0]) return {Blob(), Blob()};
  const Blob dx = AddOp1("combined_margin_loss_grad", {ctx.output_grads[0], ctx.inputs[0], ctx.inputs[1]},
                         ctx.Get<CombinedMarginAttrs>(), {});
  return {dx, Blob()};
}

// Rows split with their labels; the classes are never split (a device would need its classes' offset).
std::vector<SbpSignature> CombinedMarginLossSbp(const SbpContext& ctx) {
  return {{std::vector<Sbp>(ctx.inputs.size(), Sbp::S(0)), {Sbp::S(0)}}};
}

// Cosines in [-0.95, 0.95), inside acos's domain and away from its ends, where the gradient's
// 1 / sin(theta) grows without bound. For the GPU's agreement: odd, empty, one-class and
// more-than-a-block shapes, both label dtypes; for finite differences: three margins of the three
// losses, on a small batch; `grad` gives the gradient op's inputs (dy first).
std::vector<OpExample> MarginExamples(bool grad) {
  std::vector<OpExample> examples;
  auto add = [&](const CombinedMarginAttrs& attrs, const Shape& shape, DType dtype, DType label) {
    std::vector<TensorMeta> inputs = {{shape, dtype}, {Shape{shape[0]}, label}};
    if (grad) inputs.insert(inputs.begin(), TensorMeta{shape, dtype});
    examples.push_back({.attrs = attrs, .inputs = inputs, .low = -0.95, .high = 0.95, .classes = shape[1]});
  };
  for (const CombinedMarginAttrs& attrs : {CombinedMarginAttrs{1.0, 0.5, 0.0}, CombinedMarginAttrs{2.0, 0.0, 0.0},
                                           CombinedMarginAttrs{1.3, 0.2, 0.35}}) {
    add(attrs, Shape{4, 5}, DType::kF64, DType::kI32);
  }
  for (const Shape& shape : {Shape{7, 13}, Shape{0, 5}, Shape{3, 1}, Shape{1000, 3}}) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      for (DType label : {DType::kI32, DType::kI64}) add(CombinedMarginAttrs{1.2, 0.4, 0.1}, shape, dtype, label);
    }
  }
  return examples;
}

const auto kReadMarginAttrs = ReadAttrs<CombinedMarginAttrs>(
    Attr("m1", &CombinedMarginAttrs::m1), Attr("m2", &CombinedMarginAttrs::m2), Attr("m3", &CombinedMarginAttrs::m3));

WEIR_REGISTER_OP({.type = "combined_margin_loss",
                  .num_inputs = 2,
                  .input_names = {"x", "label"},
                  .infer = InferCombinedMarginLoss,
                  .gradient = CombinedMarginLossGradient,
                  .sbp = CombinedMarginLossSbp,
                  .read_attrs = kReadMarginAttrs,
                  .examples = [] { return MarginExamples(false); }});

WEIR_REGISTER_OP({.type = "combined_margin_loss_grad",
                  .num_inputs = 3,
                  .input_names = {"dy", "x", "label"},
                  .infer = InferCombinedMarginLossGrad,
                  .sbp = CombinedMarginLossSbp,
                  .read_attrs = kReadMarginAttrs,
                  .examples = [] { return MarginExamples(true); }});

}  // namespace
}  // namespace internal

Blob CombinedMarginLoss(const Blob& x, const Blob& labels, double m1, double m2, double m3, std::string_view name) {
  return internal::AddOp1("combined_margin_loss", {x, labels}, internal::CombinedMarginAttrs{m1, m2, m3}, name);
}

}  // namespace weir
