// add, sub, mul, div, mod, pow, maximum, minimum: elementwise with numpy broadcasting; both inputs
// share one numeric dtype (pow's floating).
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/gradient_ops.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferBroadcastBinary(const InferContext& ctx) {
  const TensorMeta& a = ctx.inputs[0];
  const TensorMeta& b = ctx.inputs[1];
  if (a.dtype != b.dtype) throw OpError(ctx.op_type, "dtypes differ: {} vs {}", a.dtype, b.dtype);
  // f16 and bf16 pass here; which ops have 16-bit kernels (add: mixed precision's gradient sums) is
  // the kernels' to say when the job compiles.
  if (!IsNumber(a.dtype) && a.dtype != DType::kI8) {
    throw OpError(ctx.op_type, "expects f32, f64, f16, bf16, i32, i64 or i8 inputs, got {}", a.dtype);
  }
  return {{BroadcastShapes(ctx.op_type, a.shape, b.shape), a.dtype}};
}

std::vector<TensorMeta> InferPow(const InferContext& ctx) {
  std::vector<TensorMeta> out = InferBroadcastBinary(ctx);
  if (!IsFloating(out[0].dtype) || out[0].dtype == DType::kF16 || out[0].dtype == DType::kBF16) {
    throw OpError(ctx.op_type, "expects f32 or f64 inputs (a Blob exponent), got {}", out[0].dtype);
  }
  return out;
}

// Each rule computes the gradient at the output's shape and sums it back over the axes the
// operand was broadcast along (ReduceSumTo). Negations are applied after that sum, on the smaller
// operand-shaped tensor. Shapes are copied before ops are added: adding an op may move the shapes
// Blob::GetShape() refers to.

std::vector<Blob> AddGradient(const GradContext& ctx) {
  const Blob& dy = ctx.output_grads[0];
  return {ctx.needs_grad[0] ? ReduceSumTo(dy, ctx.inputs[0].GetShape()) : Blob(),
          ctx.needs_grad[1] ? ReduceSumTo(dy, ctx.inputs[1].GetShape()) : Blob()};
}

std::vector<Blob> SubGradient(const GradContext& ctx) {
  const Blob& dy = ctx.output_grads[0];
  return {ctx.needs_grad[0] ? ReduceSumTo(dy, ctx.inputs[0].GetShape()) : Blob(),
          ctx.needs_grad[1] ? ScalarMul(ReduceSumTo(dy, ctx.inputs[1].GetShape()), -1.0) : Blob()};
}

std::vector<Blob> MulGradient(const GradContext& ctx) {
  const Blob& a = ctx.inputs[0];
  const Blob& b = ctx.inputs[1];
  const Shape a_shape = a.GetShape();
  const Shape b_shape = b.GetShape();
  const Blob& dy = ctx.output_grads[0];
  return {ctx.needs_grad[0] ? ReduceSumTo(Mul(dy, b), a_shape) : Blob(),
          ctx.needs_grad[1] ? ReduceSumTo(Mul(dy, a), b_shape) : Blob()};
}

// y = a / b: da = dy / b; db = -dy·a / b² = -(dy·y) / b.
std::vector<Blob> DivGradient(const GradContext& ctx) {
  const Blob& b = ctx.inputs[1];
  const Shape a_shape = ctx.inputs[0].GetShape();
  const Shape b_shape = b.GetShape();
  const Blob& dy = ctx.output_grads[0];
  return {ctx.needs_grad[0] ? ReduceSumTo(Div(dy, b), a_shape) : Blob(),
          ctx.needs_grad[1] ? ScalarMul(ReduceSumTo(Div(Mul(dy, ctx.outputs[0]), b), b_shape), -1.0) : Blob()};
}

// a mod b = a - floor(a / b) * b: da = dy, db = -dy * floor(a / b) (the floor's own derivative is 0
// wherever it is defined).
std::vector<Blob> ModGradient(const GradContext& ctx) {
  const Shape a_shape = ctx.inputs[0].GetShape();
  const Shape b_shape = ctx.inputs[1].GetShape();
  const Blob& dy = ctx.output_grads[0];
  return {ctx.needs_grad[0] ? ReduceSumTo(dy, a_shape) : Blob(),
          ctx.needs_grad[1] ? ScalarMul(ReduceSumTo(Mul(dy, Floor(Div(ctx.inputs[0], ctx.inputs[1]))), b_shape), -1.0)
                            : Blob()};
}

// y = a^b: da = dy·b·a^(b-1); db = dy·y·ln a where a > 0, else 0 (TensorFlow's rule: the
// derivative in b is defined only for a positive base).
std::vector<Blob> PowGradient(const GradContext& ctx) {
  const Blob& a = ctx.inputs[0];
  const Blob& b = ctx.inputs[1];
  const Shape a_shape = a.GetShape();
  const Shape b_shape = b.GetShape();
  const Blob& dy = ctx.output_grads[0];
  Blob da, db;
  if (ctx.needs_grad[0]) da = ReduceSumTo(Mul(dy, Mul(b, Pow(a, ScalarAdd(b, -1.0)))), a_shape);
  if (ctx.needs_grad[1]) {
    const Blob zero = AddConstant(a.Graph(), Tensor(Shape{}, a.GetDType()), {});  // broadcast by both ops
    const Blob log_a = Where(Compare(a, zero, {CompareOpKind::kGreater}), Log(a), zero);
    db = ReduceSumTo(Mul(Mul(dy, ctx.outputs[0]), log_a), b_shape);
  }
  return {da, db};
}

