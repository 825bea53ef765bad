// rmsprop_update (OneFlow's rmsprop_update): with g' = g·scale + l1·sign(p) + l2·p,
//   r = decay·r + (1−decay)·g'²,  p −= lr·g' / sqrt(r + ε);
// centered (a fifth input, the "-mean_gradient" slot mg): also mg = decay·mg + (1−decay)·g', and
//   p −= lr·g' / sqrt(r − mg² + ε).
// ε inside the square root, as in OneFlow's kernel. In place on the variable and its slots.
#include "graph/ops/update_infer.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferRmsPropUpdate(const InferContext& ctx) {
  const bool centered = ctx.Get<UpdateAttrs>().optimizer.centered;
  return InferUpdateWithSlots(ctx, centered ? 2 : 1, false,
                              centered ? "variable, gradient, learning_rate, mean_square, mean_gradient"
                                       : "variable, gradient, learning_rate, mean_square");
}

WEIR_REGISTER_OP({.type = "rmsprop_update",
                  .num_inputs = -1,
                  .input_names = {"variable", "gradient", "learning_rate", "mean_square", "mean_gradient", "skip_if"},
                  .infer = InferRmsPropUpdate,
                  .mutates_inputs = {0, 3, 4},
                  .sbp = UpdateSbp});  // the planner skips the mean_gradient slot when absent

}  // namespace
}  // namespace weir::internal
