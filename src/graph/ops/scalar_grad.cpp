// scalar_grad: dx = dy · d(x (op) s)/dx for every ScalarOpKind, in one pass (scalar's backward op
// for the kinds whose derivative depends on x: rdiv and pow).
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/gradient_ops.hpp"
#include "weir/ops.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferScalarGrad(const InferContext& ctx) {
  const TensorMeta& dy = ctx.inputs[0];
  const TensorMeta& x = ctx.inputs[1];
  if (!IsFloating(dy.dtype)) throw OpError(ctx.op_type, "expects floating inputs, got {}", dy.dtype);
  if (dy != x) throw OpError(ctx.op_type, "dy {} does not match x {}", dy.ToString(), x.ToString());
  return {dy};
}

WEIR_REGISTER_OP({.type = "scalar_grad", .num_inputs = 2, .input_names = {"dy", "x"}, .infer = InferScalarGrad,
                  .sbp = ElementwiseRule()});

}  // namespace

Blob ScalarGrad(const Blob& dy, const Blob& x, const ScalarAttrs& attrs) {
  return AddOp1("scalar_grad", {dy, x}, attrs, {});
}

}  // namespace weir::internal
