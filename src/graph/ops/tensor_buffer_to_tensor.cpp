// tensor_buffer_to_tensor: a tensor_buffer x -> x.shape + instance_shape of dtype `dtype`, each item
// (which must be of that dtype and hold instance_shape's element count) that block of the output
// (OneFlow's flow.tensor_buffer_to_tensor). Runs on the host; splits along the batch.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/sbp.hpp"
#include "kernels/attrs/tensor_buffer_attrs.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferTensorBufferToTensor(const InferContext& ctx) {
  const TensorMeta& x = ctx.inputs[0];
  const auto& attrs = ctx.Get<TensorBufferToTensorAttrs>();
  if (x.dtype != DType::kTensorBuffer || x.shape.Rank() < 1) {
    throw OpError(ctx.op_type, "x must be a tensor_buffer of at least one axis, got {}", x.ToString());
  }
  if (attrs.dtype == DType::kTensorBuffer) throw OpError(ctx.op_type, "dtype must be a number dtype, got tensor_buffer");
  if (attrs.instance_shape.Rank() < 1 || attrs.instance_shape.Rank() > 3) {
    throw OpError(ctx.op_type, "instance_shape must have 1 to 3 axes (a tensor_buffer item's), got {}", attrs.instance_shape);
  }
  std::vector<std::int64_t> dims = x.shape.Dims();
  for (std::int64_t dim : attrs.instance_shape.Dims()) {
    if (dim < 0) throw OpError(ctx.op_type, "instance_shape must not have negative dims, got {}", attrs.instance_shape);
    dims.push_back(dim);
  }
  return {{Shape(std::move(dims)), attrs.dtype}};
}

WEIR_REGISTER_OP({.type = "tensor_buffer_to_tensor",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferTensorBufferToTensor,
                  .sbp = BatchSplitSbp,
                  .read_attrs = ReadAttrs<TensorBufferToTensorAttrs>(Attr("dtype", &TensorBufferToTensorAttrs::dtype),
                                                                     Attr("instance_shape", &TensorBufferToTensorAttrs::instance_shape)),
                  .host_only = true});

}  // namespace
}  // namespace weir::internal
