// The scatter_nd family (OneFlow's flow.scatter_nd, tensor_scatter_nd_update, tensor_scatter_nd_add;
// TensorFlow's), gather_nd's adjoints: the last axis of indices holds tuples of K indices into the
// output's first K axes, and updates has one slice per tuple, indices.shape[:-1] + out.shape[K:]
// (kernels/attrs/nd_index_attrs.hpp).
// - scatter_nd(indices, updates; shape): zeros of `shape`, each update added into its slice (tuples
//   that repeat add up).
// - tensor_scatter_nd_add(params, indices, updates): params, each update added into its slice.
// - tensor_scatter_nd_update(params, indices, updates): params, each picked slice replaced by its
//   update (of tuples that repeat, one update wins, which one unspecified).
// An index outside its axis fails the call. The gradients: each update's is its slice of dy
// (gather_nd); params' is dy, with the replaced slices zeroed for _update.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "kernels/attrs/nd_index_attrs.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

// What the three share: indices into `out`, and updates shaped like the tuples' side.
void CheckScatter(std::string_view op_type, const Shape& out, const TensorMeta& indices, const TensorMeta& updates) {
  if (const std::string problem = NdIndicesProblem(out, indices); !problem.empty()) throw OpError(op_type, "{}", problem);
  const Shape expected = TupleSideShape(out, indices.shape);
  if (updates.shape != expected) {
    throw OpError(op_type, "updates must have the shape indices[:-1] + out[K:] = {} (indices {}, out {}), got {}", expected,
                  indices.shape, out, updates.shape);
  }
}

std::vector<TensorMeta> InferScatterNd(const InferContext& ctx) {
  const TensorMeta& indices = ctx.inputs[0];
  const TensorMeta& updates = ctx.inputs[1];
  const Shape& shape = ctx.Get<ScatterNdAttrs>().shape;
  if (!IsNumber(updates.dtype)) throw OpError(ctx.op_type, "expects f32, f64, f16, bf16, i32 or i64 updates, got {}", updates.dtype);
  CheckScatter(ctx.op_type, shape, indices, updates);
  return {{shape, updates.dtype}};
}

// Replacing moves bytes of any dtype; adding takes numbers.
template <bool kAdds> std::vector<TensorMeta> InferTensorScatterNd(const InferContext& ctx) {
  const TensorMeta& params = ctx.inputs[0];
  const TensorMeta& updates = ctx.inputs[2];
  if (kAdds && !IsNumber(params.dtype)) {
    throw OpError(ctx.op_type, "expects f32, f64, f16, bf16, i32 or i64 params, got {}", params.dtype);
  }
  if (updates.dtype != params.dtype) throw OpError(ctx.op_type, "updates dtype {} differs from params' {}", updates.dtype, params.dtype);
  CheckScatter(ctx.op_type, params.shape, ctx.inputs[1], updates);
  return {params};
}

std::vector<Blob> ScatterNdGradient(const GradContext& ctx) {
  if (!ctx.needs_grad[1]) return {Blob(), Blob()};
  return {Blob(), GatherNd(ctx.output_grads[0], ctx.inputs[0])};
}

template <bool kAdds> std::vector<Blob> TensorScatterNdGradient(const GradContext& ctx) {
  const Blob& dy = ctx.output_grads[0];
  const Blob& indices = ctx.inputs[1];
  Blob d_params, d_updates;
  if (ctx.needs_grad[0]) {
    d_params = kAdds ? dy
                     : TensorScatterNdUpdate(dy, indices, AddConstant(dy.Graph(), Tensor(Shape(ctx.inputs[2].GetShape()), dy.GetDType()), {}));
  }
  if (ctx.needs_grad[2]) d_updates = GatherNd(dy, indices);
  return {d_params, Blob(), d_updates};
}

// The sliced axes (K and later) split alike in the output and the updates, with whole indices. For
// scatter_nd, also tuples and updates split alike along a tuple axis: each device scatters its tuples,
// partial sums of the output; and updates as partial sums, which the sum is linear in.
std::vector<SbpSignature> ScatterNdSbp(const SbpContext& ctx) {
  const int index_rank = ctx.inputs[0].shape.Rank();
  const int rank = ctx.outputs[0].shape.Rank();
  const int depth = static_cast<int>(ctx.inputs[0].shape[index_rank - 1]);
  std::vector<SbpSignature> signatures;
  for (int a = 0; a + 1 < index_rank; ++a) signatures.push_back({{Sbp::S(a), Sbp::S(a)}, {Sbp::P()}});
  for (int d = depth; d < rank; ++d) signatures.push_back({{Sbp::B(), Sbp::S(index_rank - 1 + d - depth)}, {Sbp::S(d)}});
  signatures.push_back({{Sbp::B(), Sbp::P()}, {Sbp::P()}});
  return signatures;
}

std::vector<SbpSignature> TensorScatterNdSbp(const SbpContext& ctx) {
  const int index_rank = ctx.inputs[1].shape.Rank();
  const int rank = ctx.outputs[0].shape.Rank();
  const int depth = static_cast<int>(ctx.inputs[1].shape[index_rank - 1]);
  std::vector<SbpSignature> signatures;
  for (int d = depth; d < rank; ++d) {
    signatures.push_back({{Sbp::S(d), Sbp::B(), Sbp::S(index_rank - 1 + d - depth)}, {Sbp::S(d)}});
  }
  return signatures;
}

WEIR_REGISTER_OP({.type = "scatter_nd",
                  .num_inputs = 2,
                  .input_names = {"indices", "updates"},
                  .infer = InferScatterNd,
                  .gradient = ScatterNdGradient,
                  .sbp = ScatterNdSbp,
                  .read_attrs = ReadAttrs<ScatterNdAttrs>(Attr("shape", &ScatterNdAttrs::shape))});

WEIR_REGISTER_OP({.type = "tensor_scatter_nd_update",
                  .num_inputs = 3,
                  .input_names = {"params", "indices", "updates"},
                  .infer = InferTensorScatterNd<false>,
                  .gradient = TensorScatterNdGradient<false>,
                  .sbp = TensorScatterNdSbp});

WEIR_REGISTER_OP({.type = "tensor_scatter_nd_add",
                  .num_inputs = 3,
                  .input_names = {"params", "indices", "updates"},
                  .infer = InferTensorScatterNd<true>,
                  .gradient = TensorScatterNdGradient<true>,
                  .sbp = TensorScatterNdSbp});

}  // namespace
}  // namespace internal

Blob ScatterNd(const Blob& indices, const Blob& updates, Shape shape, std::string_view name) {
  return internal::AddOp1("scatter_nd", {indices, updates}, internal::ScatterNdAttrs{std::move(shape)}, name);
}

Blob TensorScatterNdUpdate(const Blob& params, const Blob& indices, const Blob& updates, std::string_view name) {
  return internal::AddOp1("tensor_scatter_nd_update", {params, indices, updates}, std::any(), name);
}

Blob TensorScatterNdAdd(const Blob& params, const Blob& indices, const Blob& updates, std::string_view name) {
  return internal::AddOp1("tensor_scatter_nd_add", {params, indices, updates}, std::any(), name);
}

}  // namespace weir
