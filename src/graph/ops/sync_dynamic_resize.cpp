// sync_dynamic_resize: x (rank >= 1, any dtype) and size (k, 1 <= k <= x's rank; i32 or i64) -> x, of
// which only the leading size[0] x ... x size[k-1] block is meant (OneFlow's op of that name, with k = 1,
// which makes x's blob dynamic: argwhere's rows; k = rank for tensor_buffer_to_list_of_tensors' items).
// Weir's shapes are static, so the value keeps x's shape and is cut where it leaves the job: the
// Python front end returns x[:size[0], ..., :size[k-1]]. No op may read such a value (JobBuilder
// refuses it as an input: it would see what lies past the size). No gradient; whole tensors on one
// device.
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "weir/ops.hpp"

namespace weir::internal {
namespace {

std::vector<TensorMeta> InferSyncDynamicResize(const InferContext& ctx) {
  const TensorMeta& x = ctx.inputs[0];
  const TensorMeta& size = ctx.inputs[1];
  if (x.dtype == DType::kTensorBuffer || x.shape.Rank() < 1) {
    throw OpError(ctx.op_type, "x must be a tensor of at least one axis, got {}", x.ToString());
  }
  if ((size.dtype != DType::kI32 && size.dtype != DType::kI64) || size.shape.Rank() != 1 || size.shape[0] < 1 ||
      size.shape[0] > x.shape.Rank()) {
    throw OpError(ctx.op_type, "size must be an i32 or i64 tensor of shape (k), 1 <= k <= {} (x's axes), got {}",
                  x.shape.Rank(), size.ToString());
  }
  return {x};
}

std::vector<OpExample> SyncDynamicResizeExamples() {
  std::vector<OpExample> examples;
  for (DType x : kAllDTypes) examples.push_back({.inputs = {{Shape{10, 3}, x}, {Shape{1}, DType::kI32}}, .classes = 11});
  examples.push_back({.inputs = {{Shape{4}, DType::kF32}, {Shape{1}, DType::kI64}}, .classes = 5});
  return examples;
}

WEIR_REGISTER_OP({.type = "sync_dynamic_resize",
                  .num_inputs = 2,
                  .input_names = {"x", "size"},
                  .infer = InferSyncDynamicResize,
                  .examples = SyncDynamicResizeExamples});

}  // namespace
}  // namespace weir::internal
