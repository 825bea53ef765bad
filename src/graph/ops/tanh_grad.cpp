// tanh_grad: dy · (1 − y²), with y = tanh(x) (tanh's backward op).
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/gradient_ops.hpp"

namespace weir::internal {
namespace {

WEIR_REGISTER_OP({.type = "tanh_grad", .num_inputs = 2, .input_names = {"dy", "y"}, .infer = InferElementwiseGrad,
                  .sbp = ElementwiseRule()});

}  // namespace

Blob TanhGrad(const Blob& dy, const Blob& y) { return AddOp1("tanh_grad", {dy, y}, std::any{}, {}); }

}  // namespace weir::internal
