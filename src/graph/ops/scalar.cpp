// scalar: x (op) s elementwise for a scalar s fixed at build time; the output has x's dtype.
#include <cmath>
#include <limits>

#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/gradient_ops.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

template <typename T> bool FitsInteger(double value) {
  // Both bounds are powers of two, so they are exact as doubles; the upper one is exclusive.
  constexpr double kLow = static_cast<double>(std::numeric_limits<T>::min());
  constexpr double kHigh = -kLow;
  return std::isfinite(value) && std::trunc(value) == value && value >= kLow && value < kHigh;
}

std::vector<TensorMeta> InferScalar(const InferContext& ctx) {
  const auto& attrs = ctx.Get<ScalarAttrs>();
  const TensorMeta& x = ctx.inputs[0];
  switch (x.dtype) {
    case DType::kF32:
    case DType::kF64:
    case DType::kF16:
    case DType::kBF16: return {x};
    case DType::kI32:
    case DType::kI64: break;
    default: throw OpError(ctx.op_type, "expects an f32, f64, f16, bf16, i32 or i64 input, got {}", x.dtype);
  }
  // Integer x takes the scalar as its own dtype, so it must be an integer that fits.
  const bool fits = x.dtype == DType::kI32 ? FitsInteger<std::int32_t>(attrs.value) : FitsInteger<std::int64_t>(attrs.value);
  if (!fits) {
    throw OpError(ctx.op_type, "value {} is not representable as {}, the dtype of x {}", attrs.value, x.dtype, x.shape);
  }
  if (attrs.kind == ScalarOpKind::kDiv && attrs.value == 0) {
    throw OpError(ctx.op_type, "integer division of x {} by 0", x.shape);
  }
  if (attrs.kind == ScalarOpKind::kPow && attrs.value < 0) {
    throw OpError(ctx.op_type, "negative exponent {} needs a floating x, got {} x {}", attrs.value, x.dtype, x.shape);
  }
  return {x};
}

// Kinds linear in x scale dy by a constant; rdiv and pow need x, so they run scalar_grad.
std::vector<Blob> ScalarGradient(const GradContext& ctx) {
  const auto& attrs = ctx.Get<ScalarAttrs>();
  const Blob& dy = ctx.output_grads[0];
  switch (attrs.kind) {
    case ScalarOpKind::kAdd:
    case ScalarOpKind::kSub: return {dy};
    case ScalarOpKind::kRSub: return {ScalarMul(dy, -1.0)};
    case ScalarOpKind::kMul: return {ScalarMul(dy, attrs.value)};
    case ScalarOpKind::kDiv: return {Scalar(dy, {.kind = ScalarOpKind::kDiv, .value = attrs.value})};
    case ScalarOpKind::kRDiv:
    case ScalarOpKind::kPow: return {ScalarGrad(dy, ctx.inputs[0], attrs)};
  }
  throw OpError(ctx.op_type, "unknown kind {}", static_cast<int>(attrs.kind));
}

// Every split; a scaling (x·s, x/s) is linear, so partial sums stay partial sums.
std::vector<SbpSignature> ScalarSbp(const SbpContext& ctx) {
  const ScalarOpKind kind = ctx.Get<ScalarAttrs>().kind;
  return ElementwiseSbp(ctx, kind == ScalarOpKind::kMul || kind == ScalarOpKind::kDiv);
}

WEIR_REGISTER_OP({.type = "scalar",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferScalar,
                  .gradient = ScalarGradient,
                  .sbp = ScalarSbp,
                  .read_attrs = ReadAttrs<ScalarAttrs>(Attr("kind", &ScalarAttrs::kind), Attr("value", &ScalarAttrs::value)),
                  .pure = true});

}  // namespace
}  // namespace internal

Blob Scalar(const Blob& x, ScalarAttrs attrs, std::string_view name) {
  return internal::AddOp1("scalar", {x}, attrs, name);
}
Blob ScalarAdd(const Blob& x, double value, std::string_view name) {
  return Scalar(x, {.kind = ScalarOpKind::kAdd, .value = value}, name);
}
Blob ScalarMul(const Blob& x, double value, std::string_view name) {
  return Scalar(x, {.kind = ScalarOpKind::kMul, .value = value}, name);
}

}  // namespace weir
