// sgd_update: p -= lr · (g·scale + l1·sign(p) + l2·p), in place on the variable.
#include "graph/ops/update_infer.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferSgdUpdate(const InferContext& ctx) {
  return InferUpdateWithSlots(ctx, 0, false, "variable, gradient, learning_rate");
}

WEIR_REGISTER_OP({.type = "sgd_update",
                  .num_inputs = -1,  // a skip flag last with UpdateAttrs::skip_if
                  .input_names = {"variable", "gradient", "learning_rate", "skip_if"},
                  .infer = InferSgdUpdate,
                  .mutates_inputs = {0},
                  .sbp = UpdateSbp});

}  // namespace
}  // namespace weir::internal
