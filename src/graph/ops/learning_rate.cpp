// learning_rate: the job's LrSchedule evaluated at the train step (i64 (1)) -> f32 (1).
#include "graph/op_registry.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferLearningRate(const InferContext& ctx) {
  if (ctx.inputs[0] != TensorMeta{Shape{1}, DType::kI64}) {
    throw OpError(ctx.op_type, "expects the train step as i64(1), got {}", ctx.inputs[0].ToString());
  }
  return {{Shape{1}, DType::kF32}};
}

WEIR_REGISTER_OP({.type = "learning_rate", .num_inputs = 1, .input_names = {"train_step"}, .infer = InferLearningRate});

}  // namespace
}  // namespace weir::internal
