// maximum_grad / minimum_grad (dy, a, b) -> (da, db), all of dy's shape (the gradient rule
// broadcasts a and b first and sums the results back): dy goes to a where a was picked (a >= b for
// maximum, a <= b for minimum, so a wins ties as in OneFlow), to b elsewhere.
#include "graph/op_registry.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferExtremumGrad(const InferContext& ctx) {
  const TensorMeta& dy = ctx.inputs[0];
  if (!IsFloating(dy.dtype)) throw OpError(ctx.op_type, "expects a floating dy, got {}", dy.dtype);
  for (std::size_t i = 1; i < 3; ++i) {
    if (ctx.inputs[i] != dy) {
      throw OpError(ctx.op_type, "{} {} does not match dy {}", i == 1 ? "a" : "b", ctx.inputs[i].ToString(),
                    dy.ToString());
    }
  }
  return {dy, dy};
}

WEIR_REGISTER_OP({.type = "maximum_grad", .num_inputs = 3, .input_names = {"dy", "a", "b"}, .infer = InferExtremumGrad});
WEIR_REGISTER_OP({.type = "minimum_grad", .num_inputs = 3, .input_names = {"dy", "a", "b"}, .infer = InferExtremumGrad});

}  // namespace
}  // namespace weir::internal
