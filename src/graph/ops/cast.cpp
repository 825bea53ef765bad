// cast: converts every element to another dtype (to bool: value != 0).
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferCast(const InferContext& ctx) {
  const auto& attrs = ctx.Get<CastAttrs>();
  switch (attrs.dtype) {
    case DType::kF32:
    case DType::kF64:
    case DType::kI32:
    case DType::kI64:
    case DType::kU8:
    case DType::kBool: break;
    default:
      throw OpError(ctx.op_type, "unknown target dtype {}", static_cast<int>(attrs.dtype));
  }
  return {{ctx.inputs[0].shape, attrs.dtype}};
}

WEIR_REGISTER_OP({.type = "cast", .num_inputs = 1, .input_names = {"x"}, .infer = InferCast});

}  // namespace
}  // namespace internal

Blob Cast(const Blob& x, CastAttrs attrs, std::string_view name) { return internal::AddOp1("cast", {x}, attrs, name); }

}  // namespace weir
