#pragma once
// The math of fake_quantization for its CPU kernels and the CUDA kernels' device code: x mapped to
// the integer grid of one scheme, clamped, and mapped back.
#include <cmath>
#include <cstdint>

#include "kernels/functors/host_device.hpp"

namespace weir::internal {

/// OneFlow's quantization-aware-training schemes: "google" (TFLite's) maps x to integers around a
/// zero point, symmetric (zero point 0, [-(2^(b-1)-1), 2^(b-1)-1]) or affine ([0, 2^b-1] shifted by
/// the zero point); "cambricon" scales by a power of two, symmetrically.
enum class QuantizationScheme : std::uint8_t { kSymmetric, kAffine };
enum class QuantizationFormula : std::uint8_t { kGoogle, kCambricon };

struct FakeQuantizationAttrs {
  /// Bits of the integers simulated, in [2, 8].
  int quantization_bit = 8;
  QuantizationScheme scheme = QuantizationScheme::kSymmetric;
  QuantizationFormula formula = QuantizationFormula::kGoogle;
};

/// One channel's grid: x / step (+ offset), rounded to nearest (ties to even) and clamped to
/// [lower, upper], then (minus offset) times step.
template <typename T> struct QuantizationGrid {
  T step;
  T offset;
  T lower;
  T upper;

  WEIR_HOST_DEVICE T operator()(T x) const {
    T q = std::nearbyint(x / step + offset);
    q = q < lower ? lower : (q > upper ? upper : q);
    return (q - offset) * step;
  }
};

/// The grid of a channel with `scale` and `zero_point` under a scheme: google symmetric, google
/// affine (the zero point shifts [0, 2^bits - 1]), or cambricon, symmetric whatever `affine` says
/// (scale is the exponent of a power of two), as OneFlow's kernels.
template <typename T>
WEIR_HOST_DEVICE QuantizationGrid<T> MakeQuantizationGrid(T scale, T zero_point, int bits, bool affine, bool cambricon) {
  if (affine && !cambricon) return {scale, zero_point, T(0), static_cast<T>((1 << bits) - 1)};
  const T upper = static_cast<T>((1 << (bits - 1)) - 1);
  return {cambricon ? static_cast<T>(std::exp2(scale)) : scale, T(0), -upper, upper};
}

}  // namespace weir::internal
