#pragma once
// Facts about each UnaryOpKind shared by unary and unary_grad.
#include <iterator>
#include <string_view>

#include "weir/ops.hpp"

namespace weir::internal {

/// OneFlow's op name for the kind ("exp", "rsqrt", ...), "?" for a value outside the enum.
inline std::string_view UnaryKindName(UnaryOpKind kind) {
  const auto index = static_cast<std::size_t>(kind);
  return index < std::size(kUnaryOpKindNames) ? kUnaryOpKindNames[index] : "?";
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
