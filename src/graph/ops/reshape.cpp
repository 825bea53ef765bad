// reshape: the same elements, in the same row-major order, under a new shape (one dim may be -1).
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferReshape(const InferContext& ctx) {
  const auto& attrs = ctx.Get<ReshapeAttrs>();
  const TensorMeta& x = ctx.inputs[0];
  // Shape rejects -1, so the requested shape is printed from the raw dims.
  const std::string requested = fmt::format("({})", fmt::join(attrs.shape, ","));
  int inferred = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < attrs.shape.size(); ++i) {
    const std::int64_t dim = attrs.shape[i];
    if (dim == -1) {
      if (inferred >= 0) throw OpError(ctx.op_type, "shape {} has more than one -1", requested);
      inferred = static_cast<int>(i);
    } else if (dim < 0) {
      throw OpError(ctx.op_type, "shape {} has a negative dimension other than -1", requested);
    } else {
      known *= dim;
    }
  }
  const std::int64_t count = x.shape.NumElements();
  std::vector<std::int64_t> dims = attrs.shape;
  if (inferred >= 0) {
    // With a zero among the known dims any size fits the -1, so it cannot be inferred.
    if (known == 0) throw OpError(ctx.op_type, "cannot infer the -1 in {}: the other dims multiply to 0", requested);
    if (count % known != 0) {
      throw OpError(ctx.op_type, "cannot reshape x {} ({} elements) into {}", x.shape, count, requested);
    }
    dims[static_cast<std::size_t>(inferred)] = count / known;
  } else if (known != count) {
    throw OpError(ctx.op_type, "cannot reshape x {} ({} elements) into {} ({} elements)", x.shape, count, requested,
                  known);
  }
  return {{Shape(std::move(dims)), x.dtype}};
}

std::vector<Blob> ReshapeGradient(const GradContext& ctx) {
  return {Reshape(ctx.output_grads[0], {.shape = ctx.inputs[0].GetShape().Dims()})};
}

// Row-major: a reshape that keeps the first dimension keeps each slice of it together.
std::vector<SbpSignature> ReshapeSbp(const SbpContext& ctx) {
  const Shape& in = ctx.inputs[0].shape;
  const Shape& out = ctx.outputs[0].shape;
  if (in.Rank() == 0 || out.Rank() == 0 || in[0] != out[0]) return {};
  return {{{Sbp::S(0)}, {Sbp::S(0)}}};
}

WEIR_REGISTER_OP({.type = "reshape",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferReshape,
                  .gradient = ReshapeGradient,
                  .sbp = ReshapeSbp,
                  .read_attrs = ReadAttrs<ReshapeAttrs>(Attr("shape", &ReshapeAttrs::shape))});

}  // namespace
}  // namespace internal

Blob Reshape(const Blob& x, ReshapeAttrs attrs, std::string_view name) {
  return internal::AddOp1("reshape", {x}, std::move(attrs), name);
}

}  // namespace weir
