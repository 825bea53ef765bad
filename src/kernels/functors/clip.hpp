#pragma once
// The math of clip_by_value and its gradient, for the CPU kernels and the CUDA kernels' device code.
#include "kernels/functors/host_device.hpp"

namespace weir::internal {

/// x clamped to [lo, hi]; written so that a NaN x fails both tests and passes through.
template <typename T> WEIR_HOST_DEVICE T Clip(T x, T lo, T hi) { return x < lo ? lo : (x > hi ? hi : x); }
/// dy where lo <= x <= hi (with `open`, lo < x < hi), else 0.
template <typename T> WEIR_HOST_DEVICE T ClipGrad(T dy, T x, T lo, T hi, bool open) {
  return (open ? x > lo && x < hi : x >= lo && x <= hi) ? dy : T(0);
}

}  // namespace weir::internal
