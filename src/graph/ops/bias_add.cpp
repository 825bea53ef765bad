// bias_add: x + bias, with the 1-D bias running along one axis of x.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferBiasAdd(const InferContext& ctx) {
  const auto& attrs = ctx.Get<BiasAddAttrs>();
  const TensorMeta& x = ctx.inputs[0];
  const TensorMeta& bias = ctx.inputs[1];
  // Mixed precision adds an f32 bias to a 16-bit x (graph/mixed_precision_pass.hpp).
  const bool low_x = (x.dtype == DType::kF16 || x.dtype == DType::kBF16) && bias.dtype == DType::kF32;
  if (x.dtype != bias.dtype && !low_x) {
    throw OpError(ctx.op_type, "dtypes differ: x {} vs bias {} (a 16-bit x may take an f32 bias)", x.dtype, bias.dtype);
  }
  if (!IsFloating(x.dtype)) throw OpError(ctx.op_type, "expects floating inputs, got {}", x.dtype);
  if (bias.shape.Rank() != 1) throw OpError(ctx.op_type, "expects a 1-D bias, got {}", bias.shape);
  const int axis = ResolveAxis(ctx.op_type, "axis", attrs.axis, x.shape.Rank());
  if (bias.shape[0] != x.shape[axis]) {
    throw OpError(ctx.op_type, "bias {} does not match x {} on axis {}", bias.shape, x.shape, attrs.axis);
  }
  return {x};
}

// dx = dy; dbias = dy summed over every axis but the bias axis (in the bias's dtype: an f32 bias of a
// 16-bit x sums f32 values).
std::vector<Blob> BiasAddGradient(const GradContext& ctx) {
  const Blob& dy = ctx.output_grads[0];
  const DType bias_dtype = ctx.inputs[1].GetDType();
  const Blob wide_dy = dy.GetDType() == bias_dtype ? dy : Cast(dy, {.dtype = bias_dtype});
  Blob dbias;
  if (ctx.needs_grad[1]) {
    const int rank = dy.GetShape().Rank();
    const int axis = ResolveAxis(ctx.op_type, "axis", ctx.Get<BiasAddAttrs>().axis, rank);
    ReduceAttrs reduce;
    for (int i = 0; i < rank; ++i) {
      if (i != axis) reduce.axes.push_back(i);
    }
    // No other axis (a 1-D x): the gradient is dy itself; empty axes would mean "all" to reduce_sum.
    dbias = reduce.axes.empty() ? wide_dy : ReduceSum(wide_dy, std::move(reduce));
  }
  return {ctx.needs_grad[0] ? dy : Blob(), dbias};
}

// x split along any axis: the bias splits with it along the bias axis, and is whole elsewhere.
std::vector<SbpSignature> BiasAddSbp(const SbpContext& ctx) {
  const int rank = ctx.inputs[0].shape.Rank();
  const int bias_axis = ResolveAxis(ctx.op_type, "axis", ctx.Get<BiasAddAttrs>().axis, rank);
  std::vector<SbpSignature> signatures;
  for (int axis = 0; axis < rank; ++axis) {
    signatures.push_back({{Sbp::S(axis), axis == bias_axis ? Sbp::S(0) : Sbp::B()}, {Sbp::S(axis)}});
  }
  return signatures;
}

WEIR_REGISTER_OP({.type = "bias_add",
                  .num_inputs = 2,
                  .input_names = {"x", "bias"},
                  .infer = InferBiasAdd,
                  .gradient = BiasAddGradient,
                  .sbp = BiasAddSbp,
                  .read_attrs = ReadAttrs<BiasAddAttrs>(Attr("axis", &BiasAddAttrs::axis))});

}  // namespace
}  // namespace internal

Blob BiasAdd(const Blob& x, const Blob& bias, BiasAddAttrs attrs, std::string_view name) {
  return internal::AddOp1("bias_add", {x, bias}, attrs, name);
}

}  // namespace weir
