// gather_nd: slices of params that tuples of indices pick (OneFlow's flow.gather_nd; TensorFlow's):
// the last axis of indices holds K indices into params' first K axes, and the output is
// indices.shape[:-1] + params.shape[K:] (kernels/attrs/nd_index_attrs.hpp). An index outside its axis
// fails the call. Its gradient adds each dy slice into the slice it came from: scatter_nd(indices, dy,
// params.shape).
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "kernels/attrs/nd_index_attrs.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferGatherNd(const InferContext& ctx) {
  const TensorMeta& params = ctx.inputs[0];
  const TensorMeta& indices = ctx.inputs[1];
  if (const std::string problem = NdIndicesProblem(params.shape, indices); !problem.empty()) {
    throw OpError(ctx.op_type, "{}", problem);
  }
  const Shape out = TupleSideShape(params.shape, indices.shape);
  const NdIndexPlan plan = PlanNdIndexOf(params.shape, indices.shape);
  for (int k = 0; k < plan.depth; ++k) {
    if (plan.dims[k] == 0 && plan.tuples > 0) throw OpError(ctx.op_type, "params {} has no entries along axis {} to gather", params.shape, k);
  }
  return {{out, params.dtype}};
}

std::vector<Blob> GatherNdGradient(const GradContext& ctx) {
  const Blob& params = ctx.inputs[0];
  if (!ctx.needs_grad[0]) return {Blob(), Blob()};
  if (!IsNumber(params.GetDType())) {  // scatter_nd, which adds dy back, takes numbers only
    throw OpError(ctx.op_type, "has no gradient for {} params (f32, f64, f16, bf16, i32 or i64 only)", params.GetDType());
  }
  return {ScatterNd(ctx.inputs[1], ctx.output_grads[0], Shape(params.GetShape())), Blob()};
}

// Whole params with the tuples split (along any axis of indices but the last): the output splits
// alike. Params split along a sliced axis (K or later) with whole indices: the output splits there.
std::vector<SbpSignature> GatherNdSbp(const SbpContext& ctx) {
  const int rank = ctx.inputs[0].shape.Rank();
  const int index_rank = ctx.inputs[1].shape.Rank();
  const int depth = static_cast<int>(ctx.inputs[1].shape[index_rank - 1]);
  std::vector<SbpSignature> signatures;
  for (int a = 0; a + 1 < index_rank; ++a) signatures.push_back({{Sbp::B(), Sbp::S(a)}, {Sbp::S(a)}});
  for (int d = depth; d < rank; ++d) signatures.push_back({{Sbp::S(d), Sbp::B()}, {Sbp::S(index_rank - 1 + d - depth)}});
  return signatures;
}

WEIR_REGISTER_OP({.type = "gather_nd",
                  .num_inputs = 2,
                  .input_names = {"params", "indices"},
                  .infer = InferGatherNd,
                  .gradient = GatherNdGradient,
                  .sbp = GatherNdSbp});

}  // namespace
}  // namespace internal

Blob GatherNd(const Blob& params, const Blob& indices, std::string_view name) {
  return internal::AddOp1("gather_nd", {params, indices}, std::any(), name);
}

}  // namespace weir
