#pragma once
// The row math of the sparse softmax cross entropy and its gradient, for the CPU kernels and the
// CUDA kernels' device code alike: the row maximum is taken out of the exponent for stability and
// the exponentials are summed in double.
#include <cmath>
#include <cstdint>

#include "kernels/functors/host_device.hpp"

namespace weir::internal {

template <typename T> WEIR_HOST_DEVICE T RowMax(const T* row, std::int64_t classes) {
  T max = row[0];
  for (std::int64_t c = 1; c < classes; ++c) max = row[c] > max ? row[c] : max;
  return max;
}

/// logsumexp(row) − row[label]; `label` in [0, classes), classes > 0.
template <typename T> WEIR_HOST_DEVICE T SparseCrossEntropyRow(const T* row, std::int64_t classes, std::int64_t label) {
  const T max = RowMax(row, classes);
  double sum = 0;
  for (std::int64_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(row[c] - max));
  return static_cast<T>(std::log(sum) - static_cast<double>(row[label] - max));
}

/// out = (softmax(row) − onehot(label)) · dy, the softmax recomputed in `out`.
template <typename T>
WEIR_HOST_DEVICE void SparseCrossEntropyGradRow(const T* row, std::int64_t classes, std::int64_t label, T dy, T* out) {
  const T max = RowMax(row, classes);
  double sum = 0;
  for (std::int64_t c = 0; c < classes; ++c) {
    const T e = std::exp(row[c] - max);
    out[c] = e;
    sum += e;
  }
  const T scale = static_cast<T>(static_cast<double>(dy) / sum);
  for (std::int64_t c = 0; c < classes; ++c) out[c] *= scale;
  out[label] -= dy;
}

/// log Σ e^row, in double, the row maximum taken out of the exponent.
template <typename T> WEIR_HOST_DEVICE double LogSumExp(const T* row, std::int64_t classes) {
  const double max = static_cast<double>(RowMax(row, classes));
  double sum = 0;
  for (std::int64_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(row[c]) - max);
  return max + std::log(sum);
}

/// The dense softmax cross entropy of one row: Σ z (logsumexp(x) − x).
template <typename T> WEIR_HOST_DEVICE T SoftmaxCrossEntropyRow(const T* z, const T* x, std::int64_t classes) {
  const double lse = LogSumExp(x, classes);
  double sum = 0;
  for (std::int64_t c = 0; c < classes; ++c) sum += static_cast<double>(z[c]) * (lse - static_cast<double>(x[c]));
  return static_cast<T>(sum);
}

/// Its gradient: dz = −log_softmax(x) dy, dx = softmax(x) Σz dy − z dy.
template <typename T>
WEIR_HOST_DEVICE void SoftmaxCrossEntropyGradRow(const T* z, const T* x, T dy, T* dz, T* dx, std::int64_t classes) {
  const double lse = LogSumExp(x, classes);
  double label_sum = 0;
  for (std::int64_t c = 0; c < classes; ++c) label_sum += static_cast<double>(z[c]);
  const double g = static_cast<double>(dy);
  const double softmax_scale = label_sum * g;
  for (std::int64_t c = 0; c < classes; ++c) {
    const double log_softmax = static_cast<double>(x[c]) - lse;
    dz[c] = static_cast<T>(-log_softmax * g);
    dx[c] = static_cast<T>(std::exp(log_softmax) * softmax_scale - static_cast<double>(z[c]) * g);
  }
}

/// softmax along one axis of n elements, `stride` apart (the axis' inner extent): out = e^(x − max) / Σ.
template <typename T> WEIR_HOST_DEVICE void SoftmaxAlong(const T* in, T* out, std::int64_t n, std::int64_t stride) {
  T max = in[0];
  for (std::int64_t j = 1; j < n; ++j) max = in[j * stride] > max ? in[j * stride] : max;
  double sum = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    const T e = std::exp(in[j * stride] - max);
    out[j * stride] = e;
    sum += e;
  }
  const T scale = static_cast<T>(1.0 / sum);
  for (std::int64_t j = 0; j < n; ++j) out[j * stride] *= scale;
}

/// softmax's gradient along one axis from its output y: dx = y (dy − Σ dy·y).
template <typename T>
WEIR_HOST_DEVICE void SoftmaxGradAlong(const T* dy, const T* y, T* dx, std::int64_t n, std::int64_t stride) {
  double sum = 0;
  for (std::int64_t j = 0; j < n; ++j) sum += static_cast<double>(dy[j * stride]) * y[j * stride];
  const T dot = static_cast<T>(sum);
  for (std::int64_t j = 0; j < n; ++j) dx[j * stride] = y[j * stride] * (dy[j * stride] - dot);
}

}  // namespace weir::internal
