// rmsprop_update (OneFlow's rmsprop_update, centered=False): with g' = g·scale + l1·sign(p) + l2·p,
//   r = decay·r + (1−decay)·g'²,  p −= lr·g' / sqrt(r + ε),
// ε inside the square root, as in OneFlow's kernel. In place on the variable and its "-mean_square"
// slot. The centered form is centered_rmsprop_update.
#include "graph/ops/update_infer.hpp"

namespace weir::internal {
namespace {

WEIR_REGISTER_OP({.type = "rmsprop_update",
                  .num_inputs = 4,
                  .input_names = {"variable", "gradient", "learning_rate", "mean_square"},
                  .infer = InferUpdate,
                  .mutates_inputs = {0, 3}});

}  // namespace
}  // namespace weir::internal
