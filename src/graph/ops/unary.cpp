// unary: the family of elementwise functions of one argument (exp, log, sqrt, ...), one op type
// whose attrs name the function, so that each new function is a functor and not a new op file.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/unary_kind.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferUnary(const InferContext& ctx) {
  const TensorMeta& x = ctx.inputs[0];
  const UnaryOpKind kind = ctx.Get<UnaryAttrs>().kind;
  const std::string_view name = UnaryKindName(kind);
  if (name == "?") throw OpError(ctx.op_type, "unknown kind {}", static_cast<int>(kind));
  if (IsFloating(x.dtype)) return {x};
  if (UnaryKindTakesIntegers(kind) && (x.dtype == DType::kI32 || x.dtype == DType::kI64)) return {x};
  throw OpError(ctx.op_type, "{} expects {} x, got {}", name,
                UnaryKindTakesIntegers(kind) ? "an f32, f64, i32 or i64" : "a floating (f32 or f64)", x.dtype);
}

// dx = f'(·) · dy in one pass of unary_grad, which reads x or y, whichever f' is cheaper in.
std::vector<Blob> UnaryGradient(const GradContext& ctx) {
  const auto& attrs = ctx.Get<UnaryAttrs>();
  const Blob& v = UnaryGradUsesOutput(attrs.kind) ? ctx.outputs[0] : ctx.inputs[0];
  return {AddOp1("unary_grad", {ctx.output_grads[0], v}, attrs, {})};
}

WEIR_REGISTER_OP({.type = "unary", .num_inputs = 1, .input_names = {"x"}, .infer = InferUnary, .gradient = UnaryGradient,
                  .sbp = ElementwiseRule(),
                  .read_attrs = ReadAttrs<UnaryAttrs>(Attr("kind", &UnaryAttrs::kind)),
                  .name_stem = [](const std::any& attrs) {
                    return std::string(UnaryKindName(std::any_cast<const UnaryAttrs&>(attrs).kind));
                  },
                  .pure = true});

}  // namespace
}  // namespace internal

Blob Unary(const Blob& x, UnaryAttrs attrs, std::string_view name) { return internal::AddOp1("unary", {x}, attrs, name); }

#define WEIR_UNARY_FUNCTION(Function, Kind) \
  Blob Function(const Blob& x, std::string_view name) { return Unary(x, {.kind = UnaryOpKind::Kind}, name); }
WEIR_UNARY_FUNCTION(Exp, kExp)
WEIR_UNARY_FUNCTION(Log, kLog)
WEIR_UNARY_FUNCTION(Sqrt, kSqrt)
WEIR_UNARY_FUNCTION(Rsqrt, kRsqrt)
WEIR_UNARY_FUNCTION(Square, kSquare)
WEIR_UNARY_FUNCTION(Abs, kAbs)
WEIR_UNARY_FUNCTION(Negative, kNegative)
WEIR_UNARY_FUNCTION(Reciprocal, kReciprocal)
WEIR_UNARY_FUNCTION(Log1p, kLog1p)
WEIR_UNARY_FUNCTION(Expm1, kExpm1)
WEIR_UNARY_FUNCTION(Softplus, kSoftplus)
WEIR_UNARY_FUNCTION(Sign, kSign)
WEIR_UNARY_FUNCTION(Floor, kFloor)
WEIR_UNARY_FUNCTION(Ceil, kCeil)
WEIR_UNARY_FUNCTION(Round, kRound)
WEIR_UNARY_FUNCTION(Sin, kSin)
WEIR_UNARY_FUNCTION(Cos, kCos)
WEIR_UNARY_FUNCTION(Relu, kRelu)
WEIR_UNARY_FUNCTION(Sigmoid, kSigmoid)
WEIR_UNARY_FUNCTION(Tanh, kTanh)
#undef WEIR_UNARY_FUNCTION

}  // namespace weir
