// gen_tensor_buffer: no inputs -> a tensor_buffer of `shape` whose item i (row-major) has its own
// shape (1 to 3 axes) and every element values[i], of dtype `dtype` (OneFlow's flow.gen_tensor_buffer,
// whose shape_list the Python wrapper flattens into item_dims and item_ranks). Runs on the host.
#include <limits>
#include <numeric>

#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "kernels/attrs/tensor_buffer_attrs.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferGenTensorBuffer(const InferContext& ctx) {
  const auto& attrs = ctx.Get<GenTensorBufferAttrs>();
  const std::int64_t items = attrs.shape.NumElements();
  if (attrs.shape.Rank() < 1) throw OpError(ctx.op_type, "shape must have at least one axis, got {}", attrs.shape);
  if (static_cast<std::int64_t>(attrs.item_ranks.size()) != items || static_cast<std::int64_t>(attrs.values.size()) != items) {
    throw OpError(ctx.op_type, "shape {} holds {} items, but got {} item shapes and {} values", attrs.shape, items,
                  attrs.item_ranks.size(), attrs.values.size());
  }
  for (std::int64_t rank : attrs.item_ranks) {
    if (rank < 1 || rank > 3) throw OpError(ctx.op_type, "each item shape must have 1 to 3 axes, got one of {}", rank);
  }
  const std::int64_t dims = std::accumulate(attrs.item_ranks.begin(), attrs.item_ranks.end(), std::int64_t{0});
  if (dims != static_cast<std::int64_t>(attrs.item_dims.size())) {
    throw OpError(ctx.op_type, "the item shapes' ranks add up to {} dims, but item_dims holds {}", dims, attrs.item_dims.size());
  }
  for (std::int64_t dim : attrs.item_dims) {
    if (dim < 0 || dim > std::numeric_limits<std::int32_t>::max()) {
      throw OpError(ctx.op_type, "item dims must be in [0, 2^31), got {}", dim);
    }
  }
  if (attrs.dtype == DType::kTensorBuffer) throw OpError(ctx.op_type, "data_type must be a number dtype, got tensor_buffer");
  return {{attrs.shape, DType::kTensorBuffer}};
}

WEIR_REGISTER_OP({.type = "gen_tensor_buffer",
                  .num_inputs = 0,
                  .infer = InferGenTensorBuffer,
                  .read_attrs = ReadAttrs<GenTensorBufferAttrs>(
                      Attr("shape", &GenTensorBufferAttrs::shape), Attr("item_dims", &GenTensorBufferAttrs::item_dims),
                      Attr("item_ranks", &GenTensorBufferAttrs::item_ranks), Attr("values", &GenTensorBufferAttrs::values),
                      Attr("dtype", &GenTensorBufferAttrs::dtype)),
                  .host_only = true});

}  // namespace
}  // namespace weir::internal
