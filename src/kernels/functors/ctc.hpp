#pragma once
// The math of ctc_loss for its CPU kernels and the CUDA kernels' device code (Graves et al. 2006, in
// log space): for example b, the extended target l' = blank, t1, blank, t2, ..., blank (2·S' + 1
// states for a target of length S'), the forward variables alpha_t(s) (log probability of the
// alignments of the first t + 1 steps ending in state s) and the backward ones beta_t(s) (of the
// steps from t on, starting in s; both count step t's emission), the loss -log p(target | x).
// log_probs is (T, N, C); alpha and beta are (N, T, 2·S + 1), -inf outside the example's lengths.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "kernels/functors/host_device.hpp"

namespace weir::internal {

struct CtcLossAttrs {
  /// The blank class, in [0, C).
  std::int64_t blank = 0;
  /// An infinite loss (no alignment fits the lengths) becomes 0, and so does its gradient.
  bool zero_infinity = false;
};

/// The sizes of one ctc_loss: steps T, batch N, classes C, longest target S.
struct CtcSizes {
  std::int64_t steps;
  std::int64_t batch;
  std::int64_t classes;
  std::int64_t target_length;
  WEIR_HOST_DEVICE std::int64_t States() const { return 2 * target_length + 1; }
  /// Positions of the checks an example makes (its input length, its target length, each target):
  /// example b's item k is b · Items() + k.
  WEIR_HOST_DEVICE std::int64_t Items() const { return target_length + 2; }
};

/// The bound of item k of an example's checks: its input length (k 0, at most T), its target length
/// (k 1, at most S), its target k - 2 (a class, below C; only the first target-length ones count).
WEIR_HOST_DEVICE inline std::int64_t CtcItemBound(const CtcSizes& sizes, std::int64_t k) {
  return k == 0 ? sizes.steps + 1 : k == 1 ? sizes.target_length + 1 : sizes.classes;
}

/// The error of a failed check at `position` (example · Items() + item) with `value`: the CPU's and
/// the GPU's kernels report it alike.
inline std::string CtcItemError(const CtcSizes& sizes, std::int64_t position, std::int64_t value) {
  const std::int64_t b = position / sizes.Items();
  const std::int64_t k = position % sizes.Items();
  const std::string what = k == 0   ? "input length " + std::to_string(value) + " is outside [0, " + std::to_string(sizes.steps) + "]"
                           : k == 1 ? "target length " + std::to_string(value) + " is outside [0, " +
                                          std::to_string(sizes.target_length) + "]"
                                    : "target " + std::to_string(value) + " at position " + std::to_string(k - 2) +
                                          " is outside [0, " + std::to_string(sizes.classes) + ")";
  return "[ctc_loss] example " + std::to_string(b) + ": " + what;
}

/// log(exp(a) + exp(b)) without overflow; -inf is the empty sum.
template <typename T> WEIR_HOST_DEVICE T LogAdd(T a, T b) {
  const T none = -std::numeric_limits<T>::infinity();
  if (a == none) return b;
  if (b == none) return a;
  const T high = a > b ? a : b;
  return high + std::log1p(std::exp(-(a > b ? a - b : b - a)));
}

/// One example's view of the inputs.
template <typename T, typename Index> struct CtcExample {
  const T* log_probs;   // (T, N, C)
  const Index* target;  // this example's row of targets (S entries)
  std::int64_t b;
  std::int64_t steps;   // its input length, in [0, T]
  std::int64_t length;  // its target length, in [0, S]
  std::int64_t blank;
  CtcSizes sizes;

  WEIR_HOST_DEVICE std::int64_t Label(std::int64_t s) const { return s % 2 == 0 ? blank : static_cast<std::int64_t>(target[s / 2]); }
  WEIR_HOST_DEVICE T LogProb(std::int64_t t, std::int64_t c) const {
    return log_probs[(t * sizes.batch + b) * sizes.classes + c];
  }
  /// Whether state s may be entered from s - 2 (skipping a blank between two different labels).
  WEIR_HOST_DEVICE bool Skips(std::int64_t s) const { return s > 1 && Label(s) != Label(s - 2); }
};

/// log p(target | x) from the example's alpha: the alignments ending in the last label or the blank
/// after it; with no steps, 0 for an empty target and -inf for any other.
template <typename T, typename Index> WEIR_HOST_DEVICE T CtcLogLikelihood(const CtcExample<T, Index>& e, const T* alpha) {
  if (e.steps == 0) return e.length == 0 ? T(0) : -std::numeric_limits<T>::infinity();
  const std::int64_t used = 2 * e.length + 1;
  const T* last = alpha + (e.steps - 1) * e.sizes.States();
  return used > 1 ? LogAdd(last[used - 1], last[used - 2]) : last[0];
}

/// The kernels' inputs (log_probs, targets, input_lengths, target_lengths), their sizes and the blank.
template <typename T, typename Index> struct CtcInputs {
  const T* log_probs;
  const Index* targets;
  const Index* input_lengths;
  const Index* target_lengths;
  CtcSizes sizes;
  std::int64_t blank;

  WEIR_HOST_DEVICE CtcExample<T, Index> Example(std::int64_t b) const {
    return {log_probs, targets + b * sizes.target_length, b, input_lengths[b], target_lengths[b], blank, sizes};
  }
};

/// Fills the example's alpha and beta ((T, 2·S + 1) each, this example's slices) and returns
/// log p(target | x); -inf when no alignment fits (the input shorter than the target needs, or no
/// steps for a non-empty target).
template <typename T, typename Index>
WEIR_HOST_DEVICE T CtcForwardBackward(const CtcExample<T, Index>& e, T* alpha, T* beta) {
  const T none = -std::numeric_limits<T>::infinity();
  const std::int64_t states = e.sizes.States();
  for (std::int64_t i = 0; i < e.sizes.steps * states; ++i) alpha[i] = beta[i] = none;
  const std::int64_t used = 2 * e.length + 1;
  if (e.steps == 0) return CtcLogLikelihood(e, alpha);
  alpha[0] = e.LogProb(0, e.blank);
  if (used > 1) alpha[1] = e.LogProb(0, e.Label(1));
  for (std::int64_t t = 1; t < e.steps; ++t) {
    const T* before = alpha + (t - 1) * states;
    for (std::int64_t s = 0; s < used; ++s) {
      T sum = before[s];
      if (s > 0) sum = LogAdd(sum, before[s - 1]);
      if (e.Skips(s)) sum = LogAdd(sum, before[s - 2]);
      alpha[t * states + s] = sum == none ? none : sum + e.LogProb(t, e.Label(s));
    }
  }
  const std::int64_t last = e.steps - 1;
  beta[last * states + used - 1] = e.LogProb(last, e.Label(used - 1));
  if (used > 1) beta[last * states + used - 2] = e.LogProb(last, e.Label(used - 2));
  for (std::int64_t t = last - 1; t >= 0; --t) {
    const T* after = beta + (t + 1) * states;
    for (std::int64_t s = 0; s < used; ++s) {
      T sum = after[s];
      if (s + 1 < used) sum = LogAdd(sum, after[s + 1]);
      if (s + 2 < used && e.Skips(s + 2)) sum = LogAdd(sum, after[s + 2]);
      beta[t * states + s] = sum == none ? none : sum + e.LogProb(t, e.Label(s));
    }
  }
  return CtcLogLikelihood(e, alpha);
}

/// An example's loss from its log likelihood: -log p, or 0 for an impossible one with zero_infinity.
template <typename T> WEIR_HOST_DEVICE T CtcLossOf(T log_likelihood, bool zero_infinity) {
  return zero_infinity && log_likelihood == -std::numeric_limits<T>::infinity() ? T(0) : -log_likelihood;
}

/// d(-log p) / d log_probs[t][b][c] times dloss: -exp(log Σ_{s: l'_s = c} alpha_t(s) beta_t(s) -
/// log_probs[t][b][c] - log p) (each path through (t, s) has step t's emission once), 0 past the
/// example's steps or for a class the target does not use. With zero_infinity, 0 where p is 0.
template <typename T, typename Index>
WEIR_HOST_DEVICE T CtcGradient(const CtcExample<T, Index>& e, const T* alpha, const T* beta, T dloss, std::int64_t t,
                               std::int64_t c, bool zero_infinity) {
  const T none = -std::numeric_limits<T>::infinity();
  if (t >= e.steps) return T(0);
  const T log_likelihood = CtcLogLikelihood(e, alpha);
  if (zero_infinity && log_likelihood == none) return T(0);
  const std::int64_t states = e.sizes.States();
  T through = none;
  for (std::int64_t s = 0; s < 2 * e.length + 1; ++s) {
    if (e.Label(s) == c) through = LogAdd(through, alpha[t * states + s] + beta[t * states + s]);
  }
  if (through == none && log_likelihood != none) return T(0);
  return -dloss * std::exp(through - e.LogProb(t, c) - log_likelihood);
}

}  // namespace weir::internal
