// sigmoid_grad: dy · y · (1 − y), with y = sigmoid(x) (sigmoid's backward op).
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/gradient_ops.hpp"

namespace weir::internal {
namespace {

WEIR_REGISTER_OP({.type = "sigmoid_grad", .num_inputs = 2, .input_names = {"dy", "y"}, .infer = InferElementwiseGrad,
                  .sbp = ElementwiseRule()});

}  // namespace

Blob SigmoidGrad(const Blob& dy, const Blob& y) { return AddOp1("sigmoid_grad", {dy, y}, std::any{}, {}); }

}  // namespace weir::internal
