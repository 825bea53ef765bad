#pragma once
// The reduction walk shared by reduce_sum and reduce_mean. Size-1 axes are dropped and adjacent
// axes that are both reduced or both kept merged, so common cases become a row sum or a column sum.
#include <algorithm>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/intra_op_pool.hpp"
#include "common/tensor_meta.hpp"
#include "kernels/attrs/reduce_axes.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "kernels/functors/reduce.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {


/// x's axes after dropping size-1 axes and merging neighbours that are both reduced or both kept,
/// outer first: the merged dims, their contiguous input strides, and the output stride of each
/// kept axis (0 for reduced ones). Every reduction kernel walks x this way.
struct MergedReduction {
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> in_strides;
  std::vector<std::int64_t> out_strides;

  MergedReduction(const Shape& x, const ReduceAttrs& attrs) {
    const int rank = x.Rank();
    const std::vector<bool> reduced = ReducedAxesOf(x, attrs);
    std::vector<bool> merged_reduced;
    for (int i = 0; i < rank; ++i) {
      if (x[i] == 1) continue;
      const bool r = reduced[static_cast<std::size_t>(i)];
      if (!dims.empty() && merged_reduced.back() == r) {
        dims.back() *= x[i];
      } else {
        dims.push_back(x[i]);
        merged_reduced.push_back(r);
      }
    }
    if (dims.empty()) {  // one element
      dims.push_back(1);
      merged_reduced.push_back(true);
    }
    const std::size_t n = dims.size();
    in_strides.assign(n, 1);
    out_strides.assign(n, 0);
    std::int64_t out_stride = 1;
    for (std::size_t i = n; i-- > 0;) {
      if (i + 1 < n) in_strides[i] = in_strides[i + 1] * dims[i + 1];
      if (!merged_reduced[i]) {
        out_strides[i] = out_stride;
        out_stride *= dims[i];
      }
    }
  }
};

template <typename T> class Reduction {
 public:
  using Acc = ReduceAcc<T>;

  Reduction(const TensorMeta& input, const TensorMeta& output, const ReduceAttrs& attrs)
      : in_count_(input.shape.NumElements()), out_count_(output.shape.NumElements()) {
    const Shape& x = input.shape;
    const int rank = x.Rank();
    const std::vector<bool> reduced = ReducedAxesOf(x, attrs);
    for (int i = 0; i < rank; ++i) {
      if (reduced[static_cast<std::size_t>(i)]) reduced_count_ *= x[i];
    }
    MergedReduction merged(x, attrs);
    dims_ = std::move(merged.dims);
    in_strides_ = std::move(merged.in_strides);
    acc_strides_ = std::move(merged.out_strides);
    acc_.resize(static_cast<std::size_t>(out_count_));
    PlanColumnSum();
  }

  /// Elements reduced into each output.
  std::int64_t ReducedCount() const { return reduced_count_; }

  /// Sums x into per-output accumulators and writes fn(accumulator) to each output. The
  /// accumulators are members (no allocation here), so one Reduction runs one call at a time.
  template <typename Finish> void Run(const T* x, T* out, Finish finish) {
    std::fill(acc_.begin(), acc_.end(), Acc(0));
    if (!partials_.empty()) {
      SumColumnsInParallel(x);
    } else if (in_count_ != 0) {
      Accumulate(0, x, acc_.data());
    }
    for (std::int64_t i = 0; i < out_count_; ++i) out[i] = finish(acc_[static_cast<std::size_t>(i)]);
  }

 private:
  // A large sum over rows of a (rows, columns) matrix (a bias gradient over the batch, or over
  // N, H, W of NHWC): each intra-op thread sums a block of rows into its own partial row, then the
  // partials are added in a fixed order (so the result does not depend on timing).
  void PlanColumnSum() {
    const bool column_sum = dims_.size() == 2 && acc_strides_[0] == 0 && acc_strides_[1] == 1;
    if (!column_sum || in_count_ < kParallelElements || dims_[0] < 2) return;
    const int chunks = static_cast<int>(std::min<std::int64_t>(IntraOpThreads(), dims_[0]));
    if (chunks < 2) return;
    partials_.assign(static_cast<std::size_t>(chunks), std::vector<Acc>(static_cast<std::size_t>(dims_[1])));
  }

  void SumColumnsInParallel(const T* x) {
    const std::int64_t rows = dims_[0], columns = dims_[1];
    const int chunks = static_cast<int>(partials_.size());
    ParallelFor(chunks, [&](int c) {
      Acc* partial = partials_[static_cast<std::size_t>(c)].data();
      std::fill_n(partial, columns, Acc(0));
      for (std::int64_t r = ChunkBegin(rows, chunks, c); r < ChunkBegin(rows, chunks, c + 1); ++r) {
        const T* row = x + r * columns;
        for (std::int64_t i = 0; i < columns; ++i) partial[i] += static_cast<Acc>(row[i]);
      }
    });
    for (const std::vector<Acc>& partial : partials_) {
      for (std::int64_t i = 0; i < columns; ++i) acc_[static_cast<std::size_t>(i)] += partial[static_cast<std::size_t>(i)];
    }
  }

  void Accumulate(std::size_t axis, const T* x, Acc* acc) {
    const std::int64_t dim = dims_[axis];
    const std::int64_t in_stride = in_strides_[axis];
    const std::int64_t acc_stride = acc_strides_[axis];
    if (axis + 1 == dims_.size()) {
      // Innermost: a contiguous run summed into one accumulator, or added onto a row of them.
      if (acc_stride == 0) {
        Acc sum = 0;
        for (std::int64_t i = 0; i < dim; ++i) sum += static_cast<Acc>(x[i]);
        *acc += sum;
      } else {
        for (std::int64_t i = 0; i < dim; ++i) acc[i] += static_cast<Acc>(x[i]);
      }
      return;
    }
    for (std::int64_t i = 0; i < dim; ++i) Accumulate(axis + 1, x + i * in_stride, acc + i * acc_stride);
  }

  std::int64_t in_count_;
  std::int64_t out_count_;
  std::int64_t reduced_count_ = 1;
  std::vector<std::int64_t> dims_;         // merged input dims
  std::vector<std::int64_t> in_strides_;   // contiguous strides of the merged input
  std::vector<std::int64_t> acc_strides_;  // output strides of kept axes, 0 for reduced ones
  std::vector<Acc> acc_;
  std::vector<std::vector<Acc>> partials_;  // per intra-op thread; empty unless a large column sum
};

}  // namespace weir::internal
