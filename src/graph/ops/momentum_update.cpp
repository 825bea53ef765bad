// momentum_update: v = β·v − lr·g', p += v, with g' = g·scale + l1·sign(p) + l2·p; in place on the
// variable and its "-momentum" slot.
#include "graph/ops/update_infer.hpp"

namespace weir::internal {
namespace {

WEIR_REGISTER_OP({.type = "momentum_update",
                  .num_inputs = 4,
                  .input_names = {"variable", "gradient", "learning_rate", "momentum"},
                  .infer = InferUpdate,
                  .mutates_inputs = {0, 3},
                  .sbp = UpdateSbp});

}  // namespace
}  // namespace weir::internal
