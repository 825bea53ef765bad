// avg_pool2d: the mean of each 2-D window over the pixels of x it covers (padding excluded from the
// divisor, as in TensorFlow and OneFlow), NCHW or NHWC.
#include "graph/job_graph.hpp"
#include "graph/ops/pool_infer.hpp"
#include "kernels/attrs/pool_attrs.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferAvgPool2D(const InferContext& ctx) {
  return {InferPool2DOutput(ctx.op_type, ctx.inputs[0], ctx.Get<Pool2DAttrs>())};
}

std::vector<Blob> AvgPool2DGradient(const GradContext& ctx) {
  return {AddOp1("avg_pool2d_grad", {ctx.output_grads[0]},
                 Pool2DGradAttrs{ctx.Get<Pool2DAttrs>(), ctx.inputs[0].GetShape()}, {})};
}

WEIR_REGISTER_OP({.type = "avg_pool2d",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferAvgPool2D,
                  .gradient = AvgPool2DGradient,
                  .sbp = BatchSplitSbp,
                  .read_attrs = ReadPool2DAttrs()});

}  // namespace
}  // namespace internal

Blob AvgPool2D(const Blob& x, Pool2DAttrs attrs, std::string_view name) {
  return internal::AddOp1("avg_pool2d", {x}, attrs, name);
}

}  // namespace weir
