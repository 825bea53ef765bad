// reduce_max and reduce_min: the largest / smallest element over some axes (all when none are
// given), optionally keeping them as 1s. One file for the pair, which differ only in the comparison.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/reduce.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

// The elements equal to the result share dy evenly (OneFlow's rule); reduce_extremum_grad finds
// them by comparing x with y, so the same backward op serves max and min.
std::vector<Blob> ReduceExtremumGradient(const GradContext& ctx) {
  return {AddOp1("reduce_extremum_grad", {ctx.inputs[0], ctx.outputs[0], ctx.output_grads[0]}, ctx.Get<ReduceAttrs>(),
                 {})};
}

WEIR_REGISTER_OP({.type = "reduce_max",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferNumberReduction,
                  .gradient = ReduceExtremumGradient,
                  .read_attrs = ReadReduceAttrs()});
WEIR_REGISTER_OP({.type = "reduce_min",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferNumberReduction,
                  .gradient = ReduceExtremumGradient,
                  .read_attrs = ReadReduceAttrs()});

}  // namespace
}  // namespace internal

Blob ReduceMax(const Blob& x, ReduceAttrs attrs, std::string_view name) {
  return internal::AddOp1("reduce_max", {x}, std::move(attrs), name);
}

Blob ReduceMin(const Blob& x, ReduceAttrs attrs, std::string_view name) {
  return internal::AddOp1("reduce_min", {x}, std::move(attrs), name);
}

}  // namespace weir
