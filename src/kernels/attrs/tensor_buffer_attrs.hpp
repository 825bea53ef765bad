#pragma once
// Typed attributes of the ops between tensors and tensor_buffers (graph/ops/tensor_to_tensor_buffer.cpp,
// tensor_buffer_to_tensor.cpp, gen_tensor_buffer.cpp, tensor_buffer_to_list_of_tensors.cpp), shared
// by their definitions and kernels.
#include <cstdint>
#include <vector>

#include "weir/dtype.hpp"
#include "weir/shape.hpp"

namespace weir::internal {

/// Each item is one of x's trailing `instance_dims` axes' blocks (1 to 3 axes: a tensor_buffer item
/// has at most 3).
struct TensorToTensorBufferAttrs {
  int instance_dims = 1;
};

/// Each item, of dtype `dtype` and shape `instance_shape`, becomes that block of the output.
struct TensorBufferToTensorAttrs {
  DType dtype = DType::kF32;
  Shape instance_shape;
};

/// A tensor_buffer of `shape` whose item i (row-major) has dims item_dims[offset_i .. offset_i +
/// item_ranks[i]) and every element values[i], of dtype `dtype`.
struct GenTensorBufferAttrs {
  Shape shape;
  std::vector<std::int64_t> item_dims;
  std::vector<std::int64_t> item_ranks;
  std::vector<double> values;
  DType dtype = DType::kF32;
};

/// Each item as an output of `out_shape` and `out_dtype`; with `dynamic_out` an item may be smaller
/// on any axis (it fills the output's leading corner, zeros elsewhere) and its shape is an output too.
struct TensorBufferToListOfTensorsAttrs {
  Shape out_shape;
  DType out_dtype = DType::kF32;
  bool dynamic_out = false;
};

}  // namespace weir::internal
