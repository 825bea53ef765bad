#pragma once
// Shape inference shared by the data pipeline's ops (readers, decoders, image ops).
#include <string_view>

#include "graph/op_registry.hpp"

namespace weir::internal {

/// Throws unless `input` is a batch of tensor_buffer items (records, images): shape (batch,).
inline void CheckTensorBufferBatch(const InferContext& ctx, const TensorMeta& input, std::string_view what) {
  if (input.dtype != DType::kTensorBuffer || input.shape.Rank() != 1) {
    throw OpError(ctx.op_type, "{} must be a batch of {} (a tensor_buffer of shape (batch,)), got {}", what,
                  what == "records" ? "records from flow.data.ofrecord_reader" : "images from an image decoder",
                  input.ToString());
  }
}

}  // namespace weir::internal
