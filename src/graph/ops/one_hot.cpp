// one_hot: integer indices (...) -> (..., depth) with on_value at each index and off_value
// elsewhere (OneFlow's one_hot, whose class axis is always the last). No gradient.
#include <cmath>

#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferOneHot(const InferContext& ctx) {
  const TensorMeta& indices = ctx.inputs[0];
  const auto& attrs = ctx.Get<OneHotAttrs>();
  if (indices.dtype != DType::kI32 && indices.dtype != DType::kI64) {
    throw OpError(ctx.op_type, "expects i32 or i64 indices, got {}", indices.dtype);
  }
  if (attrs.depth < 0) throw OpError(ctx.op_type, "depth must be >= 0, got {}", attrs.depth);
  if (attrs.dtype != DType::kF32 && attrs.dtype != DType::kF64 && attrs.dtype != DType::kI32 &&
      attrs.dtype != DType::kI64) {
    throw OpError(ctx.op_type, "dtype must be f32, f64, i32 or i64, got {}", attrs.dtype);
  }
  if (!IsFloating(attrs.dtype)) {
    // The values must convert exactly: whole numbers within the integer type's range.
    const double limit = attrs.dtype == DType::kI32 ? 2147483648.0 : 9223372036854775808.0;
    const auto fits = [limit](double v) { return v == std::trunc(v) && v >= -limit && v < limit; };
    if (!fits(attrs.on_value) || !fits(attrs.off_value)) {
      throw OpError(ctx.op_type, "an {} one-hot needs whole on/off values in range, got on_value {} and off_value {}",
                    attrs.dtype, attrs.on_value, attrs.off_value);
    }
  }
  std::vector<std::int64_t> dims = indices.shape.Dims();
  dims.push_back(attrs.depth);
  return {{Shape(std::move(dims)), attrs.dtype}};
}

WEIR_REGISTER_OP({.type = "one_hot", .num_inputs = 1, .input_names = {"indices"}, .infer = InferOneHot,
                  .sbp = BatchSplitSbp,
                  .read_attrs = ReadAttrs<OneHotAttrs>(Attr("depth", &OneHotAttrs::depth), Attr("on_value", &OneHotAttrs::on_value),
                                                      Attr("off_value", &OneHotAttrs::off_value),
                                                      Attr("dtype", &OneHotAttrs::dtype))});

}  // namespace
}  // namespace internal

Blob OneHot(const Blob& indices, OneHotAttrs attrs, std::string_view name) {
  return internal::AddOp1("one_hot", {indices}, attrs, name);
}

}  // namespace weir
