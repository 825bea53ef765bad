#pragma once
// Typed attributes of cumsum, shared by its definition (graph/ops/cumsum.cpp) and kernels.

namespace weir::internal {

/// Running sums along `axis`: from the end with `reverse`; each leaving out its own element with
/// `exclusive` (the first sum is then 0).
struct CumsumAttrs {
  int axis = 0;
  bool exclusive = false;
  bool reverse = false;
};

}  // namespace weir::internal
