#pragma once
// Shape and dtype checks shared by the pooling ops and their backward ops: each checks that its
// operands are those of one valid forward pooling.
#include <algorithm>
#include <string_view>

#include "common/tensor_meta.hpp"
#include "graph/op_registry.hpp"
#include "graph/ops/window.hpp"
#include "weir/ops.hpp"

namespace weir::internal {

/// The attributes of both poolings by name.
inline AttrsReader ReadPool2DAttrs() {
  return ReadAttrs<Pool2DAttrs>(Attr("ksize", &Pool2DAttrs::ksize), Attr("strides", &Pool2DAttrs::strides),
                                Attr("padding", &Pool2DAttrs::padding), Attr("data_format", &Pool2DAttrs::data_format),
                                Attr("ceil_mode", &Pool2DAttrs::ceil_mode));
}

/// One spatial axis of a pooling window, ceil_mode applied: the output grows by one where the
/// last, partial window still starts inside x or its leading padding (PyTorch's rule).
inline WindowAxis ComputePoolAxis(std::string_view op_type, int axis, std::int64_t in, const Pool2DAttrs& attrs) {
  const std::size_t a = static_cast<std::size_t>(axis);
  WindowAxis window = ComputeWindowAxis(op_type, axis, in, attrs.ksize[a], attrs.strides[a], 1, attrs.padding);
  const char* name = axis == 0 ? "height" : "width";
  if (window.pad_before >= attrs.ksize[a] || window.pad_after >= attrs.ksize[a]) {
    // A window made of padding only would have no maximum and nothing to average.
    throw OpError(op_type, "padding along the {} ({}, {}) must be smaller than the window {}", name, window.pad_before,
                  window.pad_after, attrs.ksize[a]);
  }
  if (attrs.ceil_mode && attrs.padding.kind != PaddingKind::kSame) {
    const std::int64_t stride = attrs.strides[a];
    const std::int64_t span = in + window.pad_before + window.pad_after - attrs.ksize[a];
    std::int64_t out = (span + stride - 1) / stride + 1;
    if ((out - 1) * stride >= in + window.pad_before) --out;
    window.out = std::max(window.out, out);
  }
  return window;
}

/// The output meta of a 2-D pooling of x, or OpError naming `op_type` and showing the shapes.
inline TensorMeta InferPool2DOutput(std::string_view op_type, const TensorMeta& x, const Pool2DAttrs& attrs) {
  const bool nchw = attrs.data_format == DataFormat::kNCHW;
  if (x.shape.Rank() != 4) throw OpError(op_type, "expects a 4-D x ({}), got {}", nchw ? "N,C,H,W" : "N,H,W,C", x.shape);
  if (!IsFloating(x.dtype)) throw OpError(op_type, "expects a floating x, got {}", x.dtype);
  const std::int64_t in_h = nchw ? x.shape[2] : x.shape[1];
  const std::int64_t in_w = nchw ? x.shape[3] : x.shape[2];
  WindowAxis height, width;
  try {
    height = ComputePoolAxis(op_type, 0, in_h, attrs);
    width = ComputePoolAxis(op_type, 1, in_w, attrs);
  } catch (const std::invalid_argument& error) {
    throw std::invalid_argument(fmt::format("{} (x {}, {}, ksize ({},{}), strides ({},{}))", error.what(), x.shape,
                                            nchw ? "NCHW" : "NHWC", attrs.ksize[0], attrs.ksize[1], attrs.strides[0],
                                            attrs.strides[1]));
  }
  const Shape out = nchw ? Shape{x.shape[0], x.shape[1], height.out, width.out}
                         : Shape{x.shape[0], height.out, width.out, x.shape[3]};
  return {out, x.dtype};
}

}  // namespace weir::internal
