#pragma once
// The geometry of a 2-D pooling and its window arithmetic, for the CPU reference kernels and the CUDA
// kernels' device code alike.
#include <cstdint>

#include "kernels/functors/host_device.hpp"

namespace weir::internal {

/// A 2-D pooling of x (N,C,H,W or N,H,W,C) into y. The pads are the effective ones: y's size is
/// exactly (in + before + after − k) / stride + 1, as oneDNN requires (ceil_mode widens `after`).
struct Pool2DGeometry {
  std::int64_t n = 0, c = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  std::int64_t k_h = 1, k_w = 1, s_h = 1, s_w = 1;
  std::int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool nchw = true;

  WEIR_HOST_DEVICE std::int64_t XIndex(std::int64_t b, std::int64_t ch, std::int64_t h, std::int64_t w) const {
    return nchw ? ((b * c + ch) * in_h + h) * in_w + w : ((b * in_h + h) * in_w + w) * c + ch;
  }
  WEIR_HOST_DEVICE std::int64_t YIndex(std::int64_t b, std::int64_t ch, std::int64_t h, std::int64_t w) const {
    return nchw ? ((b * c + ch) * out_h + h) * out_w + w : ((b * out_h + h) * out_w + w) * c + ch;
  }
  WEIR_HOST_DEVICE bool Empty() const { return n == 0 || c == 0; }
  /// The window of output row oh (or column ow) clipped to x: [begin, end).
  WEIR_HOST_DEVICE void RowWindow(std::int64_t oh, std::int64_t& begin, std::int64_t& end) const {
    const std::int64_t h0 = oh * s_h - pad_top;
    begin = h0 > 0 ? h0 : 0;
    end = h0 + k_h < in_h ? h0 + k_h : in_h;
  }
  WEIR_HOST_DEVICE void ColumnWindow(std::int64_t ow, std::int64_t& begin, std::int64_t& end) const {
    const std::int64_t w0 = ow * s_w - pad_left;
    begin = w0 > 0 ? w0 : 0;
    end = w0 + k_w < in_w ? w0 + k_w : in_w;
  }
};

/// The index into x of the first largest element of a window (row-major window order).
template <typename T>
WEIR_HOST_DEVICE std::int64_t WindowArgMax(const Pool2DGeometry& g, const T* x, std::int64_t b, std::int64_t ch, std::int64_t h_begin,
                          std::int64_t h_end, std::int64_t w_begin, std::int64_t w_end) {
  std::int64_t best = g.XIndex(b, ch, h_begin, w_begin);
  for (std::int64_t h = h_begin; h < h_end; ++h) {
    for (std::int64_t w = w_begin; w < w_end; ++w) {
      const std::int64_t at = g.XIndex(b, ch, h, w);
      if (x[at] > x[best]) best = at;
    }
  }
  return best;
}

}  // namespace weir::internal
