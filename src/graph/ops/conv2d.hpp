#pragma once
// Shape and dtype checks shared by conv2d and its two backward ops: each checks that its operands
// are those of one valid forward convolution.
#include <string_view>

#include "common/tensor_meta.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/window.hpp"
#include "weir/ops.hpp"

namespace weir::internal {

/// The output meta of conv2d(x, weight, attrs), or OpError naming `op_type` and showing the shapes.
inline TensorMeta InferConv2DOutput(std::string_view op_type, const TensorMeta& x, const TensorMeta& weight,
                                    const Conv2DAttrs& attrs) {
  const bool nchw = attrs.data_format == DataFormat::kNCHW;
  const char* layout = nchw ? "NCHW" : "NHWC";
  if (x.shape.Rank() != 4) {
    throw OpError(op_type, "expects a 4-D x ({}), got {}", nchw ? "N,C,H,W" : "N,H,W,C", x.shape);
  }
  if (weight.shape.Rank() != 4) {
    throw OpError(op_type, "expects a 4-D weight ({}), got {}", nchw ? "out,C/groups,kh,kw" : "out,kh,kw,C/groups",
                  weight.shape);
  }
  if (x.dtype != weight.dtype) throw OpError(op_type, "dtypes differ: x {} vs weight {}", x.dtype, weight.dtype);
  if (!IsFloating(x.dtype)) throw OpError(op_type, "expects floating inputs, got {}", x.dtype);
  const std::int64_t groups = attrs.groups;
  if (groups <= 0) throw OpError(op_type, "groups must be positive, got {}", groups);
  const std::int64_t channels = nchw ? x.shape[1] : x.shape[3];
  const std::int64_t in_h = nchw ? x.shape[2] : x.shape[1];
  const std::int64_t in_w = nchw ? x.shape[3] : x.shape[2];
  const std::int64_t filters = weight.shape[0];
  const std::int64_t weight_channels = nchw ? weight.shape[1] : weight.shape[3];
  const std::int64_t kernel_h = nchw ? weight.shape[2] : weight.shape[1];
  const std::int64_t kernel_w = nchw ? weight.shape[3] : weight.shape[2];
  if (channels <= 0) throw OpError(op_type, "x {} ({}) has no channels", x.shape, layout);
  if (filters <= 0) throw OpError(op_type, "weight {} has no output channels", weight.shape);
  if (channels % groups != 0) {
    throw OpError(op_type, "x {} ({}) has {} channels, not divisible by groups {}", x.shape, layout, channels, groups);
  }
  if (filters % groups != 0) {
    throw OpError(op_type, "weight {} has {} output channels, not divisible by groups {}", weight.shape, filters,
                  groups);
  }
  if (weight_channels != channels / groups) {
    throw OpError(op_type, "weight {} has {} input channels, expected {} for x {} ({}) with groups {}", weight.shape,
                  weight_channels, channels / groups, x.shape, layout, groups);
  }
  WindowAxis height, width;
  try {
    height = ComputeWindowAxis(op_type, 0, in_h, kernel_h, attrs.strides[0], attrs.dilations[0], attrs.padding);
    width = ComputeWindowAxis(op_type, 1, in_w, kernel_w, attrs.strides[1], attrs.dilations[1], attrs.padding);
  } catch (const std::invalid_argument& error) {
    throw std::invalid_argument(fmt::format("{} (x {}, weight {}, {})", error.what(), x.shape, weight.shape, layout));
  }
  const Shape out = nchw ? Shape{x.shape[0], filters, height.out, width.out}
                         : Shape{x.shape[0], height.out, width.out, filters};
  return {out, x.dtype};
}

}  // namespace weir::internal
