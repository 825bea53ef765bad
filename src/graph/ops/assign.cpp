// assign (OneFlow's flow.assign): writes value into the variable ref, in place; same shape and dtype.
// No output: a job reads the variable's new value in its next call (or through a later op's input).
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/sbp.hpp"
#include "weir/ops.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferAssign(const InferContext& ctx) {
  if (ctx.inputs[1] != ctx.inputs[0]) {
    throw OpError(ctx.op_type, "value {} does not match ref {}", ctx.inputs[1].ToString(), ctx.inputs[0].ToString());
  }
  return {};
}

WEIR_REGISTER_OP({.type = "assign",
                  .num_inputs = 2,
                  .input_names = {"ref", "value"},
                  .infer = InferAssign,
                  .mutates_inputs = {0},
                  .sbp = UpdateSbp});

}  // namespace
}  // namespace weir::internal

namespace weir {

void Assign(const Blob& ref, const Blob& value, std::string_view name) {
  internal::AddOp("assign", {ref, value}, std::any{}, name);
}

}  // namespace weir
