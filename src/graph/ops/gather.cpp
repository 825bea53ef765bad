// gather: the entries of params along `axis` that indices pick, in the indices' shape (OneFlow's
// flow.gather with batch_dims 0; TensorFlow's tf.gather): params[:axis] + indices + params[axis+1:].
// An index outside [0, params.shape[axis]) fails the call. Its gradient adds each dy entry into the
// row it came from: unsorted_segment_sum(dy, indices, params.shape[axis]).
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "kernels/attrs/gather_attrs.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferGather(const InferContext& ctx) {
  const TensorMeta& params = ctx.inputs[0];
  const TensorMeta& indices = ctx.inputs[1];
  if (params.shape.Rank() == 0) throw OpError(ctx.op_type, "params must have at least one axis, got a scalar");
  if (indices.dtype != DType::kI32 && indices.dtype != DType::kI64) {
    throw OpError(ctx.op_type, "expects i32 or i64 indices, got {}", indices.dtype);
  }
  const int axis = ResolveAxis(ctx.op_type, "axis", ctx.Get<GatherAttrs>().axis, params.shape.Rank());
  if (params.shape[axis] == 0 && indices.shape.NumElements() > 0) {
    throw OpError(ctx.op_type, "params {} has no entries along axis {} to gather", params.shape, axis);
  }
  const std::vector<std::int64_t>& p = params.shape.Dims();
  std::vector<std::int64_t> dims(p.begin(), p.begin() + axis);
  dims.insert(dims.end(), indices.shape.Dims().begin(), indices.shape.Dims().end());
  dims.insert(dims.end(), p.begin() + axis + 1, p.end());
  return {{Shape(std::move(dims)), params.dtype}};
}

std::vector<Blob> GatherGradient(const GradContext& ctx) {
  const Blob& params = ctx.inputs[0];
  if (!ctx.needs_grad[0]) return {Blob(), Blob()};
  if (!IsNumber(params.GetDType())) {  // the segment sum that adds dy back takes numbers only
    throw OpError(ctx.op_type, "has no gradient for {} params (f32, f64, f16, bf16, i32 or i64 only)", params.GetDType());
  }
  const int axis = ResolveAxis(ctx.op_type, "axis", ctx.Get<GatherAttrs>().axis, params.GetShape().Rank());
  return {UnsortedSegmentSum(ctx.output_grads[0], ctx.inputs[1], params.GetShape()[axis], axis), Blob()};
}

// Whole params with the indices split: the output splits where the indices' axis lands. Params split
// along another axis than the gathered one, with whole indices: the output splits along that axis.
std::vector<SbpSignature> GatherSbp(const SbpContext& ctx) {
  const int rank = ctx.inputs[0].shape.Rank();
  const int index_rank = ctx.inputs[1].shape.Rank();
  const int axis = ResolveAxis(ctx.op_type, "axis", ctx.Get<GatherAttrs>().axis, rank);
  std::vector<SbpSignature> signatures;
  for (int k = 0; k < index_rank; ++k) signatures.push_back({{Sbp::B(), Sbp::S(k)}, {Sbp::S(axis + k)}});
  for (int d = 0; d < rank; ++d) {
    if (d == axis) continue;
    signatures.push_back({{Sbp::S(d), Sbp::B()}, {Sbp::S(d < axis ? d : d - 1 + index_rank)}});
  }
  return signatures;
}

WEIR_REGISTER_OP({.type = "gather",
                  .num_inputs = 2,
                  .input_names = {"params", "indices"},
                  .infer = InferGather,
                  .gradient = GatherGradient,
                  .sbp = GatherSbp,
                  .read_attrs = ReadAttrs<GatherAttrs>(Attr("axis", &GatherAttrs::axis))});

}  // namespace
}  // namespace internal

Blob Gather(const Blob& params, const Blob& indices, int axis, std::string_view name) {
  return internal::AddOp1("gather", {params, indices}, internal::GatherAttrs{axis}, name);
}

}  // namespace weir
