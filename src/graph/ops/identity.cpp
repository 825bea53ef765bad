// identity: copies its input, of any dtype.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferIdentity(const InferContext& ctx) { return {ctx.inputs[0]}; }

std::vector<Blob> IdentityGradient(const GradContext& ctx) { return {ctx.output_grads[0]}; }

WEIR_REGISTER_OP({.type = "identity",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferIdentity,
                  .gradient = IdentityGradient,
                  .sbp = ElementwiseRule(true)});

}  // namespace
}  // namespace internal

Blob Identity(const Blob& x, std::string_view name) { return internal::AddOp1("identity", {x}, std::any{}, name); }

}  // namespace weir
