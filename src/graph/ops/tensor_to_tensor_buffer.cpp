// tensor_to_tensor_buffer: x (any number dtype, rank > instance_dims) -> a tensor_buffer of x's
// leading axes, each item the block of x's trailing `instance_dims` axes (1 to 3), of x's dtype
// (OneFlow's flow.tensor_to_tensor_buffer). Runs on the host, as every tensor_buffer op; splits along
// the batch.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/sbp.hpp"
#include "kernels/attrs/tensor_buffer_attrs.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferTensorToTensorBuffer(const InferContext& ctx) {
  const TensorMeta& x = ctx.inputs[0];
  const int instance_dims = ctx.Get<TensorToTensorBufferAttrs>().instance_dims;
  if (x.dtype == DType::kTensorBuffer) throw OpError(ctx.op_type, "x is already a tensor_buffer");
  if (instance_dims < 1 || instance_dims > 3) {
    throw OpError(ctx.op_type, "instance_dims must be 1 to 3 (a tensor_buffer item has at most 3 axes), got {}", instance_dims);
  }
  if (x.shape.Rank() <= instance_dims) {
    throw OpError(ctx.op_type, "x must have more than instance_dims = {} axes, got {}", instance_dims, x.shape);
  }
  const std::vector<std::int64_t>& dims = x.shape.Dims();
  return {{Shape(std::vector<std::int64_t>(dims.begin(), dims.end() - instance_dims)), DType::kTensorBuffer}};
}

WEIR_REGISTER_OP({.type = "tensor_to_tensor_buffer",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferTensorToTensorBuffer,
                  .sbp = BatchSplitSbp,
                  .read_attrs = ReadAttrs<TensorToTensorBufferAttrs>(Attr("instance_dims", &TensorToTensorBufferAttrs::instance_dims)),
                  .host_only = true});

}  // namespace
}  // namespace weir::internal
