// max_pool2d: the largest element of each 2-D window, NCHW or NHWC; padded positions never win.
#include "graph/job_graph.hpp"
#include "graph/ops/pool_infer.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferMaxPool2D(const InferContext& ctx) {
  return {InferPool2DOutput(ctx.op_type, ctx.inputs[0], ctx.Get<Pool2DAttrs>())};
}

// The gradient recomputes where each window's maximum is from x rather than storing it: the
// backward kernel has x at hand, and the forward pass stays a plain inference-speed pooling.
std::vector<Blob> MaxPool2DGradient(const GradContext& ctx) {
  return {AddOp1("max_pool2d_grad", {ctx.output_grads[0], ctx.inputs[0]}, ctx.Get<Pool2DAttrs>(), {})};
}

WEIR_REGISTER_OP({.type = "max_pool2d",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferMaxPool2D,
                  .gradient = MaxPool2DGradient,
                  .sbp = BatchSplitSbp,
                  .read_attrs = ReadPool2DAttrs()});

}  // namespace
}  // namespace internal

Blob MaxPool2D(const Blob& x, Pool2DAttrs attrs, std::string_view name) {
  return internal::AddOp1("max_pool2d", {x}, attrs, name);
}

}  // namespace weir
