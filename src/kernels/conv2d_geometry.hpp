#pragma once
// The geometry of a conv2d op's kernel from its attrs and shapes, for the CPU and CUDA kernels alike,
// and the definition of the convolution over it.
#include <algorithm>
#include <array>
#include <cstdint>

#include "kernels/attrs/conv2d_attrs.hpp"
#include "kernels/functors/conv2d.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {

/// The geometry of conv2d(x, weight) -> y. SAME pads follow graph/ops/window.hpp (TensorFlow's rule:
/// the total pad that gives out = ceil(in / stride), the odd pixel after).
inline Conv2DGeometry MakeConv2DGeometry(const Conv2DAttrs& attrs, const Shape& x, const Shape& weight,
                                         const Shape& y) {
  Conv2DGeometry g;
  g.nhwc = attrs.data_format == DataFormat::kNHWC;
  g.batch = x[0];
  g.channels = g.nhwc ? x[3] : x[1];
  g.in_h = g.nhwc ? x[1] : x[2];
  g.in_w = g.nhwc ? x[2] : x[3];
  g.filters = weight[0];
  g.kernel_h = g.nhwc ? weight[1] : weight[2];
  g.kernel_w = g.nhwc ? weight[2] : weight[3];
  g.out_h = g.nhwc ? y[1] : y[2];
  g.out_w = g.nhwc ? y[2] : y[3];
  g.groups = attrs.groups;
  g.strides = attrs.strides;
  g.dilations = attrs.dilations;
  const std::array<std::int64_t, 2> in{g.in_h, g.in_w}, kernel{g.kernel_h, g.kernel_w}, out{g.out_h, g.out_w};
  for (std::size_t axis = 0; axis < 2; ++axis) {
    switch (attrs.padding.kind) {
      case PaddingKind::kValid: break;
      case PaddingKind::kSame: {
        const std::int64_t extent = (kernel[axis] - 1) * g.dilations[axis] + 1;
        const std::int64_t total = std::max<std::int64_t>((out[axis] - 1) * g.strides[axis] + extent - in[axis], 0);
        g.pad_before[axis] = total / 2;
        g.pad_after[axis] = total - total / 2;
        break;
      }
      case PaddingKind::kExplicit:
        g.pad_before[axis] = attrs.padding.pads[2 * axis];
        g.pad_after[axis] = attrs.padding.pads[2 * axis + 1];
        break;
    }
  }
  return g;
}

/// The geometry a kernel of `pass` sees (the forward conv's attrs: Conv2DAttrs, or Conv2DGradAttrs'
/// for the gradients).
inline Conv2DGeometry MakeConv2DGeometry(Conv2DPass pass, const KernelSetup& setup) {
  switch (pass) {
    case Conv2DPass::kForward:
      return MakeConv2DGeometry(setup.Get<Conv2DAttrs>(), setup.inputs[0].shape, setup.inputs[1].shape,
                                setup.outputs[0].shape);
    case Conv2DPass::kBackwardData:
      return MakeConv2DGeometry(setup.Get<Conv2DGradAttrs>().conv, setup.outputs[0].shape, setup.inputs[1].shape,
                                setup.inputs[0].shape);
    case Conv2DPass::kBackwardFilter:
      return MakeConv2DGeometry(setup.Get<Conv2DGradAttrs>().conv, setup.inputs[1].shape, setup.outputs[0].shape,
                                setup.inputs[0].shape);
  }
  return {};
}

/// Calls fn(x_index, weight_index, y_index) for every product x·weight that adds into y: the
/// definition of the convolution. Each pass of the reference kernels (kernels/cpu/conv2d_common.hpp)
/// is this loop with a different accumulation.
template <typename Fn> void ForEachConv2DTap(const Conv2DGeometry& g, Fn&& fn) {
  const std::int64_t group_channels = g.channels / g.groups;
  const std::int64_t group_filters = g.filters / g.groups;
  for (std::int64_t n = 0; n < g.batch; ++n) {
    for (std::int64_t o = 0; o < g.filters; ++o) {
      const std::int64_t first_channel = (o / group_filters) * group_channels;
      for (std::int64_t oh = 0; oh < g.out_h; ++oh) {
        for (std::int64_t ow = 0; ow < g.out_w; ++ow) {
          const std::int64_t y_index = g.YIndex(n, o, oh, ow);
          for (std::int64_t c = 0; c < group_channels; ++c) {
            for (std::int64_t kh = 0; kh < g.kernel_h; ++kh) {
              const std::int64_t ih = oh * g.strides[0] - g.pad_before[0] + kh * g.dilations[0];
              if (ih < 0 || ih >= g.in_h) continue;  // padding
              for (std::int64_t kw = 0; kw < g.kernel_w; ++kw) {
                const std::int64_t iw = ow * g.strides[1] - g.pad_before[1] + kw * g.dilations[1];
                if (iw < 0 || iw >= g.in_w) continue;
                fn(g.XIndex(n, first_channel + c, ih, iw), g.WIndex(o, c, kh, kw), y_index);
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace weir::internal
