// reduce_prod: the product of the elements over some axes (all when none are given), optionally keeping
// them as 1s (OneFlow's flow.math.reduce_prod); an empty product is 1. Its kernels are reduce_max's
// walk with ProdOp (kernels/functors/reduce.hpp). The gradient is dy times the product of the other
// elements, computed without dividing by zero: with no zero in the reduced elements it is y / x; with
// one zero, that element gets the product of the rest and the others 0; with more, every element 0.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/reduce.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<Blob> ReduceProdGradient(const GradContext& ctx) {
  const Blob& x = ctx.inputs[0];
  if (!ctx.needs_grad[0]) return {Blob()};
  if (!IsFloating(x.GetDType())) throw OpError(ctx.op_type, "has no gradient for {} x (floating only)", x.GetDType());
  const DType dtype = x.GetDType();
  ReduceAttrs kept = ctx.Get<ReduceAttrs>();
  kept.keep_dims = true;
  const Blob zero = AddConstant(x.Graph(), Tensor(Shape{}, dtype), {});
  const Blob one = AddConstant(x.Graph(), dtype == DType::kF32 ? Tensor::Scalar<float>(1) : Tensor::Scalar<double>(1), {});
  const Blob is_zero = Compare(x, zero, {CompareOpKind::kEqual});
  const Blob nonzero = Where(is_zero, one, x);
  const Blob product = ReduceProd(nonzero, kept);  // of the nonzero elements
  const Blob zeros = ReduceSum(Cast(is_zero, {dtype}), kept);
  const Blob others = Where(Compare(zeros, zero, {CompareOpKind::kEqual}), Div(product, nonzero),
                            Where(is_zero, Where(Compare(zeros, one, {CompareOpKind::kEqual}), product, zero), zero));
  return {Mul(ReduceGradient(ctx.output_grads[0], Shape(x.GetShape()), ctx.Get<ReduceAttrs>(), 1.0), others)};
}

WEIR_REGISTER_OP({.type = "reduce_prod",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferNumberReduction,
                  .gradient = ReduceProdGradient,
                  .read_attrs = ReadReduceAttrs()});

}  // namespace
}  // namespace internal

Blob ReduceProd(const Blob& x, ReduceAttrs attrs, std::string_view name) {
  return internal::AddOp1("reduce_prod", {x}, std::move(attrs), name);
}

}  // namespace weir
