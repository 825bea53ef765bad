#pragma once
// The gradient every update kernel starts from (OneFlow's model-update kernels):
// g' = g·scale + l1·sign(p) + l2·p, scale undoing the loss's element count and loss scale.
#include "kernels/attrs/update_attrs.hpp"

namespace weir::internal {

template <typename T> class RegularizedGradient {
 public:
  explicit RegularizedGradient(const UpdateAttrs& attrs)
      : scale_(static_cast<T>(attrs.gradient_scale)),
        l1_(static_cast<T>(attrs.regularizer.l1)),
        l2_(static_cast<T>(attrs.regularizer.l2)) {}

  T operator()(T g, T p) const { return g * scale_ + l1_ * static_cast<T>((p > 0) - (p < 0)) + l2_ * p; }

 private:
  T scale_;
  T l1_;
  T l2_;
};

}  // namespace weir::internal
