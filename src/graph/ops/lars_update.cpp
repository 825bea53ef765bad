// lars_update (OneFlow's LARS): with g' = g·scale + l1·sign(p) + l2·p, the variable's rate
//   rate = lr · lars_coefficient · ‖p‖ / (ε + ‖g'‖)   (norms over the whole variable),
//   v = momentum_beta·v − rate·g',  p += v,
// in place on the variable and its "-momentum" slot. Runs whole on one device: the norms are over the
// whole variable.
#include "graph/ops/update_infer.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferLarsUpdate(const InferContext& ctx) {
  return InferUpdateWithSlots(ctx, 1, false, "variable, gradient, learning_rate, momentum");
}

WEIR_REGISTER_OP({.type = "lars_update",
                  .num_inputs = -1,  // a skip flag last with UpdateAttrs::skip_if
                  .input_names = {"variable", "gradient", "learning_rate", "momentum", "skip_if"},
                  .infer = InferLarsUpdate,
                  .mutates_inputs = {0, 3}});

}  // namespace
}  // namespace weir::internal
