// softmax_grad: dx = y · (dy − sum(dy · y)) along the softmax axis, with y = softmax(x) (softmax's
// backward op).
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/gradient_ops.hpp"
#include "weir/ops.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferSoftmaxGrad(const InferContext& ctx) {
  std::vector<TensorMeta> outputs = InferElementwiseGrad(ctx);
  ResolveAxis(ctx.op_type, "axis", ctx.Get<SoftmaxAttrs>().axis, outputs[0].shape.Rank());
  return outputs;
}

// Rows are independent: any axis but the softmax axis splits.
std::vector<SbpSignature> SoftmaxGradSbp(const SbpContext& ctx) {
  return ElementwiseSbpExcept(ctx, {ctx.Get<SoftmaxAttrs>().axis});
}

WEIR_REGISTER_OP({.type = "softmax_grad", .num_inputs = 2, .input_names = {"dy", "y"}, .infer = InferSoftmaxGrad,
                  .sbp = SoftmaxGradSbp});

}  // namespace

Blob SoftmaxGrad(const Blob& dy, const Blob& y, int axis) {
  return AddOp1("softmax_grad", {dy, y}, SoftmaxAttrs{.axis = axis}, {});
}

}  // namespace weir::internal
