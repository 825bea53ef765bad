// argmax: the index of the largest element along one axis (the first on ties); the axis is removed.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferArgMax(const InferContext& ctx) {
  const auto& attrs = ctx.Get<ArgMaxAttrs>();
  const TensorMeta& x = ctx.inputs[0];
  if (!IsNumber(x.dtype)) {
    throw OpError(ctx.op_type, "expects an f32, f64, f16, bf16, i32 or i64 input, got {}", x.dtype);
  }
  if (attrs.output_dtype != DType::kI32 && attrs.output_dtype != DType::kI64) {
    throw OpError(ctx.op_type, "output_dtype must be i32 or i64, got {}", attrs.output_dtype);
  }
  const int axis = ResolveAxis(ctx.op_type, "axis", attrs.axis, x.shape.Rank());
  if (x.shape[axis] == 0) throw OpError(ctx.op_type, "axis {} of x {} is empty", attrs.axis, x.shape);
  std::vector<std::int64_t> dims = x.shape.Dims();
  dims.erase(dims.begin() + axis);
  return {{Shape(std::move(dims)), attrs.output_dtype}};
}

WEIR_REGISTER_OP({.type = "argmax", .num_inputs = 1, .input_names = {"x"}, .infer = InferArgMax,
                  .read_attrs = ReadAttrs<ArgMaxAttrs>(Attr("axis", &ArgMaxAttrs::axis), Attr("output_dtype", &ArgMaxAttrs::output_dtype))});

}  // namespace
}  // namespace internal

Blob ArgMax(const Blob& x, ArgMaxAttrs attrs, std::string_view name) {
  return internal::AddOp1("argmax", {x}, attrs, name);
}

}  // namespace weir
