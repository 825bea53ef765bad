#pragma once
// Typed attributes of layer_norm and layer_norm_grad, shared by their definitions
// (graph/ops/layer_norm.cpp, layer_norm_grad.cpp) and kernels.

namespace weir::internal {

/// Each row, the axes from `begin_norm_axis` on, normalized: (x − mean) / √(variance + epsilon).
struct LayerNormAttrs {
  int begin_norm_axis = 1;
  double epsilon = 1e-5;
};

}  // namespace weir::internal
