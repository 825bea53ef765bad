// tensor_buffer_to_list_of_tensors: a tensor_buffer x of n items -> n tensors of out_shape and
// out_dtype, one per item in row-major order; with dynamic_out, n more of shape (rank) i64, each item's
// shape (OneFlow's flow.tensor_buffer_to_list_of_tensors). An item must be of out_dtype and rank; with
// dynamic_out it may be smaller than out_shape on any axis (it fills the output's leading corner, zeros
// elsewhere; the Python wrapper returns dynamic blobs cut to the item's shape), without it must be
// out_shape. Runs on the host.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "kernels/attrs/tensor_buffer_attrs.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferTensorBufferToListOfTensors(const InferContext& ctx) {
  const TensorMeta& x = ctx.inputs[0];
  const auto& attrs = ctx.Get<TensorBufferToListOfTensorsAttrs>();
  if (x.dtype != DType::kTensorBuffer || x.shape.Rank() < 1 || x.shape.NumElements() < 1) {
    throw OpError(ctx.op_type, "x must be a tensor_buffer of at least one item, got {}", x.ToString());
  }
  if (attrs.out_dtype == DType::kTensorBuffer) throw OpError(ctx.op_type, "out_dtype must be a number dtype, got tensor_buffer");
  const int rank = attrs.out_shape.Rank();
  if (rank < 1 || rank > 3) throw OpError(ctx.op_type, "out_shape must have 1 to 3 axes (a tensor_buffer item's), got {}", attrs.out_shape);
  const std::int64_t items = x.shape.NumElements();
  std::vector<TensorMeta> outputs(static_cast<std::size_t>(items), {attrs.out_shape, attrs.out_dtype});
  if (attrs.dynamic_out) outputs.resize(static_cast<std::size_t>(2 * items), {Shape{rank}, DType::kI64});
  return outputs;
}

WEIR_REGISTER_OP({.type = "tensor_buffer_to_list_of_tensors",
                  .num_inputs = 1,
                  .input_names = {"x"},
                  .infer = InferTensorBufferToListOfTensors,
                  .read_attrs = ReadAttrs<TensorBufferToListOfTensorsAttrs>(
                      Attr("out_shape", &TensorBufferToListOfTensorsAttrs::out_shape),
                      Attr("out_dtype", &TensorBufferToListOfTensorsAttrs::out_dtype),
                      Attr("dynamic_out", &TensorBufferToListOfTensorsAttrs::dynamic_out)),
                  .host_only = true});

}  // namespace
}  // namespace weir::internal
