#pragma once
/// \file The 16-bit floating types of tensors: IEEE 754 binary16 (`float16`) and `bfloat16` (the top
/// half of a float32). Both are storage types: arithmetic on them converts to float. Conversions
/// from float round to nearest, ties to even; NaN stays NaN (quiet), overflow becomes infinity.
/// The same code runs on the host and in CUDA device code.
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define WEIR_HALF_HOST_DEVICE __host__ __device__
#else
#define WEIR_HALF_HOST_DEVICE
#endif

namespace weir {

namespace half_bits {

WEIR_HALF_HOST_DEVICE inline std::uint32_t BitsOf(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

WEIR_HALF_HOST_DEVICE inline float FloatOf(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

WEIR_HALF_HOST_DEVICE inline std::uint16_t BFloat16FromFloat(float value) {
  std::uint32_t bits = BitsOf(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);  // quiet NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest, ties to even (may carry into the exponent: inf)
  return static_cast<std::uint16_t>(bits >> 16);
}

WEIR_HALF_HOST_DEVICE inline float FloatFromBFloat16(std::uint16_t bits) { return FloatOf(std::uint32_t{bits} << 16); }

WEIR_HALF_HOST_DEVICE inline std::uint16_t Float16FromFloat(float value) {
  const std::uint32_t bits = BitsOf(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));  // NaN
  // 65520 (the midpoint between 65504, the largest half, and 2^16) and above round to infinity.
  if (magnitude >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (magnitude < 0x38800000u) {  // below 2^-14: a subnormal half (or zero), in units of 2^-24
    const std::uint32_t exponent = magnitude >> 23;
    if (exponent < 102) return sign;  // below 2^-25: rounds to zero
    const std::uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126 - exponent;  // 14..24
    std::uint32_t result = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1u << shift) - 1u);
    const std::uint32_t half_way = 1u << (shift - 1);
    if (rest > half_way || (rest == half_way && (result & 1u) != 0)) ++result;
    return static_cast<std::uint16_t>(sign | result);
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits to nearest even.
  const std::uint32_t rebased = magnitude - 0x38000000u;
  const std::uint32_t rounded = rebased + 0xfffu + ((rebased >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | (rounded >> 13));
}

WEIR_HALF_HOST_DEVICE inline float FloatFromFloat16(std::uint16_t bits) {
  const std::uint32_t sign = std::uint32_t{bits & 0x8000u} << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1fu;
  const std::uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1fu) return FloatOf(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return FloatOf(sign | BitsOf(magnitude));
  }
  return FloatOf(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

}  // namespace half_bits

/// A 16-bit float stored as its bits; `Format` converts (FromFloat, ToFloat).
template <typename Format> struct Float16Storage {
  std::uint16_t bits = 0;

  Float16Storage() = default;
  WEIR_HALF_HOST_DEVICE explicit Float16Storage(float value) : bits(Format::FromFloat(value)) {}
  WEIR_HALF_HOST_DEVICE operator float() const { return Format::ToFloat(bits); }
  WEIR_HALF_HOST_DEVICE static Float16Storage FromBits(std::uint16_t bits) {
    Float16Storage value;
    value.bits = bits;
    return value;
  }
};

namespace half_bits {
struct Binary16 {
  WEIR_HALF_HOST_DEVICE static std::uint16_t FromFloat(float value) { return Float16FromFloat(value); }
  WEIR_HALF_HOST_DEVICE static float ToFloat(std::uint16_t bits) { return FloatFromFloat16(bits); }
};
struct BFloat16 {
  WEIR_HALF_HOST_DEVICE static std::uint16_t FromFloat(float value) { return BFloat16FromFloat(value); }
  WEIR_HALF_HOST_DEVICE static float ToFloat(std::uint16_t bits) { return FloatFromBFloat16(bits); }
};
}  // namespace half_bits

/// IEEE 754 binary16: 5 exponent bits, 10 mantissa bits; largest finite 65504.
using float16 = Float16Storage<half_bits::Binary16>;
/// bfloat16: float32's 8 exponent bits and its top 7 mantissa bits; float32's range.
using bfloat16 = Float16Storage<half_bits::BFloat16>;

}  // namespace weir
