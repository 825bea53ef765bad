// compare: equal, not_equal, greater, greater_equal, less, less_equal (weir/op_kinds.hpp), one op
// whose attrs name the comparison: a (kind) b with numpy broadcasting, as int8 1 or 0 (OneFlow 0.3's
// broadcast_equal and its siblings). A comparison has no gradient.
#include "graph/attrs_by_name.hpp"
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {

template <> struct EnumNames<CompareOpKind> {
  static constexpr const auto& kNames = kCompareOpKindNames;
};

namespace {

std::vector<TensorMeta> InferCompare(const InferContext& ctx) {
  const TensorMeta& a = ctx.inputs[0];
  const TensorMeta& b = ctx.inputs[1];
  const auto kind = static_cast<std::size_t>(ctx.Get<CompareAttrs>().kind);
  if (kind >= std::size(kCompareOpKindNames)) throw OpError(ctx.op_type, "unknown kind {}", kind);
  if (a.dtype != b.dtype) throw OpError(ctx.op_type, "dtypes differ: {} vs {}", a.dtype, b.dtype);
  if (a.dtype == DType::kBool) throw OpError(ctx.op_type, "expects f32, f64, i32, i64, u8 or i8 inputs, got bool");
  return {{BroadcastShapes(ctx.op_type, a.shape, b.shape), DType::kI8}};
}

WEIR_REGISTER_OP({.type = "compare",
                  .num_inputs = 2,
                  .input_names = {"a", "b"},
                  .infer = InferCompare,
                  .sbp = ElementwiseRule(),
                  .read_attrs = ReadAttrs<CompareAttrs>(Attr("kind", &CompareAttrs::kind))});

}  // namespace
}  // namespace internal

Blob Compare(const Blob& a, const Blob& b, CompareAttrs attrs, std::string_view name) {
  return internal::AddOp1("compare", {a, b}, attrs, name);
}

}  // namespace weir
