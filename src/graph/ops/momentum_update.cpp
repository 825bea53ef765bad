// momentum_update: v = β·v − lr·g', p += v, with g' = g·scale + l1·sign(p) + l2·p; in place on the
// variable and its "-momentum" slot.
#include "graph/ops/update_infer.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferMomentumUpdate(const InferContext& ctx) {
  return InferUpdateWithSlots(ctx, 1, false, "variable, gradient, learning_rate, momentum");
}

WEIR_REGISTER_OP({.type = "momentum_update",
                  .num_inputs = -1,  // a skip flag last with UpdateAttrs::skip_if
                  .input_names = {"variable", "gradient", "learning_rate", "momentum", "skip_if"},
                  .infer = InferMomentumUpdate,
                  .mutates_inputs = {0, 3},
                  .sbp = UpdateSbp});

}  // namespace
}  // namespace weir::internal
