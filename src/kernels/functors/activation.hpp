#pragma once
// The math of relu, sigmoid and tanh and their gradients (which read the forward output y), for the
// CPU kernels and the CUDA kernels' device code alike.
#include <algorithm>
#include <cmath>

#include "kernels/functors/host_device.hpp"

namespace weir::internal {

struct ReluFn {
  // std::max(x, 0): NaN and -0 stay as they are.
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return x < T(0) ? T(0) : x; }
  // Load dy unconditionally and select (kernels/cpu/elementwise.hpp explains why).
  template <typename T> static WEIR_HOST_DEVICE T Grad(T dy, T y) { return y > T(0) ? dy : T(0); }
};

struct SigmoidFn {
  // exp is only taken of -|x|, so it never overflows for large |x|: 1 / (1 + e^-x) for x >= 0, the
  // equal e^x / (1 + e^x) otherwise.
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) {
    const T e = std::exp(-std::abs(x));
    return x >= T(0) ? T(1) / (T(1) + e) : e / (T(1) + e);
  }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T dy, T y) { return dy * y * (T(1) - y); }
};

struct TanhFn {
  template <typename T> static WEIR_HOST_DEVICE T Fwd(T x) { return std::tanh(x); }
  template <typename T> static WEIR_HOST_DEVICE T Grad(T dy, T y) { return dy * (T(1) - y * y); }
};

}  // namespace weir::internal
