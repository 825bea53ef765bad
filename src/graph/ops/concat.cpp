// concat: joins its inputs (variadic, one dtype, equal shapes but along the axis) along one axis.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "kernels/attrs/concat_attrs.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferConcat(const InferContext& ctx) {
  const TensorMeta& first = ctx.inputs[0];
  if (first.shape.Rank() == 0) throw OpError(ctx.op_type, "cannot join 0-D inputs, got input 0 {}", first.shape);
  const int axis = ResolveAxis(ctx.op_type, "axis", ctx.Get<ConcatAttrs>().axis, first.shape.Rank());
  std::vector<std::int64_t> dims = first.shape.Dims();
  dims[static_cast<std::size_t>(axis)] = 0;
  for (std::size_t i = 0; i < ctx.inputs.size(); ++i) {
    const TensorMeta& input = ctx.inputs[i];
    if (input.dtype != first.dtype) {
      throw OpError(ctx.op_type, "dtypes differ: input 0 is {}, input {} is {}", first.dtype, i, input.dtype);
    }
    bool same = input.shape.Rank() == first.shape.Rank();
    for (int d = 0; same && d < first.shape.Rank(); ++d) same = d == axis || input.shape[d] == first.shape[d];
    if (!same) {
      throw OpError(ctx.op_type, "input {} {} does not match input 0 {} outside axis {}", i, input.shape, first.shape,
                    axis);
    }
    dims[static_cast<std::size_t>(axis)] += input.shape[axis];
  }
  return {{Shape(std::move(dims)), first.dtype}};
}

// Every input gets its own slice of dy, cut in one pass by concat_grad (several outputs); slices
// nobody needs are still cut, which costs one copy of dy at most.
std::vector<Blob> ConcatGradient(const GradContext& ctx) {
  const int rank = ctx.inputs[0].GetShape().Rank();
  const int given = ctx.Get<ConcatAttrs>().axis;
  const int axis = given < 0 ? given + rank : given;
  ConcatGradAttrs attrs{.axis = axis, .sizes = {}};
  for (const Blob& input : ctx.inputs) attrs.sizes.push_back(input.GetShape()[axis]);
  std::vector<Blob> parts = AddOp("concat_grad", {ctx.output_grads[0]}, std::move(attrs), {});
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (!ctx.needs_grad[i]) parts[i] = Blob();
  }
  return parts;
}

WEIR_REGISTER_OP({.type = "concat",
                  .num_inputs = -1,
                  .input_names = {},
                  .infer = InferConcat,
                  .gradient = ConcatGradient,
                  .read_attrs = ReadAttrs<ConcatAttrs>(Attr("axis", &ConcatAttrs::axis))});

}  // namespace
}  // namespace internal

Blob Concat(const std::vector<Blob>& inputs, ConcatAttrs attrs, std::string_view name) {
  if (inputs.empty()) throw std::invalid_argument("[concat] argument 'inputs' must hold at least one blob, got none");
  return internal::AddOp1("concat", inputs, attrs, name);
}

}  // namespace weir
