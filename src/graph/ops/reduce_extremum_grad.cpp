// reduce_extremum_grad (x, y, dy) -> dx for y = reduce_max(x) or reduce_min(x): dx = dy / n at the
// n elements of x equal to their y, 0 elsewhere. A NaN result sends no gradient (NaN equals nothing).
#include "graph/op_registry.hpp"
#include "graph/ops/reduce.hpp"
#include "weir/ops.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferReduceExtremumGrad(const InferContext& ctx) {
  const TensorMeta& x = ctx.inputs[0];
  if (!IsFloating(x.dtype)) throw OpError(ctx.op_type, "expects a floating x, got {}", x.dtype);
  const TensorMeta reduced = InferReduce(ctx, ctx.Get<ReduceAttrs>(), x);
  for (std::size_t i = 1; i < 3; ++i) {
    if (ctx.inputs[i] != reduced) {
      throw OpError(ctx.op_type, "{} {} does not match the reduction of x {}", i == 1 ? "y" : "dy",
                    ctx.inputs[i].ToString(), reduced.ToString());
    }
  }
  return {x};
}

WEIR_REGISTER_OP({.type = "reduce_extremum_grad",
                  .num_inputs = 3,
                  .input_names = {"x", "y", "dy"},
                  .infer = InferReduceExtremumGrad});

}  // namespace
}  // namespace weir::internal
