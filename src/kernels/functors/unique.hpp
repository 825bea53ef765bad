#pragma once
// unique_with_counts' values, for the CPU kernel and the CUDA kernel's device code alike: the distinct
// values of x in ascending order (kernels/functors/sort.hpp's order: a NaN counts as the largest), two
// values being one when neither sorts before the other (every NaN one value, -0 and 0 one value), each
// shown as its first occurrence in x.
#include <cstdint>

#include "kernels/functors/argmax.hpp"
#include "kernels/functors/host_device.hpp"

namespace weir::internal {

template <typename T> WEIR_HOST_DEVICE bool SameValue(T a, T b) { return !Beats(a, b) && !Beats(b, a); }

/// Whether x[i] is the first occurrence of its value among x[0..i].
template <typename T> WEIR_HOST_DEVICE bool FirstOccurrence(const T* x, std::int64_t i) {
  for (std::int64_t j = 0; j < i; ++j) {
    if (SameValue(x[j], x[i])) return false;
  }
  return true;
}

/// How many of the n elements x[j] with first[j] set have a value that `a` sorts before (`before`) or
/// after (!`before`): with first marking first occurrences, the distinct values below or above `a`.
template <typename T>
WEIR_HOST_DEVICE std::int64_t CountDistinct(const T* x, const bool* first, std::int64_t n, T a, bool before) {
  std::int64_t count = 0;
  for (std::int64_t j = 0; j < n; ++j) count += first[j] && (before ? Beats(a, x[j]) : Beats(x[j], a)) ? 1 : 0;
  return count;
}

/// How many of the n elements have value `a`.
template <typename T> WEIR_HOST_DEVICE std::int64_t Occurrences(const T* x, std::int64_t n, T a) {
  std::int64_t count = 0;
  for (std::int64_t j = 0; j < n; ++j) count += SameValue(x[j], a) ? 1 : 0;
  return count;
}

}  // namespace weir::internal
