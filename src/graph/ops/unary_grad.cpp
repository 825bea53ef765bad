// unary_grad: dx = f'(x) · dy for a unary kind, reading x or y = f(x) (UnaryGradUsesOutput) as its
// second input. Rounding kinds and sign have a zero gradient (OneFlow's choice).
#include "graph/op_registry.hpp"
#include "graph/ops/gradient_ops.hpp"

namespace weir::internal {
namespace {

WEIR_REGISTER_OP({.type = "unary_grad", .num_inputs = 2, .input_names = {"dy", "x_or_y"}, .infer = InferElementwiseGrad,
                  .sbp = ElementwiseRule()});

}  // namespace
}  // namespace weir::internal
