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
    case DType::kI8:
    case DType::kBool:
    case DType::kF16:
    case DType::kBF16: break;
    case DType::kTensorBuffer: throw OpError(ctx.op_type, "cannot cast to tensor_buffer (only the data ops make one)");
    default:
      throw OpError(ctx.op_type, "unknown target dtype {}", static_cast<int>(attrs.dtype));
  }
  return {{ctx.inputs[0].shape, attrs.dtype}};
}

// The gradient is dy cast back to x's dtype, whatever the two dtypes (OneFlow's rule): a cast to an
// integer passes its gradient straight through the rounding, and an integer gradient (of an integer
// loss) becomes a floating one at the cast that made the value an integer. An op that has no
// gradient (argmax, a comparison) still stops a path through it with an error naming that op.
std::vector<Blob> CastGradient(const GradContext& ctx) {
  const Blob& x = ctx.inputs[0];
  const Blob& dy = ctx.output_grads[0];
  return {x.GetDType() == dy.GetDType() ? dy : Cast(dy, {.dtype = x.GetDType()})};
}

WEIR_REGISTER_OP({.type = "cast",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferCast,
                  .gradient = CastGradient,
                  .sbp = ElementwiseRule(),
                  .read_attrs = ReadAttrs<CastAttrs>(Attr("dtype", &CastAttrs::dtype)),
                  .pure = true});

}  // namespace
}  // namespace internal

Blob Cast(const Blob& x, CastAttrs attrs, std::string_view name) { return internal::AddOp1("cast", {x}, attrs, name); }

}  // namespace weir
