// cumsum: x (f32, f64, i32, i64) -> its running sums along `axis` (OneFlow's and TensorFlow's
// flow.math.cumsum: `exclusive` leaves each element out of its own sum, `reverse` sums from the end).
// The gradient is the running sum of dy the other way, as exclusive. Lines along the axis are
// independent: any other axis splits.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/sbp.hpp"
#include "kernels/attrs/cumsum_attrs.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferCumsum(const InferContext& ctx) {
  const TensorMeta& x = ctx.inputs[0];
  if (x.dtype != DType::kF32 && x.dtype != DType::kF64 && x.dtype != DType::kI32 && x.dtype != DType::kI64) {
    throw OpError(ctx.op_type, "expects an f32, f64, i32 or i64 x, got {}", x.dtype);
  }
  ResolveAxis(ctx.op_type, "axis", ctx.Get<CumsumAttrs>().axis, x.shape.Rank());
  return {x};
}

std::vector<Blob> CumsumGradient(const GradContext& ctx) {
  CumsumAttrs back = ctx.Get<CumsumAttrs>();
  back.reverse = !back.reverse;
  return {AddOp1("cumsum", {ctx.output_grads[0]}, back, "")};
}

std::vector<SbpSignature> CumsumSbp(const SbpContext& ctx) {
  return ElementwiseSbpExcept(ctx, {ResolveAxis(ctx.op_type, "axis", ctx.Get<CumsumAttrs>().axis, ctx.inputs[0].shape.Rank())});
}

// Every flag pair along the first, a middle and the last axis; small f64 ones for finite differences.
std::vector<OpExample> CumsumExamples() {
  std::vector<OpExample> examples;
  for (int axis : {0, 1, -1}) {
    for (bool exclusive : {false, true}) {
      for (bool reverse : {false, true}) {
        const CumsumAttrs attrs{axis, exclusive, reverse};
        examples.push_back({.attrs = attrs, .inputs = {{Shape{3, 4, 5}, DType::kF64}}});
        examples.push_back({.attrs = attrs, .inputs = {{Shape{6, 40, 3}, DType::kF32}}});
      }
    }
  }
  for (DType dtype : {DType::kI32, DType::kI64}) examples.push_back({.attrs = CumsumAttrs{1, true, false}, .inputs = {{Shape{4, 7}, dtype}}});
  examples.push_back({.attrs = CumsumAttrs{0, false, false}, .inputs = {{Shape{0, 3}, DType::kF32}}});
  return examples;
}

WEIR_REGISTER_OP({.type = "cumsum",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferCumsum,
                  .gradient = CumsumGradient,
                  .sbp = CumsumSbp,
                  .read_attrs = ReadAttrs<CumsumAttrs>(Attr("axis", &CumsumAttrs::axis), Attr("exclusive", &CumsumAttrs::exclusive),
                                                       Attr("reverse", &CumsumAttrs::reverse)),
                  .examples = CumsumExamples});

}  // namespace
}  // namespace internal

Blob Cumsum(const Blob& x, int axis, bool exclusive, bool reverse, std::string_view name) {
  return internal::AddOp1("cumsum", {x}, internal::CumsumAttrs{axis, exclusive, reverse}, name);
}

}  // namespace weir
