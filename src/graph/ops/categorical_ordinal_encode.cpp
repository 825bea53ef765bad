// categorical_ordinal_encode (OneFlow's flow.layers.categorical_ordinal_encoder): each element of `in`
// (i32 or i64 keys, any shape) is replaced by its key's ordinal, 1, 2, ... in the order keys are first
// seen, kept across calls in two variables the op writes in place: `table` (2 x capacity entries, a
// hash table of (key, ordinal) pairs, ordinal 0 marking a free slot) and `size` (1), the ordinals given
// so far. A key beyond the table's capacity fails the call. No gradient (values chosen, not computed);
// whole tensors, once (every device's replica of the table would see the same keys anyway).
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferCategoricalOrdinalEncode(const InferContext& ctx) {
  const TensorMeta& table = ctx.inputs[0];
  const TensorMeta& size = ctx.inputs[1];
  const TensorMeta& in = ctx.inputs[2];
  if (in.dtype != DType::kI32 && in.dtype != DType::kI64) throw OpError(ctx.op_type, "expects i32 or i64 keys in `in`, got {}", in.dtype);
  if (table.dtype != in.dtype || size.dtype != in.dtype) {
    throw OpError(ctx.op_type, "table and size must have the keys' dtype {}, got {} and {}", in.dtype, table.dtype, size.dtype);
  }
  if (table.shape.Rank() != 1 || table.shape[0] == 0 || table.shape[0] % 2 != 0) {
    throw OpError(ctx.op_type, "table must be one-dimensional with 2 x capacity entries (capacity >= 1), got {}", table.shape);
  }
  if (size.shape != Shape{1}) throw OpError(ctx.op_type, "size must have shape (1), got {}", size.shape);
  return {in};
}

WEIR_REGISTER_OP({.type = "categorical_ordinal_encode",
                  .num_inputs = 3,
                  .input_names = {"table", "size", "in"},
                  .infer = InferCategoricalOrdinalEncode,
                  .mutates_inputs = {0, 1}});

}  // namespace
}  // namespace internal

Blob CategoricalOrdinalEncode(const Blob& table, const Blob& size, const Blob& in, std::string_view name) {
  return internal::AddOp("categorical_ordinal_encode", {table, size, in}, std::any{}, name)[0];
}

}  // namespace weir
