// clip_by_value_grad (dy, x) -> dx: dy where min <= x <= max, else 0.
#include "graph/op_registry.hpp"
#include "graph/ops/gradient_ops.hpp"

namespace weir::internal {
namespace {

WEIR_REGISTER_OP({.type = "clip_by_value_grad", .num_inputs = 2, .input_names = {"dy", "x"}, .infer = InferElementwiseGrad,
                  .sbp = ElementwiseRule()});

}  // namespace
}  // namespace weir::internal
