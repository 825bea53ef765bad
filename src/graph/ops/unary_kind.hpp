#pragma once
// Facts about each UnaryOpKind shared by unary and unary_grad, read from the kind's functor
// (kernels/functors/unary.hpp), so that a kind is described in one place.
#include <iterator>
#include <string_view>

#include "kernels/functors/unary.hpp"
#include "weir/ops.hpp"

namespace weir::internal {

/// OneFlow's op name for the kind ("exp", "rsqrt", ...), "?" for a value outside the enum.
inline std::string_view UnaryKindName(UnaryOpKind kind) {
  const auto index = static_cast<std::size_t>(kind);
  return index < std::size(kUnaryOpKindNames) ? kUnaryOpKindNames[index] : "?";
}

/// Kinds that are exact on integers too (square, abs, negative, sign).
inline bool UnaryKindTakesIntegers(UnaryOpKind kind) {
  return VisitUnaryKind(kind, []<typename Fn>() { return Fn::kTakesIntegers; });
}

/// Kinds whose derivative is cheapest from y = f(x) (e^x, √x, ...); the rest use x.
inline bool UnaryGradUsesOutput(UnaryOpKind kind) {
  return VisitUnaryKind(kind, []<typename Fn>() { return Fn::kGradUsesOutput; });
}

}  // namespace weir::internal
