// concat_grad: dy of a concat cut back into one slice per concat input (several outputs).
#include "graph/op_registry.hpp"
#include "kernels/attrs/concat_attrs.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferConcatGrad(const InferContext& ctx) {
  const TensorMeta& dy = ctx.inputs[0];
  const auto& attrs = ctx.Get<ConcatGradAttrs>();
  const int axis = ResolveAxis(ctx.op_type, "axis", attrs.axis, dy.shape.Rank());
  std::int64_t total = 0;
  for (std::int64_t size : attrs.sizes) {
    if (size < 0) throw OpError(ctx.op_type, "sizes [{}] must be non-negative", fmt::join(attrs.sizes, ","));
    total += size;
  }
  if (attrs.sizes.empty() || total != dy.shape[axis]) {
    throw OpError(ctx.op_type, "sizes [{}] do not add up to dy {} along axis {}", fmt::join(attrs.sizes, ","),
                  dy.shape, axis);
  }
  std::vector<TensorMeta> outputs;
  for (std::int64_t size : attrs.sizes) {
    std::vector<std::int64_t> dims = dy.shape.Dims();
    dims[static_cast<std::size_t>(axis)] = size;
    outputs.push_back({Shape(std::move(dims)), dy.dtype});
  }
  return outputs;
}

WEIR_REGISTER_OP({.type = "concat_grad", .num_inputs = 1, .input_names = {"dy"}, .infer = InferConcatGrad});

}  // namespace
}  // namespace weir::internal
