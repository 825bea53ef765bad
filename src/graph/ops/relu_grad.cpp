// relu_grad: dy where relu's output y is positive, else 0 (relu's backward op).
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/gradient_ops.hpp"

namespace weir::internal {
namespace {

WEIR_REGISTER_OP({.type = "relu_grad", .num_inputs = 2, .input_names = {"dy", "y"}, .infer = InferElementwiseGrad,
                  .sbp = ElementwiseRule()});

}  // namespace

Blob ReluGrad(const Blob& dy, const Blob& y) { return AddOp1("relu_grad", {dy, y}, std::any{}, {}); }

}  // namespace weir::internal
