// argsort: the indices (i32, as OneFlow's arg_sort) that sort each row of the last axis, ascending or
// descending (kernels/functors/sort.hpp: NaN counts as the largest, ties keep index order). Python's
// flow.argsort moves another axis last around it; flow.sort and flow.math.top_k are built on it. No
// gradient (indices); sort's flows through the gather of the values.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "kernels/functors/sort.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferArgSort(const InferContext& ctx) {
  const TensorMeta& x = ctx.inputs[0];
  if (!IsNumber(x.dtype)) {
    throw OpError(ctx.op_type, "expects an f32, f64, f16, bf16, i32 or i64 input, got {}", x.dtype);
  }
  if (x.shape.Rank() == 0) throw OpError(ctx.op_type, "x must have at least one axis, got a scalar");
  if (x.shape[x.shape.Rank() - 1] > std::int64_t{1} << 31) {
    throw OpError(ctx.op_type, "rows of at most 2^31 elements are sorted (i32 indices), got {}", x.shape);
  }
  return {{x.shape, DType::kI32}};
}

// Rows are independent: split along any axis but the last.
std::vector<SbpSignature> ArgSortSbp(const SbpContext& ctx) {
  std::vector<SbpSignature> signatures;
  for (int d = 0; d + 1 < ctx.inputs[0].shape.Rank(); ++d) signatures.push_back({{Sbp::S(d)}, {Sbp::S(d)}});
  return signatures;
}

WEIR_REGISTER_OP({.type = "argsort",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferArgSort,
                  .sbp = ArgSortSbp,
                  .read_attrs = ReadAttrs<ArgSortAttrs>(Attr("descending", &ArgSortAttrs::descending))});

}  // namespace
}  // namespace internal

Blob ArgSort(const Blob& x, bool descending, std::string_view name) {
  return internal::AddOp1("argsort", {x}, internal::ArgSortAttrs{descending}, name);
}

}  // namespace weir
