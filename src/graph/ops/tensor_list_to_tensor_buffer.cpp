// tensor_list_to_tensor_buffer: the tensors of a tensor list (one input each, of one dtype, each of 2 to
// 4 axes: rows, then up to 3 axes of an item) -> a tensor_buffer of every row of every tensor in order,
// each item a row's block (OneFlow's flow.tensor_list_to_tensor_buffer, whose tensor lists hold
// images as (1, height, width, channels) tensors). Runs on the host.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferTensorListToTensorBuffer(const InferContext& ctx) {
  if (ctx.inputs.empty()) throw OpError(ctx.op_type, "needs at least one tensor");
  std::int64_t rows = 0;
  for (std::size_t i = 0; i < ctx.inputs.size(); ++i) {
    const TensorMeta& tensor = ctx.inputs[i];
    if (tensor.dtype == DType::kTensorBuffer || tensor.dtype != ctx.inputs[0].dtype || tensor.shape.Rank() < 2 ||
        tensor.shape.Rank() > 4) {
      throw OpError(ctx.op_type, "tensor {} must be of the first's dtype {} with 2 to 4 axes (rows, then an item's), got {}",
                    i, ctx.inputs[0].dtype, tensor.ToString());
    }
    rows += tensor.shape[0];
  }
  return {{Shape{rows}, DType::kTensorBuffer}};
}

WEIR_REGISTER_OP({.type = "tensor_list_to_tensor_buffer",
                  .num_inputs = -1,
                  .input_names = {"tensors"},
                  .infer = InferTensorListToTensorBuffer,
                  .host_only = true});

}  // namespace
}  // namespace weir::internal
