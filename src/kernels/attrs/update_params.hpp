#pragma once
// The update functors' parameters (kernels/functors/update.hpp) from an update op's attributes, for
// the CPU and CUDA kernels alike.
#include <span>

#include "kernels/attrs/update_attrs.hpp"
#include "kernels/functors/update.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {

template <typename T> RegularizedGradient<T> MakeRegularizedGradient(const UpdateAttrs& attrs) {
  return {static_cast<T>(attrs.gradient_scale), static_cast<T>(attrs.regularizer.l1), static_cast<T>(attrs.regularizer.l2)};
}

/// The skip flag of an update whose attrs have skip_if (its last input), else null.
inline const float* SkipFlagOf(const UpdateAttrs& attrs, std::span<const ConstTensorView> inputs) {
  return attrs.skip_if ? inputs.back().As<float>() : nullptr;
}

/// Whether the update skips its step: a flag other than 0 (a NaN too: a sum over the gradients' zeros
/// is NaN when any of them is not finite). `flag` null: never.
WEIR_HOST_DEVICE inline bool SkipsStep(const float* flag) { return flag != nullptr && !(*flag == 0.f); }

template <typename T> AdamConstants<T> MakeAdamConstants(const Optimizer& optimizer) {
  return {static_cast<T>(optimizer.beta1),     static_cast<T>(optimizer.beta2),
          static_cast<T>(1 - optimizer.beta1), static_cast<T>(1 - optimizer.beta2),
          static_cast<T>(optimizer.epsilon),   static_cast<T>(optimizer.weight_decay),
          optimizer.lazy};
}

}  // namespace weir::internal
