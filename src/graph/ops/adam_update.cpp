// adam_update (Adam and AdamW, OneFlow's adam_update): with g' = g·scale + l1·sign(p) + l2·p,
//   m = β1·m + (1−β1)·g',  v = β2·v + (1−β2)·g'²,  p −= lr_t·(m / (sqrt(v) + ε) + weight_decay·p),
// lr_t = lr without bias correction (OneFlow's default), else lr·sqrt(1−β2^t) / (1−β1^t) with
// t = train step + 1 (OneFlow's adam_bias_correction_learning_rate). In place on the variable and its
// "-m" and "-v" slots; the train step is a sixth input exactly when the optimizer asks for bias
// correction.
#include "graph/ops/update_infer.hpp"
#include "kernels/attrs/update_attrs.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferAdamUpdate(const InferContext& ctx) {
  const bool bias_correction = ctx.Get<UpdateAttrs>().optimizer.do_bias_correction;
  return InferUpdateWithSlots(ctx, 2, bias_correction,
                              bias_correction ? "variable, gradient, learning_rate, m, v, train_step"
                                              : "variable, gradient, learning_rate, m, v");
}

WEIR_REGISTER_OP({.type = "adam_update",
                  .num_inputs = -1,
                  .input_names = {"variable", "gradient", "learning_rate", "m", "v", "train_step", "skip_if"},
                  .infer = InferAdamUpdate,
                  .mutates_inputs = {0, 3, 4},
                  .sbp = UpdateSbp});

}  // namespace
}  // namespace weir::internal
