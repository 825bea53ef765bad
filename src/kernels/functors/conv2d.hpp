#pragma once
// The geometry of a 2-D convolution, for the CPU kernels (reference loops and oneDNN) and the CUDA
// kernels (cuDNN) alike, and the image shift that pads or crops a batch of images: cuDNN pads
// symmetrically, so the CUDA kernels run an asymmetric (SAME) pad through a padded copy.
#include <array>
#include <cstdint>

#include "kernels/functors/binary.hpp"
#include "kernels/functors/host_device.hpp"

namespace weir::internal {

/// Which product a convolution kernel computes: forward (x, weight) -> y; backward data
/// (dy, weight) -> dx; backward filter (dy, x) -> dweight.
enum class Conv2DPass : std::uint8_t { kForward, kBackwardData, kBackwardFilter };

/// One convolution in sizes and resolved pads (kernels/conv2d_geometry.hpp makes it from the attrs).
struct Conv2DGeometry {
  bool nhwc = false;
  std::int64_t batch = 0, channels = 0, in_h = 0, in_w = 0;
  std::int64_t filters = 0, kernel_h = 0, kernel_w = 0, out_h = 0, out_w = 0, groups = 1;
  std::array<std::int64_t, 2> strides{1, 1}, dilations{1, 1}, pad_before{0, 0}, pad_after{0, 0};

  std::int64_t XIndex(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) const {
    return nhwc ? ((n * in_h + h) * in_w + w) * channels + c : ((n * channels + c) * in_h + h) * in_w + w;
  }
  std::int64_t YIndex(std::int64_t n, std::int64_t o, std::int64_t h, std::int64_t w) const {
    return nhwc ? ((n * out_h + h) * out_w + w) * filters + o : ((n * filters + o) * out_h + h) * out_w + w;
  }
  /// `c` counts within the group: weight (out, C/groups, kh, kw) or (out, kh, kw, C).
  std::int64_t WIndex(std::int64_t o, std::int64_t c, std::int64_t h, std::int64_t w) const {
    const std::int64_t group_channels = channels / groups;
    return nhwc ? ((o * kernel_h + h) * kernel_w + w) * group_channels + c
                : ((o * group_channels + c) * kernel_h + h) * kernel_w + w;
  }
  std::int64_t XCount() const { return batch * channels * in_h * in_w; }
  std::int64_t YCount() const { return batch * filters * out_h * out_w; }
  std::int64_t WeightCount() const { return filters * (groups > 0 ? channels / groups : 0) * kernel_h * kernel_w; }
  bool SymmetricPads() const { return pad_before == pad_after; }
};

/// A batch of images (batch, channels, src_h, src_w in NCHW or NHWC) copied into images of
/// (dst_h, dst_w), shifted by (offset_h, offset_w): dst(h, w) = src(h − offset_h, w − offset_w), zero
/// where that falls outside src. Positive offsets with a larger dst pad; negative ones with a smaller
/// dst crop.
struct ImageShift {
  bool nhwc = false;
  std::int64_t batch = 0, channels = 0, src_h = 0, src_w = 0, dst_h = 0, dst_w = 0, offset_h = 0, offset_w = 0;

  WEIR_HOST_DEVICE std::int64_t DstCount() const { return batch * channels * dst_h * dst_w; }
  /// The index into src that dst element `i` copies, or −1 for a zero.
  WEIR_HOST_DEVICE std::int64_t SourceOf(std::int64_t i) const {
    std::int64_t n, c, h, w;
    if (nhwc) {
      c = i % channels;
      i /= channels;
      w = i % dst_w;
      i /= dst_w;
      h = i % dst_h;
      n = i / dst_h;
    } else {
      w = i % dst_w;
      i /= dst_w;
      h = i % dst_h;
      i /= dst_h;
      c = i % channels;
      n = i / channels;
    }
    const std::int64_t sh = h - offset_h, sw = w - offset_w;
    if (sh < 0 || sh >= src_h || sw < 0 || sw >= src_w) return -1;
    return nhwc ? ((n * src_h + sh) * src_w + sw) * channels + c : ((n * channels + c) * src_h + sh) * src_w + sw;
  }
};

/// Batches of row-major matrices, each transposed: src holds `batches` matrices of rows x cols, dst the
/// same matrices as cols x rows. Moves NHWC images to NCHW ((h w) x c per image) and (out, kh, kw, c)
/// filters to (out, c, kh, kw) ((kh kw) x c per filter); Inverse() moves them back.
struct BatchedTranspose {
  std::int64_t batches = 0, rows = 0, cols = 0;

  WEIR_HOST_DEVICE std::int64_t Count() const { return batches * rows * cols; }
  /// The index into src that dst element `i` copies: dst's matrix is cols x rows, element (col, row).
  WEIR_HOST_DEVICE std::int64_t SourceOf(std::int64_t i) const {
    const std::int64_t per = rows * cols, batch = i / per, in_matrix = i % per;
    const std::int64_t col = in_matrix / rows, row = in_matrix % rows;
    return batch * per + row * cols + col;
  }
  BatchedTranspose Inverse() const { return {batches, cols, rows}; }
  /// The same move as a strided gather (PlanGather), for the copy launchers: dst (batch, col, row)
  /// reads src at batch * rows * cols + row * cols + col.
  BroadcastPlan Gather() const {
    BroadcastPlan plan;
    PlanGather({batches, cols, rows}, {rows * cols, 1, cols}, plan);  // three axes: never over kMaxRank
    return plan;
  }
};

/// The shift that pads `g`'s x (or dx) by its pads into a (in_h + pads, in_w + pads) image; `crop`: the
/// reverse, from the padded image back to x's size.
inline ImageShift PadShift(const Conv2DGeometry& g, bool crop) {
  const std::int64_t padded_h = g.in_h + g.pad_before[0] + g.pad_after[0];
  const std::int64_t padded_w = g.in_w + g.pad_before[1] + g.pad_after[1];
  ImageShift shift{g.nhwc, g.batch, g.channels, g.in_h, g.in_w, padded_h, padded_w, g.pad_before[0], g.pad_before[1]};
  if (crop) {
    shift.src_h = padded_h;
    shift.src_w = padded_w;
    shift.dst_h = g.in_h;
    shift.dst_w = g.in_w;
    shift.offset_h = -g.pad_before[0];
    shift.offset_w = -g.pad_before[1];
  }
  return shift;
}

/// `g` over its padded input: the same output, no pads.
inline Conv2DGeometry Prepadded(Conv2DGeometry g) {
  g.in_h += g.pad_before[0] + g.pad_after[0];
  g.in_w += g.pad_before[1] + g.pad_after[1];
  g.pad_before = {0, 0};
  g.pad_after = {0, 0};
  return g;
}

}  // namespace weir::internal
