#pragma once
// Facts about each UnaryOpKind shared by unary and unary_grad.
#include <string_view>

#include "weir/ops.hpp"

namespace weir::internal {

/// OneFlow's op name for the kind ("exp", "rsqrt", ...), "?" for a value outside the enum.
inline std::string_view UnaryKindName(UnaryOpKind kind) {
  switch (kind) {
    case UnaryOpKind::kExp: return "exp";
    case UnaryOpKind::kLog: return "log";
    case UnaryOpKind::kSqrt: return "sqrt";
    case UnaryOpKind::kRsqrt: return "rsqrt";
    case UnaryOpKind::kSquare: return "square";
    case UnaryOpKind::kAbs: return "abs";
    case UnaryOpKind::kNegative: return "negative";
    case UnaryOpKind::kReciprocal: return "reciprocal";
    case UnaryOpKind::kLog1p: return "log1p";
    case UnaryOpKind::kExpm1: return "expm1";
    case UnaryOpKind::kSoftplus: return "softplus";
    case UnaryOpKind::kSign: return "sign";
    case UnaryOpKind::kFloor: return "floor";
    case UnaryOpKind::kCeil: return "ceil";
    case UnaryOpKind::kRound: return "round";
    case UnaryOpKind::kSin: return "sin";
    case UnaryOpKind::kCos: return "cos";
  }
  return "?";
}

/// Kinds that are exact on integers too.
inline bool UnaryKindTakesIntegers(UnaryOpKind kind) {
  return kind == UnaryOpKind::kSquare || kind == UnaryOpKind::kAbs || kind == UnaryOpKind::kNegative ||
         kind == UnaryOpKind::kSign;
}

/// Kinds whose derivative is cheapest from y = f(x) (e^x, √x, ...); the rest use x.
inline bool UnaryGradUsesOutput(UnaryOpKind kind) {
  return kind == UnaryOpKind::kExp || kind == UnaryOpKind::kSqrt || kind == UnaryOpKind::kRsqrt ||
         kind == UnaryOpKind::kReciprocal || kind == UnaryOpKind::kExpm1;
}

}  // namespace weir::internal
