#pragma once
// The update functors' parameters (kernels/functors/update.hpp) from an update op's attributes, for
// the CPU and CUDA kernels alike.
#include "kernels/attrs/update_attrs.hpp"
#include "kernels/functors/update.hpp"

namespace weir::internal {

template <typename T> RegularizedGradient<T> MakeRegularizedGradient(const UpdateAttrs& attrs) {
  return {static_cast<T>(attrs.gradient_scale), static_cast<T>(attrs.regularizer.l1), static_cast<T>(attrs.regularizer.l2)};
}

template <typename T> AdamConstants<T> MakeAdamConstants(const Optimizer& optimizer) {
  return {static_cast<T>(optimizer.beta1),     static_cast<T>(optimizer.beta2),
          static_cast<T>(1 - optimizer.beta1), static_cast<T>(1 - optimizer.beta2),
          static_cast<T>(optimizer.epsilon),   static_cast<T>(optimizer.weight_decay),
          optimizer.lazy};
}

}  // namespace weir::internal
