#pragma once
// The row math of layer_norm and its gradient, for the CPU kernels and the CUDA kernels' device code
// alike, written for a team of threads per row (kernels/functors/softmax.hpp's SerialTeam on the CPU,
// kernels/cuda/row_team.cuh's warps and blocks on a GPU). Sums run in double, the variance about the
// mean (two passes), so that rows of large values keep their precision.
#include <cmath>
#include <cstdint>

#include "kernels/functors/host_device.hpp"
#include "kernels/functors/softmax.hpp"

namespace weir::internal {

/// One row of n >= 1 elements: y = (x − mean)·inv with inv = 1/√(variance + epsilon), the biased
/// variance; the row's mean and inv written by its first lane.
WEIR_TEAM_EXEC_CHECK_DISABLE
template <typename Team = SerialTeam, typename T>
WEIR_HOST_DEVICE void LayerNormRow(const T* x, T* y, T* mean_out, T* inv_out, std::int64_t n, double epsilon) {
  double sum = 0;
  for (std::int64_t c = Team::Lane(); c < n; c += Team::kSize) sum += static_cast<double>(x[c]);
  const double mean = Team::Reduce(sum, Plus{}) / static_cast<double>(n);
  double squares = 0;
  for (std::int64_t c = Team::Lane(); c < n; c += Team::kSize) {
    const double centered = static_cast<double>(x[c]) - mean;
    squares += centered * centered;
  }
  const double inv = 1.0 / std::sqrt(Team::Reduce(squares, Plus{}) / static_cast<double>(n) + epsilon);
  for (std::int64_t c = Team::Lane(); c < n; c += Team::kSize) y[c] = static_cast<T>((static_cast<double>(x[c]) - mean) * inv);
  if (Team::Lane() == 0) {
    *mean_out = static_cast<T>(mean);
    *inv_out = static_cast<T>(inv);
  }
}

/// Its gradient for one row from the saved statistics: with x̂ = (x − mean)·inv,
/// dx = inv·(dy − mean(dy) − x̂·mean(dy·x̂)).
WEIR_TEAM_EXEC_CHECK_DISABLE
template <typename Team = SerialTeam, typename T>
WEIR_HOST_DEVICE void LayerNormGradRow(const T* dy, const T* x, T mean, T inv, T* dx, std::int64_t n) {
  const double m = static_cast<double>(mean), s = static_cast<double>(inv);
  double dy_sum = 0, dy_normalized_sum = 0;
  for (std::int64_t c = Team::Lane(); c < n; c += Team::kSize) {
    const double g = static_cast<double>(dy[c]);
    dy_sum += g;
    dy_normalized_sum += g * (static_cast<double>(x[c]) - m) * s;
  }
  const double dy_mean = Team::Reduce(dy_sum, Plus{}) / static_cast<double>(n);
  const double dy_normalized_mean = Team::Reduce(dy_normalized_sum, Plus{}) / static_cast<double>(n);
  for (std::int64_t c = Team::Lane(); c < n; c += Team::kSize) {
    const double normalized = (static_cast<double>(x[c]) - m) * s;
    dx[c] = static_cast<T>(s * (static_cast<double>(dy[c]) - dy_mean - normalized * dy_normalized_mean));
  }
}

}  // namespace weir::internal
