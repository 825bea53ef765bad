#pragma once
/// \file The kinds of the elementwise ops (ops.hpp): plain enums, with no other dependency, so that the
/// CUDA kernels' device code (compiled by nvcc) shares them with the ops and the CPU kernels.
#include <cstdint>

namespace weir {

/// Each list below is the one list of its kinds: the enum, the names the ops take by name (OneFlow's:
/// "exp", "rsqrt", ...) and Python's functions come from it, and the kernels' switches over it are
/// checked against it by the compiler (-Werror=switch).
#define WEIR_SCALAR_OP_KINDS(X) \
  X(kAdd, "add")   /* x + s */  \
  X(kSub, "sub")   /* x - s */  \
  X(kRSub, "rsub") /* s - x */  \
  X(kMul, "mul")   /* x * s */  \
  X(kDiv, "div")   /* x / s */  \
  X(kRDiv, "rdiv") /* s / x */  \
  X(kPow, "pow")   /* x ^ s */

/// Elementwise functions of one argument. Outside a function's domain the result is what the C
/// library returns (NaN or ±inf). kRound rounds half to even (OneFlow's rint). kSign, kFloor,
/// kCeil and kRound have a zero gradient, as in OneFlow; kAbs has gradient sign(x) (0 at 0).
/// kSquare, kAbs, kNegative and kSign also take i32 and i64.
#define WEIR_UNARY_OP_KINDS(X)                      \
  X(kExp, "exp")               /* e^x */            \
  X(kLog, "log")               /* ln x */           \
  X(kSqrt, "sqrt")             /* √x */             \
  X(kRsqrt, "rsqrt")           /* 1/√x */           \
  X(kSquare, "square")         /* x² */             \
  X(kAbs, "abs")               /* |x| */            \
  X(kNegative, "negative")     /* -x */             \
  X(kReciprocal, "reciprocal") /* 1/x */            \
  X(kLog1p, "log1p")           /* ln(1 + x) */      \
  X(kExpm1, "expm1")           /* e^x - 1 */        \
  X(kSoftplus, "softplus")     /* ln(1 + e^x) */    \
  X(kSign, "sign")             /* -1, 0 or 1 */     \
  X(kFloor, "floor")                                \
  X(kCeil, "ceil")                                  \
  X(kRound, "round")           /* half to even */   \
  X(kSin, "sin")                                    \
  X(kCos, "cos")                                    \
  X(kTan, "tan")                                    \
  X(kAsin, "asin")                                  \
  X(kAcos, "acos")                                  \
  X(kAtan, "atan")                                  \
  X(kSinh, "sinh")                                  \
  X(kCosh, "cosh")                                  \
  X(kAsinh, "asinh")                                \
  X(kAcosh, "acosh")                                \
  X(kAtanh, "atanh")                                \
  X(kErf, "erf")                                    \
  X(kErfc, "erfc")             /* 1 - erf x */      \
  X(kLgamma, "lgamma")         /* ln |Γ(x)| */      \
  X(kLogSigmoid, "log_sigmoid") /* -softplus(-x) */ \
  X(kGelu, "gelu")             /* x·Φ(x), exact */  \
  X(kReciprocalNoNan, "reciprocal_no_nan") /* 1/x, 0 at 0 */ \
  X(kRelu, "relu")             /* max(x, 0) */      \
  X(kSigmoid, "sigmoid")       /* 1 / (1 + e^-x) */ \
  X(kTanh, "tanh")                                  \
  X(kHardsigmoid, "hardsigmoid") /* clip(x/6 + 1/2, 0, 1) */ \
  X(kHardswish, "hardswish")   /* x·hardsigmoid(x) */

/// Elementwise comparisons, numpy-broadcast; the result is int8 1 or 0, as OneFlow 0.3's
/// broadcast_equal and its siblings give. NaN compares unequal to everything, itself included.
#define WEIR_COMPARE_OP_KINDS(X)          \
  X(kEqual, "equal")                      \
  X(kNotEqual, "not_equal")               \
  X(kGreater, "greater")                  \
  X(kGreaterEqual, "greater_equal")       \
  X(kLess, "less")                        \
  X(kLessEqual, "less_equal")

#define WEIR_OP_KIND_ENUMERATOR(kind, name) kind,
#define WEIR_OP_KIND_NAME(kind, name) name,
enum class ScalarOpKind : std::uint8_t { WEIR_SCALAR_OP_KINDS(WEIR_OP_KIND_ENUMERATOR) };
enum class UnaryOpKind : std::uint8_t { WEIR_UNARY_OP_KINDS(WEIR_OP_KIND_ENUMERATOR) };
enum class CompareOpKind : std::uint8_t { WEIR_COMPARE_OP_KINDS(WEIR_OP_KIND_ENUMERATOR) };
/// The kinds' names, in enum order.
inline constexpr const char* kScalarOpKindNames[] = {WEIR_SCALAR_OP_KINDS(WEIR_OP_KIND_NAME)};
inline constexpr const char* kUnaryOpKindNames[] = {WEIR_UNARY_OP_KINDS(WEIR_OP_KIND_NAME)};
inline constexpr const char* kCompareOpKindNames[] = {WEIR_COMPARE_OP_KINDS(WEIR_OP_KIND_NAME)};
#undef WEIR_OP_KIND_ENUMERATOR
#undef WEIR_OP_KIND_NAME

}  // namespace weir
