#pragma once
// The index arithmetic of gather and unsorted_segment_sum (each the other's gradient), for the CPU
// kernels and the CUDA kernels' device code alike. Both see their tensors as three nested loops: `outer`
// blocks (the axes before `axis`), then an axis, then `inner` elements (the axes after it). The indexed
// side has `axis_size` entries along the axis (gather's params, the segment sum's output); the other
// side has one entry per index (`count`: gather's output, the segment sum's data).
#include <cstdint>

#include "kernels/functors/host_device.hpp"

namespace weir::internal {

struct GatherPlan {
  std::int64_t outer = 1;
  std::int64_t axis_size = 0;
  std::int64_t count = 0;
  std::int64_t inner = 1;

  /// Elements on the side with one entry per index.
  WEIR_HOST_DEVICE std::int64_t PerIndexElements() const { return outer * count * inner; }
  /// Element e of the per-index side: which index it belongs to.
  WEIR_HOST_DEVICE std::int64_t IndexOf(std::int64_t e) const { return (e / inner) % count; }
  /// Element e of the per-index side, whose index has value `index`: its element on the indexed side.
  WEIR_HOST_DEVICE std::int64_t IndexedElement(std::int64_t e, std::int64_t index) const {
    const std::int64_t o = e / (count * inner);
    return (o * axis_size + index) * inner + e % inner;
  }
};

}  // namespace weir::internal
