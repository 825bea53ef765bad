#pragma once
// The row math of softmax, the cross entropies and their gradients, for the CPU kernels and the
// CUDA kernels' device code alike, written for a team of threads per row (one on the CPU): the row
// maximum is taken out of the exponent for stability and the exponentials are summed in double.
#include <cmath>
#include <cstdint>

#include "kernels/functors/host_device.hpp"

namespace weir::internal {

/// Who computes a row: one thread, the whole row (the CPU kernels; a CUDA thread per column along a
/// strided axis). The CUDA kernels' teams (kernels/cuda/row_team.cuh: a warp or a block per row) have
/// the same members: a thread's Lane() takes elements Lane(), Lane() + kSize, ... of the row, and
/// Reduce combines a value over the team and gives it to every lane. Each lane reads back only what
/// it wrote itself, so a row needs no barrier beyond Reduce's.
struct SerialTeam {
  static constexpr int kSize = 1;
  WEIR_HOST_DEVICE static int Lane() { return 0; }
  template <typename T, typename Combine> WEIR_HOST_DEVICE static T Reduce(T value, Combine /*combine*/) { return value; }
};

struct Plus {
  template <typename T> WEIR_HOST_DEVICE T operator()(T a, T b) const { return a + b; }
};
/// The maximum as the rows take it: `b` replaces `a` only where it compares greater.
struct Larger {
  template <typename T> WEIR_HOST_DEVICE T operator()(T a, T b) const { return b > a ? b : a; }
};

/// The largest of n >= 1 elements `stride` apart.
WEIR_TEAM_EXEC_CHECK_DISABLE
template <typename Team = SerialTeam, typename T> WEIR_HOST_DEVICE T RowMax(const T* row, std::int64_t n, std::int64_t stride = 1) {
  T max = row[0];
  for (std::int64_t c = Team::Lane(); c < n; c += Team::kSize) max = row[c * stride] > max ? row[c * stride] : max;
  return Team::Reduce(max, Larger{});
}

/// logsumexp(row) − row[label]; `label` in [0, classes), classes > 0.
WEIR_TEAM_EXEC_CHECK_DISABLE
template <typename Team = SerialTeam, typename T>
WEIR_HOST_DEVICE T SparseCrossEntropyRow(const T* row, std::int64_t classes, std::int64_t label) {
  const T max = RowMax<Team>(row, classes);
  double sum = 0;
  for (std::int64_t c = Team::Lane(); c < classes; c += Team::kSize) sum += std::exp(static_cast<double>(row[c] - max));
  sum = Team::Reduce(sum, Plus{});
  return static_cast<T>(std::log(sum) - static_cast<double>(row[label] - max));
}

/// out = (softmax(row) − onehot(label)) · dy, the softmax recomputed in `out`.
WEIR_TEAM_EXEC_CHECK_DISABLE
template <typename Team = SerialTeam, typename T>
WEIR_HOST_DEVICE void SparseCrossEntropyGradRow(const T* row, std::int64_t classes, std::int64_t label, T dy, T* out) {
  const T max = RowMax<Team>(row, classes);
  double sum = 0;
  for (std::int64_t c = Team::Lane(); c < classes; c += Team::kSize) {
    const T e = std::exp(row[c] - max);
    out[c] = e;
    sum += e;
  }
  sum = Team::Reduce(sum, Plus{});
  const T scale = static_cast<T>(static_cast<double>(dy) / sum);
  for (std::int64_t c = Team::Lane(); c < classes; c += Team::kSize) out[c] = c == label ? out[c] * scale - dy : out[c] * scale;
}

/// log Σ e^row, in double, the row maximum taken out of the exponent.
WEIR_TEAM_EXEC_CHECK_DISABLE
template <typename Team = SerialTeam, typename T> WEIR_HOST_DEVICE double LogSumExp(const T* row, std::int64_t classes) {
  const double max = static_cast<double>(RowMax<Team>(row, classes));
  double sum = 0;
  for (std::int64_t c = Team::Lane(); c < classes; c += Team::kSize) sum += std::exp(static_cast<double>(row[c]) - max);
  return max + std::log(Team::Reduce(sum, Plus{}));
}

/// The dense softmax cross entropy of one row: Σ z (logsumexp(x) − x).
WEIR_TEAM_EXEC_CHECK_DISABLE
template <typename Team = SerialTeam, typename T>
WEIR_HOST_DEVICE T SoftmaxCrossEntropyRow(const T* z, const T* x, std::int64_t classes) {
  const double lse = LogSumExp<Team>(x, classes);
  double sum = 0;
  for (std::int64_t c = Team::Lane(); c < classes; c += Team::kSize) {
    sum += static_cast<double>(z[c]) * (lse - static_cast<double>(x[c]));
  }
  return static_cast<T>(Team::Reduce(sum, Plus{}));
}

/// Its gradient: dz = −log_softmax(x) dy, dx = softmax(x) Σz dy − z dy.
WEIR_TEAM_EXEC_CHECK_DISABLE
template <typename Team = SerialTeam, typename T>
WEIR_HOST_DEVICE void SoftmaxCrossEntropyGradRow(const T* z, const T* x, T dy, T* dz, T* dx, std::int64_t classes) {
  const double lse = LogSumExp<Team>(x, classes);
  double label_sum = 0;
  for (std::int64_t c = Team::Lane(); c < classes; c += Team::kSize) label_sum += static_cast<double>(z[c]);
  label_sum = Team::Reduce(label_sum, Plus{});
  const double g = static_cast<double>(dy);
  const double softmax_scale = label_sum * g;
  for (std::int64_t c = Team::Lane(); c < classes; c += Team::kSize) {
    const double log_softmax = static_cast<double>(x[c]) - lse;
    dz[c] = static_cast<T>(-log_softmax * g);
    dx[c] = static_cast<T>(std::exp(log_softmax) * softmax_scale - static_cast<double>(z[c]) * g);
  }
}

/// softmax along one axis of n >= 1 elements, `stride` apart (the axis' inner extent): out = e^(x − max) / Σ.
WEIR_TEAM_EXEC_CHECK_DISABLE
template <typename Team = SerialTeam, typename T>
WEIR_HOST_DEVICE void SoftmaxAlong(const T* in, T* out, std::int64_t n, std::int64_t stride) {
  const T max = RowMax<Team>(in, n, stride);
  double sum = 0;
  for (std::int64_t j = Team::Lane(); j < n; j += Team::kSize) {
    const T e = std::exp(in[j * stride] - max);
    out[j * stride] = e;
    sum += e;
  }
  const T scale = static_cast<T>(1.0 / Team::Reduce(sum, Plus{}));
  for (std::int64_t j = Team::Lane(); j < n; j += Team::kSize) out[j * stride] *= scale;
}

/// softmax's gradient along one axis from its output y: dx = y (dy − Σ dy·y).
WEIR_TEAM_EXEC_CHECK_DISABLE
template <typename Team = SerialTeam, typename T>
WEIR_HOST_DEVICE void SoftmaxGradAlong(const T* dy, const T* y, T* dx, std::int64_t n, std::int64_t stride) {
  double sum = 0;
  for (std::int64_t j = Team::Lane(); j < n; j += Team::kSize) sum += static_cast<double>(dy[j * stride]) * y[j * stride];
  const T dot = static_cast<T>(Team::Reduce(sum, Plus{}));
  for (std::int64_t j = Team::Lane(); j < n; j += Team::kSize) dx[j * stride] = y[j * stride] * (dy[j * stride] - dot);
}

}  // namespace weir::internal
