// clip_by_global_norm (OneFlow's grad_clipping.by_global_norm): every input times
// clip_norm / max(global_norm, clip_norm), where global_norm = gradient_scale · sqrt(Σ over all
// inputs of Σ g²) is the norm of the gradients as the updates will scale them. One op over all the
// gradients of a train job, so that the norm is global; one output per input, of the same meta.
#include "graph/op_registry.hpp"
#include "kernels/attrs/update_attrs.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferClipByGlobalNorm(const InferContext& ctx) {
  const auto& attrs = ctx.Get<ClipByGlobalNormAttrs>();
  if (!(attrs.clip_norm > 0)) throw OpError(ctx.op_type, "clip_norm must be positive, got {}", attrs.clip_norm);
  for (std::size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (!IsFloating(ctx.inputs[i].dtype)) {
      throw OpError(ctx.op_type, "gradient {} must be floating, got {}", i, ctx.inputs[i].ToString());
    }
  }
  return {ctx.inputs.begin(), ctx.inputs.end()};
}

WEIR_REGISTER_OP({.type = "clip_by_global_norm", .num_inputs = -1, .infer = InferClipByGlobalNorm});

}  // namespace
}  // namespace weir::internal
