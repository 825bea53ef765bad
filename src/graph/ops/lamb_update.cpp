// lamb_update (OneFlow's lamb_update): with g' = g·scale + l1·sign(p) + l2·p and t = train step + 1,
//   m = β1·m + (1−β1)·g',  v = β2·v + (1−β2)·g'²,  u = (m / (1−β1^t)) / sqrt(v / (1−β2^t) + ε),
//   ratio = ||p|| / ||u|| (1 when either norm is 0),  p −= lr·ratio·(u + weight_decay·p).
// As in OneFlow's kernel, ε is inside the square root, the trust ratio uses the norm of u without the
// weight-decay term, and the bias correction is always applied. In place on the variable and its "-m"
// and "-v" slots.
#include "graph/ops/update_infer.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferLambUpdate(const InferContext& ctx) {
  return InferUpdateWithSlots(ctx, 2, true, "variable, gradient, learning_rate, m, v, train_step");
}

WEIR_REGISTER_OP({.type = "lamb_update",
                  .num_inputs = -1,  // a skip flag last with UpdateAttrs::skip_if
                  .input_names = {"variable", "gradient", "learning_rate", "m", "v", "train_step", "skip_if"},
                  .infer = InferLambUpdate,
                  .mutates_inputs = {0, 3, 4}});

}  // namespace
}  // namespace weir::internal
