// softmax: exp(x) / sum(exp(x)) along one axis.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/gradient_ops.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferSoftmax(const InferContext& ctx) {
  const auto& attrs = ctx.Get<SoftmaxAttrs>();
  const TensorMeta& x = ctx.inputs[0];
  if (!IsFloating(x.dtype)) throw OpError(ctx.op_type, "expects a floating input, got {}", x.dtype);
  ResolveAxis(ctx.op_type, "axis", attrs.axis, x.shape.Rank());
  return {x};
}

std::vector<Blob> SoftmaxGradient(const GradContext& ctx) {
  return {SoftmaxGrad(ctx.output_grads[0], ctx.outputs[0], ctx.Get<SoftmaxAttrs>().axis)};
}

// Rows are independent: any axis but the softmax axis splits.
std::vector<SbpSignature> SoftmaxSbp(const SbpContext& ctx) {
  return ElementwiseSbpExcept(ctx, {ctx.Get<SoftmaxAttrs>().axis});
}

WEIR_REGISTER_OP({.type = "softmax",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferSoftmax,
                  .gradient = SoftmaxGradient,
                  .sbp = SoftmaxSbp,
                  .read_attrs = ReadAttrs<SoftmaxAttrs>(Attr("axis", &SoftmaxAttrs::axis))});

}  // namespace
}  // namespace internal

Blob Softmax(const Blob& x, SoftmaxAttrs attrs, std::string_view name) {
  return internal::AddOp1("softmax", {x}, attrs, name);
}

}  // namespace weir
