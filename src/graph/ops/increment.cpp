// increment: adds 1 to an i64 (1) counter in place (the train step, after every update read it).
#include "graph/op_registry.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferIncrement(const InferContext& ctx) {
  if (ctx.inputs[0] != TensorMeta{Shape{1}, DType::kI64}) {
    throw OpError(ctx.op_type, "expects an i64(1) counter, got {}", ctx.inputs[0].ToString());
  }
  return {};
}

WEIR_REGISTER_OP({.type = "increment", .num_inputs = 1, .input_names = {"counter"}, .infer = InferIncrement,
                  .mutates_inputs = {0}});

}  // namespace
}  // namespace weir::internal
