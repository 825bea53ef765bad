#pragma once
// Geometry of a 2-D sliding window (conv2d, pooling): output size and padding per spatial axis.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>

#include "graph/op_registry.hpp"
#include "weir/ops.hpp"

namespace weir::internal {

/// One spatial axis of a window: output length and the padding before and after it.
struct WindowAxis {
  std::int64_t out = 0;
  std::int64_t pad_before = 0;
  std::int64_t pad_after = 0;
};

/// The window along one axis of length `in` (kernel `k`, `stride`, `dilation`; `axis` 0 = height,
/// 1 = width, which picks the explicit pads). Throws OpError naming `op_type` when the window does
/// not fit or an argument is not positive.
inline WindowAxis ComputeWindowAxis(std::string_view op_type, int axis, std::int64_t in, std::int64_t k,
                                    std::int64_t stride, std::int64_t dilation, const Padding& padding) {
  const char* name = axis == 0 ? "height" : "width";
  if (k <= 0) throw OpError(op_type, "kernel {} must be positive, got {}", name, k);
  if (stride <= 0) throw OpError(op_type, "stride along the {} must be positive, got {}", name, stride);
  if (dilation <= 0) throw OpError(op_type, "dilation along the {} must be positive, got {}", name, dilation);
  const std::int64_t extent = (k - 1) * dilation + 1;  // the dilated kernel's reach
  WindowAxis window;
  switch (padding.kind) {
    case PaddingKind::kValid: break;
    case PaddingKind::kSame: {
      const std::int64_t out = (in + stride - 1) / stride;
      const std::int64_t total = std::max<std::int64_t>((out - 1) * stride + extent - in, 0);
      window.pad_before = total / 2;
      window.pad_after = total - total / 2;
      break;
    }
    case PaddingKind::kExplicit:
      window.pad_before = padding.pads[static_cast<std::size_t>(2 * axis)];
      window.pad_after = padding.pads[static_cast<std::size_t>(2 * axis + 1)];
      if (window.pad_before < 0 || window.pad_after < 0) {
        throw OpError(op_type, "explicit padding along the {} must be >= 0, got ({}, {})", name, window.pad_before,
                      window.pad_after);
      }
      break;
  }
  const std::int64_t padded = in + window.pad_before + window.pad_after;
  if (padded < extent) {
    throw OpError(op_type, "the window ({} with dilation {}) is larger than the padded {} {}", k, dilation, name, padded);
  }
  window.out = (padded - extent) / stride + 1;
  return window;
}

}  // namespace weir::internal
