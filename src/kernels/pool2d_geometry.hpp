#pragma once
// A pooling op's geometry (kernels/functors/pool2d.hpp) from its attributes and shapes, for the CPU and
// CUDA kernels.
#include <algorithm>
#include <cstdint>
#include <tuple>
#include <utility>

#include "kernels/functors/pool2d.hpp"
#include "weir/op_attrs.hpp"
#include "weir/shape.hpp"

namespace weir::internal {

/// The geometry of pooling x into y (shapes already checked by the op's inference).
inline Pool2DGeometry MakePool2DGeometry(const Pool2DAttrs& attrs, const Shape& x, const Shape& y) {
  Pool2DGeometry g;
  g.nchw = attrs.data_format == DataFormat::kNCHW;
  g.n = x[0];
  g.c = g.nchw ? x[1] : x[3];
  g.in_h = g.nchw ? x[2] : x[1];
  g.in_w = g.nchw ? x[3] : x[2];
  g.out_h = g.nchw ? y[2] : y[1];
  g.out_w = g.nchw ? y[3] : y[2];
  g.k_h = attrs.ksize[0];
  g.k_w = attrs.ksize[1];
  g.s_h = attrs.strides[0];
  g.s_w = attrs.strides[1];
  const auto pads = [&](int axis, std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t s) {
    const std::int64_t reach = (out - 1) * s + k - in;  // padding the last window needs
    std::int64_t before = 0, after = 0;
    if (attrs.padding.kind == PaddingKind::kSame) before = std::max<std::int64_t>(reach, 0) / 2;  // odd pixel at the end
    if (attrs.padding.kind == PaddingKind::kExplicit) {
      before = attrs.padding.pads[static_cast<std::size_t>(2 * axis)];
      after = attrs.padding.pads[static_cast<std::size_t>(2 * axis + 1)];
    }
    return std::pair{before, std::max(after, reach - before)};
  };
  std::tie(g.pad_top, g.pad_bottom) = pads(0, g.in_h, g.out_h, g.k_h, g.s_h);
  std::tie(g.pad_left, g.pad_right) = pads(1, g.in_w, g.out_w, g.k_w, g.s_w);
  return g;
}

}  // namespace weir::internal
