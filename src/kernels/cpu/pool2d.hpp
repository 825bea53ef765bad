#pragma once
// Shared by the max and avg pooling kernels: window geometry from the compile-time shapes, the
// reference loops (the f64 kernels, and what the f32 oneDNN kernels are tested against), and
// oneDNN's description of the same pooling.
#include <algorithm>
#include <cstdint>
#include <tuple>
#include <utility>

#include <dnnl.hpp>

#include "weir/ops.hpp"
#include "weir/shape.hpp"

namespace weir::internal {

/// A 2-D pooling of x (N,C,H,W or N,H,W,C) into y. The pads are the effective ones: y's size is
/// exactly (in + before + after − k) / stride + 1, as oneDNN requires (ceil_mode widens `after`).
struct Pool2DGeometry {
  std::int64_t n = 0, c = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  std::int64_t k_h = 1, k_w = 1, s_h = 1, s_w = 1;
  std::int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool nchw = true;

  std::int64_t XIndex(std::int64_t b, std::int64_t ch, std::int64_t h, std::int64_t w) const {
    return nchw ? ((b * c + ch) * in_h + h) * in_w + w : ((b * in_h + h) * in_w + w) * c + ch;
  }
  std::int64_t YIndex(std::int64_t b, std::int64_t ch, std::int64_t h, std::int64_t w) const {
    return nchw ? ((b * c + ch) * out_h + h) * out_w + w : ((b * out_h + h) * out_w + w) * c + ch;
  }
  bool Empty() const { return n == 0 || c == 0; }
};

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

/// Calls fn(b, ch, oh, ow, h_begin, h_end, w_begin, w_end) for every output element, with the
/// window clipped to x (never empty: the op's inference keeps pads smaller than the window).
template <typename Fn> void ForEachWindow(const Pool2DGeometry& g, Fn&& fn) {
  for (std::int64_t b = 0; b < g.n; ++b) {
    for (std::int64_t ch = 0; ch < g.c; ++ch) {
      for (std::int64_t oh = 0; oh < g.out_h; ++oh) {
        const std::int64_t h0 = oh * g.s_h - g.pad_top;
        const std::int64_t h_begin = std::max<std::int64_t>(h0, 0), h_end = std::min(h0 + g.k_h, g.in_h);
        for (std::int64_t ow = 0; ow < g.out_w; ++ow) {
          const std::int64_t w0 = ow * g.s_w - g.pad_left;
          const std::int64_t w_begin = std::max<std::int64_t>(w0, 0), w_end = std::min(w0 + g.k_w, g.in_w);
          fn(b, ch, oh, ow, h_begin, h_end, w_begin, w_end);
        }
      }
    }
  }
}

/// The index into x of the first largest element of a window (row-major window order).
template <typename T>
std::int64_t WindowArgMax(const Pool2DGeometry& g, const T* x, std::int64_t b, std::int64_t ch, std::int64_t h_begin,
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

template <typename T> void MaxPoolReference(const Pool2DGeometry& g, const T* x, T* y) {
  ForEachWindow(g, [&](auto b, auto ch, auto oh, auto ow, auto h_begin, auto h_end, auto w_begin, auto w_end) {
    y[g.YIndex(b, ch, oh, ow)] = x[WindowArgMax(g, x, b, ch, h_begin, h_end, w_begin, w_end)];
  });
}

template <typename T> void MaxPoolGradReference(const Pool2DGeometry& g, const T* dy, const T* x, T* dx) {
  std::fill_n(dx, g.n * g.c * g.in_h * g.in_w, T(0));
  ForEachWindow(g, [&](auto b, auto ch, auto oh, auto ow, auto h_begin, auto h_end, auto w_begin, auto w_end) {
    dx[WindowArgMax(g, x, b, ch, h_begin, h_end, w_begin, w_end)] += dy[g.YIndex(b, ch, oh, ow)];
  });
}

template <typename T> void AvgPoolReference(const Pool2DGeometry& g, const T* x, T* y) {
  ForEachWindow(g, [&](auto b, auto ch, auto oh, auto ow, auto h_begin, auto h_end, auto w_begin, auto w_end) {
    T sum = 0;
    for (std::int64_t h = h_begin; h < h_end; ++h) {
      for (std::int64_t w = w_begin; w < w_end; ++w) sum += x[g.XIndex(b, ch, h, w)];
    }
    y[g.YIndex(b, ch, oh, ow)] = sum / static_cast<T>((h_end - h_begin) * (w_end - w_begin));
  });
}

template <typename T> void AvgPoolGradReference(const Pool2DGeometry& g, const T* dy, T* dx) {
  std::fill_n(dx, g.n * g.c * g.in_h * g.in_w, T(0));
  ForEachWindow(g, [&](auto b, auto ch, auto oh, auto ow, auto h_begin, auto h_end, auto w_begin, auto w_end) {
    const T share = dy[g.YIndex(b, ch, oh, ow)] / static_cast<T>((h_end - h_begin) * (w_end - w_begin));
    for (std::int64_t h = h_begin; h < h_end; ++h) {
      for (std::int64_t w = w_begin; w < w_end; ++w) dx[g.XIndex(b, ch, h, w)] += share;
    }
  });
}

/// oneDNN's f32 description of the pooling, in the caller's layout (oneDNN's pooling reads plain
/// NCHW and NHWC directly, so no reorder is needed).
struct DnnlPool2D {
  dnnl::memory::desc x, y;
  dnnl::memory::dims strides, kernel, pad_l, pad_r;
};

inline DnnlPool2D MakeDnnlPool2D(const Pool2DGeometry& g) {
  using tag = dnnl::memory::format_tag;
  const tag layout = g.nchw ? tag::nchw : tag::nhwc;
  const auto f32 = dnnl::memory::data_type::f32;
  return {dnnl::memory::desc({g.n, g.c, g.in_h, g.in_w}, f32, layout),
          dnnl::memory::desc({g.n, g.c, g.out_h, g.out_w}, f32, layout),
          {g.s_h, g.s_w},
          {g.k_h, g.k_w},
          {g.pad_top, g.pad_left},
          {g.pad_bottom, g.pad_right}};
}

}  // namespace weir::internal
