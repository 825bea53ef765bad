#pragma once
// A contiguous output gathered from a strided view of the input: the output's dims with, for each,
// the input's element stride along it (0 where the input is broadcast). Size-1 axes are dropped and
// neighbours that stay contiguous (or stay broadcast) in the input are merged once, at set-up, so
// e.g. (N,C,H,W)->(N,H,W,C) runs as a 3-D copy and a repeated row as one copy per row.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace weir::internal {

/// Moves bits only, so T is an unsigned integer of the element's size.
template <typename T> class StridedCopy {
 public:
  StridedCopy(const std::vector<std::int64_t>& out_dims, const std::vector<std::int64_t>& in_strides) {
    for (std::size_t i = 0; i < out_dims.size(); ++i) {
      const std::int64_t dim = out_dims[i];
      const std::int64_t stride = in_strides[i];
      count_ *= dim;
      if (dim == 1) continue;
      if (!dims_.empty() && in_strides_.back() == stride * dim) {
        dims_.back() *= dim;
        in_strides_.back() = stride;
      } else {
        dims_.push_back(dim);
        in_strides_.push_back(stride);
      }
    }
    out_strides_.assign(dims_.size(), 1);
    for (int i = static_cast<int>(dims_.size()) - 2; i >= 0; --i) out_strides_[i] = out_strides_[i + 1] * dims_[i + 1];
  }

  void Run(const T* x, T* y) const {
    if (count_ == 0) return;
    if (dims_.empty()) {  // one element
      y[0] = x[0];
    } else if (dims_.size() == 1 && in_strides_[0] == 1) {  // nothing moved: contiguous
      std::memcpy(y, x, static_cast<std::size_t>(count_) * sizeof(T));
    } else {
      Copy(0, x, y);
    }
  }

 private:
  void Copy(std::size_t axis, const T* x, T* y) const {
    const std::int64_t dim = dims_[axis];
    const std::int64_t stride = in_strides_[axis];
    if (axis + 1 == dims_.size()) {
      if (stride == 0) {
        std::fill(y, y + dim, x[0]);
      } else {
        for (std::int64_t i = 0; i < dim; ++i) y[i] = x[i * stride];
      }
      return;
    }
    const std::int64_t out_stride = out_strides_[axis];
    for (std::int64_t i = 0; i < dim; ++i) Copy(axis + 1, x + i * stride, y + i * out_stride);
  }

  std::int64_t count_ = 1;
  std::vector<std::int64_t> dims_;         // merged output dims
  std::vector<std::int64_t> in_strides_;   // input element stride along each merged axis (0: broadcast)
  std::vector<std::int64_t> out_strides_;  // contiguous strides of the merged output
};

}  // namespace weir::internal
