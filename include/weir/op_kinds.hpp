#pragma once
/// \file The kinds of the elementwise ops (ops.hpp): plain enums, with no other dependency, so that the
/// CUDA kernels' device code (compiled by nvcc) shares them with the ops and the CPU kernels.
#include <cstdint>

namespace weir {

enum class ScalarOpKind : std::uint8_t {
  kAdd,      // x + s
  kSub,      // x - s
  kRSub,     // s - x
  kMul,      // x * s
  kDiv,      // x / s
  kRDiv,     // s / x
  kPow,      // x ^ s
};
/// Elementwise functions of one argument. Outside a function's domain the result is what the C
/// library returns (NaN or ±inf). kRound rounds half to even (OneFlow's rint). kSign, kFloor,
/// kCeil and kRound have a zero gradient, as in OneFlow; kAbs has gradient sign(x) (0 at 0).
enum class UnaryOpKind : std::uint8_t {
  kExp,         // e^x
  kLog,         // ln x
  kSqrt,        // √x
  kRsqrt,       // 1/√x
  kSquare,      // x²       (also i32, i64)
  kAbs,         // |x|      (also i32, i64)
  kNegative,    // -x       (also i32, i64)
  kReciprocal,  // 1/x
  kLog1p,       // ln(1 + x)
  kExpm1,       // e^x - 1
  kSoftplus,    // ln(1 + e^x)
  kSign,        // -1, 0 or 1 (also i32, i64)
  kFloor,
  kCeil,
  kRound,       // half to even
  kSin,
  kCos,
};
}  // namespace weir
