#pragma once
// Shared by the max and avg pooling kernels: window geometry from the compile-time shapes (the
// geometry itself and its window arithmetic: kernels/functors/pool2d.hpp, the CUDA kernels' too), the
// reference loops (the f64 kernels, and what the f32 oneDNN kernels are tested against), and
// oneDNN's description of the same pooling.
#include <algorithm>
#include <cstdint>
#include <tuple>
#include <utility>

#include <dnnl.hpp>

#include "kernels/pool2d_geometry.hpp"
#include "weir/op_attrs.hpp"
#include "weir/shape.hpp"

namespace weir::internal {

/// Calls fn(b, ch, oh, ow, h_begin, h_end, w_begin, w_end) for every output element, with the
/// window clipped to x (never empty: the op's inference keeps pads smaller than the window).
template <typename Fn> void ForEachWindow(const Pool2DGeometry& g, Fn&& fn) {
  for (std::int64_t b = 0; b < g.n; ++b) {
    for (std::int64_t ch = 0; ch < g.c; ++ch) {
      for (std::int64_t oh = 0; oh < g.out_h; ++oh) {
        std::int64_t h_begin = 0, h_end = 0;
        g.RowWindow(oh, h_begin, h_end);
        for (std::int64_t ow = 0; ow < g.out_w; ++ow) {
          std::int64_t w_begin = 0, w_end = 0;
          g.ColumnWindow(ow, w_begin, w_end);
          fn(b, ch, oh, ow, h_begin, h_end, w_begin, w_end);
        }
      }
    }
  }
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

/// oneDNN's description of the pooling of `type` (f32, or bf16 for mixed precision's max pooling), in
/// the caller's layout (oneDNN's pooling reads plain NCHW and NHWC directly, so no reorder is needed).
struct DnnlPool2D {
  dnnl::memory::desc x, y;
  dnnl::memory::dims strides, kernel, pad_l, pad_r;
};

inline DnnlPool2D MakeDnnlPool2D(const Pool2DGeometry& g,
                                 dnnl::memory::data_type type = dnnl::memory::data_type::f32) {
  using tag = dnnl::memory::format_tag;
  const tag layout = g.nchw ? tag::nchw : tag::nhwc;
  return {dnnl::memory::desc({g.n, g.c, g.in_h, g.in_w}, type, layout),
          dnnl::memory::desc({g.n, g.c, g.out_h, g.out_w}, type, layout),
          {g.s_h, g.s_w},
          {g.k_h, g.k_w},
          {g.pad_top, g.pad_left},
          {g.pad_bottom, g.pad_right}};
}

}  // namespace weir::internal
