// sgd_update: p -= lr · (g·scale + l1·sign(p) + l2·p), in place on the variable.
#include "graph/ops/update_infer.hpp"

namespace weir::internal {
namespace {

WEIR_REGISTER_OP({.type = "sgd_update",
                  .num_inputs = 3,
                  .input_names = {"variable", "gradient", "learning_rate"},
                  .infer = InferUpdate,
                  .mutates_inputs = {0},
                  .sbp = UpdateSbp});

}  // namespace
}  // namespace weir::internal
