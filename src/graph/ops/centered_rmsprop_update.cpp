// centered_rmsprop_update (OneFlow's rmsprop_update, centered=True): with g' = g·scale + l1·sign(p) + l2·p,
//   r = decay·r + (1−decay)·g'²,  mg = decay·mg + (1−decay)·g',  p −= lr·g' / sqrt(r − mg² + ε),
// ε inside the square root, as in OneFlow's kernel. In place on the variable and its "-mean_square"
// and "-mean_gradient" slots. A separate op from rmsprop_update because the slots it writes differ.
#include "graph/ops/update_infer.hpp"

namespace weir::internal {
namespace {

WEIR_REGISTER_OP({.type = "centered_rmsprop_update",
                  .num_inputs = 5,
                  .input_names = {"variable", "gradient", "learning_rate", "mean_square", "mean_gradient"},
                  .infer = InferUpdate,
                  .mutates_inputs = {0, 3, 4}});

}  // namespace
}  // namespace weir::internal
