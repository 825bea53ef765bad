#pragma once
// The math of compare (weir/op_kinds.hpp's comparisons) for the CPU kernel and the CUDA kernel's
// device code alike: int8 1 or 0. Every comparison with NaN is false but not_equal, as in C++ and
// numpy.
#include <cstdint>

#include "kernels/functors/host_device.hpp"
#include "weir/op_kinds.hpp"

namespace weir::internal {

template <CompareOpKind kKind> struct CompareOp {
  template <typename T> static WEIR_HOST_DEVICE std::int8_t Apply(T a, T b) {
    if constexpr (kKind == CompareOpKind::kEqual) return a == b;
    if constexpr (kKind == CompareOpKind::kNotEqual) return a != b;
    if constexpr (kKind == CompareOpKind::kGreater) return a > b;
    if constexpr (kKind == CompareOpKind::kGreaterEqual) return a >= b;
    if constexpr (kKind == CompareOpKind::kLess) return a < b;
    if constexpr (kKind == CompareOpKind::kLessEqual) return a <= b;
    return 0;
  }
};

/// Calls fn(CompareOp<kind>{}) for the runtime `kind`: each kernel instantiates one loop per kind.
template <typename Fn> auto WithCompareOp(CompareOpKind kind, Fn&& fn) {
  switch (kind) {
#define WEIR_COMPARE_CASE(kind_, name) \
  case CompareOpKind::kind_: return fn(CompareOp<CompareOpKind::kind_>{});
    WEIR_COMPARE_OP_KINDS(WEIR_COMPARE_CASE)
#undef WEIR_COMPARE_CASE
  }
  return fn(CompareOp<CompareOpKind::kEqual>{});  // unreachable: inference checks the kind
}

}  // namespace weir::internal