// maximum / minimum: dy goes to whichever operand was picked, a on ties (OneFlow's rule), via
// maximum_grad / minimum_grad on operands broadcast to the output's shape, then summed back.
std::vector<Blob> ExtremumGradient(const GradContext& ctx) {
  const Shape a_shape = ctx.inputs[0].GetShape();
  const Shape b_shape = ctx.inputs[1].GetShape();
  const Shape out_shape = ctx.outputs[0].GetShape();
  const Blob a = BroadcastTo(ctx.inputs[0], out_shape);
  const Blob b = BroadcastTo(ctx.inputs[1], out_shape);
  const std::string_view grad_type = ctx.op_type == "maximum" ? "maximum_grad" : "minimum_grad";
  const std::vector<Blob> grads = AddOp(grad_type, {ctx.output_grads[0], a, b}, std::any{}, {});
  return {ctx.needs_grad[0] ? ReduceSumTo(grads[0], a_shape) : Blob(),
          ctx.needs_grad[1] ? ReduceSumTo(grads[1], b_shape) : Blob()};
}

WEIR_REGISTER_OP({.type = "add",
                  .num_inputs = 2,
                  .input_names = {"a", "b"},
                  .infer = InferBroadcastBinary,
                  .gradient = AddGradient,
                  .sbp = ElementwiseRule(true),
                  .pure = true});
WEIR_REGISTER_OP({.type = "sub",
                  .num_inputs = 2,
                  .input_names = {"a", "b"},
                  .infer = InferBroadcastBinary,
                  .gradient = SubGradient,
                  .sbp = ElementwiseRule(true),
                  .pure = true});
WEIR_REGISTER_OP({.type = "mul",
                  .num_inputs = 2,
                  .input_names = {"a", "b"},
                  .infer = InferBroadcastBinary,
                  .gradient = MulGradient,
                  .sbp = ElementwiseRule(),
                  .pure = true});
WEIR_REGISTER_OP({.type = "div",
                  .num_inputs = 2,
                  .input_names = {"a", "b"},
                  .infer = InferBroadcastBinary,
                  .gradient = DivGradient,
                  .sbp = ElementwiseRule(),
                  .pure = true});
WEIR_REGISTER_OP({.type = "mod",
                  .num_inputs = 2,
                  .input_names = {"a", "b"},
                  .infer = InferBroadcastBinary,
                  .gradient = ModGradient,
                  .sbp = ElementwiseRule()});
WEIR_REGISTER_OP({.type = "pow",
                  .num_inputs = 2,
                  .input_names = {"a", "b"},
                  .infer = InferPow,
                  .gradient = PowGradient,
                  .sbp = ElementwiseRule()});
WEIR_REGISTER_OP({.type = "maximum",
                  .num_inputs = 2,
                  .input_names = {"a", "b"},
                  .infer = InferBroadcastBinary,
                  .gradient = ExtremumGradient,
                  .sbp = ElementwiseRule()});
WEIR_REGISTER_OP({.type = "minimum",
                  .num_inputs = 2,
                  .input_names = {"a", "b"},
                  .infer = InferBroadcastBinary,
                  .gradient = ExtremumGradient,
                  .sbp = ElementwiseRule()});

}  // namespace
}  // namespace internal

Blob Add(const Blob& a, const Blob& b, std::string_view name) { return internal::AddOp1("add", {a, b}, std::any{}, name); }
Blob Sub(const Blob& a, const Blob& b, std::string_view name) { return internal::AddOp1("sub", {a, b}, std::any{}, name); }
Blob Mul(const Blob& a, const Blob& b, std::string_view name) { return internal::AddOp1("mul", {a, b}, std::any{}, name); }
Blob Div(const Blob& a, const Blob& b, std::string_view name) { return internal::AddOp1("div", {a, b}, std::any{}, name); }
Blob Mod(const Blob& a, const Blob& b, std::string_view name) { return internal::AddOp1("mod", {a, b}, std::any{}, name); }
Blob Pow(const Blob& a, const Blob& b, std::string_view name) { return internal::AddOp1("pow", {a, b}, std::any{}, name); }
Blob Maximum(const Blob& a, const Blob& b, std::string_view name) {
  return internal::AddOp1("maximum", {a, b}, std::any{}, name);
}
Blob Minimum(const Blob& a, const Blob& b, std::string_view name) {
  return internal::AddOp1("minimum", {a, b}, std::any{}, name);
}

}  // namespace weir
