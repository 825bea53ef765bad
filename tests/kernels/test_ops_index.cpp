// gather and unsorted_segment_sum (each the other's gradient), gather_nd and the scatter_nd family (each
// the others'), and where: hand-computed values along every axis, index shapes and dtypes, bad inputs,
// and finite-difference gradients (tests/gradient_check.hpp).
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <doctest/doctest.h>

#include "conformance.hpp"
#include "gradient_check.hpp"
#include "kernels/attrs/gather_attrs.hpp"
#include "kernels/attrs/nd_index_attrs.hpp"
#include "kernels/functors/sort.hpp"
#include "op_test_util.hpp"
#include "sbp_check.hpp"
#include "weir/weir.hpp"

using weir::Blob;
using weir::DType;
using weir::Shape;
using weir::Tensor;
using weir::internal::ArgSortAttrs;
using weir::internal::GatherAttrs;
using weir::internal::KernelError;
using weir::internal::ScatterNdAttrs;
using weir::internal::UnsortedSegmentSumAttrs;
using weir::testing::CheckConformance;
using weir::testing::CheckGradients;
using weir::testing::CheckSbpSignatures;
using weir::testing::Sample;
using weir::testing::Random;
using weir::testing::RunOp;

namespace {

// 0, 1, 2, ... in `shape`, as T.
template <typename T> Tensor Iota(const Shape& shape) {
  std::vector<T> values(static_cast<std::size_t>(shape.NumElements()));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<T>(i);
  return Tensor::FromVector<T>(shape, values);
}

}  // namespace

TEST_CASE("gather picks rows, columns and middle entries by indices of any shape") {
  const Tensor params = Iota<float>(Shape{3, 4});  // rows [0..3], [4..7], [8..11]
  const Tensor rows = Tensor::FromVector<std::int32_t>({4}, {2, 0, 2, 1});
  Tensor out = RunOp("gather", GatherAttrs{0}, {params, rows})[0];
  CHECK(out.GetShape() == Shape{4, 4});
  CHECK(out.ToVector<float>() == std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7});

  const Tensor columns = Tensor::FromVector<std::int64_t>({2, 2}, {3, 0, 1, 1});
  out = RunOp("gather", GatherAttrs{1}, {params, columns})[0];
  CHECK(out.GetShape() == Shape{3, 2, 2});
  CHECK(out.ToVector<float>() == std::vector<float>{3, 0, 1, 1, 7, 4, 5, 5, 11, 8, 9, 9});
  CHECK(RunOp("gather", GatherAttrs{-1}, {params, columns})[0].ToVector<float>() == out.ToVector<float>());

  // A middle axis of a rank-3 tensor, a scalar index (the axis goes away), other dtypes.
  const Tensor cube = Iota<std::int64_t>(Shape{2, 3, 2});
  out = RunOp("gather", GatherAttrs{1}, {cube, Tensor::Scalar<std::int32_t>(2)})[0];
  CHECK(out.GetShape() == Shape{2, 2});
  CHECK(out.ToVector<std::int64_t>() == std::vector<std::int64_t>{4, 5, 10, 11});
  const Tensor bytes = Tensor::FromVector<std::uint8_t>({3}, {7, 8, 9});
  CHECK(RunOp("gather", GatherAttrs{0}, {bytes, rows})[0].ToVector<std::uint8_t>() == std::vector<std::uint8_t>{9, 7, 9, 8});
  const Tensor wide = Iota<double>(Shape{2, 2});
  CHECK(RunOp("gather", GatherAttrs{0}, {wide, Tensor::FromVector<std::int32_t>({1}, {1})})[0].ToVector<double>() ==
        std::vector<double>{2, 3});

  // No indices: an empty output; an empty axis with no indices is fine too.
  CHECK(RunOp("gather", GatherAttrs{0}, {params, Tensor(Shape{0}, DType::kI32)})[0].GetShape() == Shape{0, 4});
  CHECK(RunOp("gather", GatherAttrs{1}, {Tensor(Shape{2, 0}, DType::kF32), Tensor(Shape{0}, DType::kI32)})[0].GetShape() ==
        Shape{2, 0});
}

TEST_CASE("gather rejects indices out of range and bad shapes, dtypes and axes, naming them") {
  const Tensor params = Iota<float>(Shape{3, 4});
  CHECK_THROWS_WITH_AS(RunOp("gather", GatherAttrs{0}, {params, Tensor::FromVector<std::int32_t>({3}, {0, 3, 1})}),
                       "[gather] index 3 at position 1 is outside [0, 3)", KernelError);
  CHECK_THROWS_WITH_AS(RunOp("gather", GatherAttrs{1}, {params, Tensor::FromVector<std::int64_t>({1}, {-1})}),
                       "[gather] index -1 at position 0 is outside [0, 4)", KernelError);
  CHECK_THROWS_WITH_AS(RunOp("gather", GatherAttrs{0}, {params, Tensor(Shape{2}, DType::kF32)}),
                       "[gather] expects i32 or i64 indices, got f32", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("gather", GatherAttrs{0}, {Tensor::Scalar<float>(1), Tensor(Shape{1}, DType::kI32)}),
                       "[gather] params must have at least one axis, got a scalar", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("gather", GatherAttrs{2}, {params, Tensor(Shape{1}, DType::kI32)}),
                       doctest::Contains("[gather] axis"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("gather", GatherAttrs{1}, {Tensor(Shape{2, 0}, DType::kF32), Tensor(Shape{1}, DType::kI32)}),
                       "[gather] params (2,0) has no entries along axis 1 to gather", std::invalid_argument);
}

TEST_CASE("unsorted_segment_sum adds each entry into its id's segment, zeros where no id points") {
  const Tensor data = Iota<float>(Shape{4, 2});  // rows (0,1) (2,3) (4,5) (6,7)
  const Tensor ids = Tensor::FromVector<std::int32_t>({4}, {2, 0, 2, 2});
  Tensor out = RunOp("unsorted_segment_sum", UnsortedSegmentSumAttrs{0, 4}, {data, ids})[0];
  CHECK(out.GetShape() == Shape{4, 2});
  CHECK(out.ToVector<float>() == std::vector<float>{2, 3, 0, 0, 10, 13, 0, 0});

  // Ids of rank 2 along axis 1 of a rank-3 tensor; integer data; i64 ids; axis from the end.
  const Tensor cube = Iota<std::int32_t>(Shape{2, 2, 2});
  const Tensor grid = Tensor::FromVector<std::int64_t>({2, 2}, {1, 1, 0, 1});
  out = RunOp("unsorted_segment_sum", UnsortedSegmentSumAttrs{1, 2}, {cube, grid})[0];
  CHECK(out.GetShape() == Shape{2, 2});
  CHECK(out.ToVector<std::int32_t>() == std::vector<std::int32_t>{2, 0 + 1 + 3, 6, 4 + 5 + 7});
  CHECK(RunOp("unsorted_segment_sum", UnsortedSegmentSumAttrs{-2, 2}, {cube, grid})[0].ToVector<std::int32_t>() ==
        out.ToVector<std::int32_t>());
  CHECK(RunOp("unsorted_segment_sum", UnsortedSegmentSumAttrs{0, 3}, {Tensor(Shape{0, 2}, DType::kF64), Tensor(Shape{0}, DType::kI32)})[0]
            .ToVector<double>() == std::vector<double>(6, 0.0));
}

TEST_CASE("unsorted_segment_sum rejects ids out of range and data that does not start with the ids' shape") {
  const Tensor data = Iota<float>(Shape{3, 2});
  CHECK_THROWS_WITH_AS(RunOp("unsorted_segment_sum", UnsortedSegmentSumAttrs{0, 2}, {data, Tensor::FromVector<std::int32_t>({3}, {0, 1, 2})}),
                       "[unsorted_segment_sum] segment id 2 at position 2 is outside [0, 2)", KernelError);
  CHECK_THROWS_WITH_AS(RunOp("unsorted_segment_sum", UnsortedSegmentSumAttrs{0, 2}, {data, Tensor(Shape{2}, DType::kI32)}),
                       "[unsorted_segment_sum] data (3,2) must have segment_ids' shape (2) from axis 0 on",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("unsorted_segment_sum", UnsortedSegmentSumAttrs{0, -1}, {data, Tensor(Shape{3}, DType::kI32)}),
                       "[unsorted_segment_sum] num_segments must be >= 0, got -1", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("unsorted_segment_sum", UnsortedSegmentSumAttrs{0, 2}, {data, Tensor(Shape{3}, DType::kF32)}),
                       "[unsorted_segment_sum] expects i32 or i64 segment_ids, got f32", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("unsorted_segment_sum", UnsortedSegmentSumAttrs{0, 2},
                             {Tensor(Shape{3}, DType::kU8), Tensor(Shape{3}, DType::kI32)}),
                       "[unsorted_segment_sum] expects f32, f64, f16, bf16, i32 or i64 data, got u8", std::invalid_argument);
}

TEST_CASE("gather and unsorted_segment_sum: gradients against finite differences") {
  weir::Session session;
  const Tensor rows = Tensor::FromVector<std::int32_t>({5}, {2, 0, 2, 1, 2});  // repeats: the gradient adds up
  CheckGradients(session, "gather_rows", {Random({3, 4}), rows},
                 [](const std::vector<Blob>& in) { return weir::Gather(in[0], in[1]); });
  CheckGradients(session, "gather_middle_axis", {Random({2, 3, 2}), Tensor::FromVector<std::int64_t>({2, 2}, {0, 2, 2, 2})},
                 [](const std::vector<Blob>& in) { return weir::Gather(in[0], in[1], 1); });
  CheckGradients(session, "unsorted_segment_sum", {Random({5, 3}), rows},
                 [](const std::vector<Blob>& in) { return weir::UnsortedSegmentSum(in[0], in[1], 4); });
  CheckGradients(session, "unsorted_segment_sum_axis1", {Random({2, 2, 2, 3}), Tensor::FromVector<std::int32_t>({2, 2}, {1, 0, 1, 1})},
                 [](const std::vector<Blob>& in) { return weir::UnsortedSegmentSum(in[0], in[1], 3, 1); });
}

// --- gather_nd and the scatter_nd family ------------------------------------------------------

TEST_CASE("gather_nd picks elements, rows and slices by tuples of indices of any shape") {
  const Tensor params = Iota<float>(Shape{3, 4});  // params[i][j] = 4i + j
  // Tuples of 2: elements; of 1: rows; indices of rank 3: the output keeps their leading axes.
  CHECK(RunOp("gather_nd", std::any(), {params, Tensor::FromVector<std::int32_t>({3, 2}, {0, 1, 2, 3, 1, 0})})[0]
            .ToVector<float>() == std::vector<float>{1, 11, 4});
  Tensor rows = RunOp("gather_nd", std::any(), {params, Tensor::FromVector<std::int64_t>({2, 1}, {2, 0})})[0];
  CHECK(rows.GetShape() == Shape{2, 4});
  CHECK(rows.ToVector<float>() == std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3});
  Tensor nested = RunOp("gather_nd", std::any(), {params, Tensor::FromVector<std::int32_t>({2, 1, 2}, {1, 1, 2, 2})})[0];
  CHECK(nested.GetShape() == Shape{2, 1});
  CHECK(nested.ToVector<float>() == std::vector<float>{5, 10});
  const Tensor cube = Iota<std::int64_t>(Shape{2, 2, 3});
  CHECK(RunOp("gather_nd", std::any(), {cube, Tensor::FromVector<std::int32_t>({1, 2}, {1, 0})})[0].ToVector<std::int64_t>() ==
        std::vector<std::int64_t>{6, 7, 8});
  // Tuples of 0 indices pick the whole tensor; no tuples, nothing.
  CHECK(RunOp("gather_nd", std::any(), {params, Tensor(Shape{2, 0}, DType::kI32)})[0].GetShape() == Shape{2, 3, 4});
  CHECK(RunOp("gather_nd", std::any(), {params, Tensor(Shape{0, 1}, DType::kI32)})[0].GetShape() == Shape{0, 4});
}

TEST_CASE("scatter_nd adds each update into its slice of zeros; tensor_scatter_nd_add and _update start from params") {
  const Tensor tuples = Tensor::FromVector<std::int32_t>({3, 1}, {2, 0, 2});  // row 2 twice
  const Tensor updates = Tensor::FromVector<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor out = RunOp("scatter_nd", ScatterNdAttrs{Shape{4, 2}}, {tuples, updates})[0];
  CHECK(out.GetShape() == Shape{4, 2});
  CHECK(out.ToVector<float>() == std::vector<float>{3, 4, 0, 0, 6, 8, 0, 0});
  const Tensor params = Iota<float>(Shape{4, 2});
  CHECK(RunOp("tensor_scatter_nd_add", std::any(), {params, tuples, updates})[0].ToVector<float>() ==
        std::vector<float>{3, 5, 2, 3, 10, 13, 6, 7});
  const Tensor distinct = Tensor::FromVector<std::int64_t>({2, 1}, {3, 0});
  CHECK(RunOp("tensor_scatter_nd_update", std::any(), {params, distinct, Tensor::FromVector<float>({2, 2}, {9, 9, 8, 8})})[0]
            .ToVector<float>() == std::vector<float>{8, 8, 2, 3, 4, 5, 9, 9});
  // Elements by tuples of 2, integers; a replacement of any dtype (bytes).
  CHECK(RunOp("scatter_nd", ScatterNdAttrs{Shape{2, 2}}, {Tensor::FromVector<std::int32_t>({2, 2}, {1, 0, 1, 0}),
                                                         Tensor::FromVector<std::int64_t>({2}, {5, 7})})[0]
            .ToVector<std::int64_t>() == std::vector<std::int64_t>{0, 0, 12, 0});
  CHECK(RunOp("tensor_scatter_nd_update", std::any(),
              {Tensor::FromVector<std::uint8_t>({3}, {1, 2, 3}), Tensor::FromVector<std::int32_t>({1, 1}, {1}),
               Tensor::FromVector<std::uint8_t>({1}, {9})})[0]
            .ToVector<std::uint8_t>() == std::vector<std::uint8_t>{1, 9, 3});
}

TEST_CASE("gather_nd and the scatters reject indices out of range and bad shapes and dtypes, naming them") {
  const Tensor params = Iota<float>(Shape{3, 4});
  CHECK_THROWS_WITH_AS(RunOp("gather_nd", std::any(), {params, Tensor::FromVector<std::int32_t>({2, 2}, {0, 1, 2, 4})}),
                       "[gather_nd] index 4 at position 3 of indices is outside [0, 4)", KernelError);
  CHECK_THROWS_WITH_AS(RunOp("gather_nd", std::any(), {params, Tensor::FromVector<std::int64_t>({1, 1}, {-1})}),
                       "[gather_nd] index -1 at position 0 of indices is outside [0, 3)", KernelError);
  CHECK_THROWS_WITH_AS(RunOp("gather_nd", std::any(), {params, Tensor(Shape{2, 3}, DType::kI32)}),
                       "[gather_nd] indices (2,3) hold tuples of 3 indices, but the indexed tensor (3,4) has 2 axes",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("gather_nd", std::any(), {params, Tensor(Shape{2, 1}, DType::kF32)}),
                       "[gather_nd] expects i32 or i64 indices, got f32", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("gather_nd", std::any(), {params, Tensor::Scalar<std::int32_t>(0)}),
                       "[gather_nd] indices must have at least one axis (its last holds the tuples), got a scalar",
                       std::invalid_argument);
  const Tensor tuples = Tensor::FromVector<std::int32_t>({2, 1}, {0, 3});
  // Nothing is written when a tuple is out of range: the output is all zeros or params, never half.
  CHECK_THROWS_WITH_AS(RunOp("scatter_nd", ScatterNdAttrs{Shape{3, 2}}, {tuples, Random({2, 2})}),
                       "[scatter_nd] index 3 at position 1 of indices is outside [0, 3)", KernelError);
  CHECK_THROWS_WITH_AS(RunOp("tensor_scatter_nd_update", std::any(), {Random({3, 2}), tuples, Random({2, 2})}),
                       "[tensor_scatter_nd_update] index 3 at position 1 of indices is outside [0, 3)", KernelError);
  CHECK_THROWS_WITH_AS(RunOp("scatter_nd", ScatterNdAttrs{Shape{4, 2}}, {tuples, Random({2, 3})}),
                       "[scatter_nd] updates must have the shape indices[:-1] + out[K:] = (2,2) (indices (2,1), out (4,2)), "
                       "got (2,3)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("tensor_scatter_nd_add", std::any(), {Tensor(Shape{4, 2}, DType::kU8), tuples, Tensor(Shape{2, 2}, DType::kU8)}),
                       "[tensor_scatter_nd_add] expects f32, f64, f16, bf16, i32 or i64 params, got u8", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("tensor_scatter_nd_update", std::any(), {Random({4, 2}), tuples, Tensor(Shape{2, 2}, DType::kF32)}),
                       "[tensor_scatter_nd_update] updates dtype f32 differs from params' f64", std::invalid_argument);
}

TEST_CASE("gather_nd and the scatter_nd family: gradients against finite differences") {
  weir::Session session;
  const Tensor pairs = Tensor::FromVector<std::int32_t>({4, 2}, {2, 1, 0, 3, 2, 1, 1, 0});  // (2, 1) twice: adds up
  CheckGradients(session, "gather_nd_elements", {Random({3, 4}), pairs},
                 [](const std::vector<Blob>& in) { return weir::GatherNd(in[0], in[1]); });
  CheckGradients(session, "gather_nd_slices", {Random({3, 2, 2}), Tensor::FromVector<std::int64_t>({2, 1, 1}, {2, 0})},
                 [](const std::vector<Blob>& in) { return weir::GatherNd(in[0], in[1]); });
  CheckGradients(session, "scatter_nd", {pairs, Random({4})},
                 [](const std::vector<Blob>& in) { return weir::ScatterNd(in[0], in[1], Shape{3, 4}); });
  CheckGradients(session, "tensor_scatter_nd_add", {Random({3, 4}), pairs, Random({4})},
                 [](const std::vector<Blob>& in) { return weir::TensorScatterNdAdd(in[0], in[1], in[2]); });
  const Tensor distinct = Tensor::FromVector<std::int32_t>({2, 1}, {2, 0});
  CheckGradients(session, "tensor_scatter_nd_update", {Random({3, 4}), distinct, Random({2, 4})},
                 [](const std::vector<Blob>& in) { return weir::TensorScatterNdUpdate(in[0], in[1], in[2]); });
}

TEST_CASE("gather_nd and the scatter_nd family: the CUDA kernels against the CPU's, and every SBP signature") {
  // Tuples of 1, 2 and every index (whole elements), 2-D indices, none, and more than a block of
  // threads; gather_nd in every dtype, the sums in the four numeric ones. Indices drawn in [0, bound):
  // the indexed axes are at least bound long. A replacement's tuples are distinct (of repeated ones,
  // the CPU's last wins, the GPU's any).
  struct Tuples {
    Shape tensor;   // the indexed tensor: gather_nd's params, the scatters' output
    Shape indices;  // its last axis: K
    std::int64_t bound;
  };
  std::vector<Sample> samples;
  for (const Tuples& t : {Tuples{Shape{5, 3}, Shape{7, 1}, 5}, Tuples{Shape{4, 4, 3}, Shape{2, 3, 2}, 4},
                          Tuples{Shape{3, 3}, Shape{4, 2}, 3}, Tuples{Shape{4, 2}, Shape{0, 1}, 4},
                          Tuples{Shape{300, 8}, Shape{500, 1}, 300}}) {
    const Shape side = weir::internal::TupleSideShape(t.tensor, t.indices);
    for (DType index : {DType::kI32, DType::kI64}) {
      for (DType dtype : weir::kAllDTypes) {
        samples.push_back({"gather_nd", std::any(), {{t.tensor, dtype}, {t.indices, index}}, {{side, dtype}}, false, t.bound});
      }
      for (DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
        samples.push_back({"scatter_nd", ScatterNdAttrs{t.tensor}, {{t.indices, index}, {side, dtype}}, {{t.tensor, dtype}},
                           false, t.bound});
        samples.push_back({"tensor_scatter_nd_add", std::any(), {{t.tensor, dtype}, {t.indices, index}, {side, dtype}},
                           {{t.tensor, dtype}}, false, t.bound});
      }
    }
  }
  for (const Tuples& t : {Tuples{Shape{5, 3}, Shape{4, 1}, 5}, Tuples{Shape{0, 3}, Shape{0, 1}, 0},
                          Tuples{Shape{600, 2}, Shape{300, 1}, 600}}) {
    const Shape side = weir::internal::TupleSideShape(t.tensor, t.indices);
    for (DType index : {DType::kI32, DType::kI64}) {
      for (DType dtype : weir::kAllDTypes) {
        Sample sample{"tensor_scatter_nd_update", std::any(), {{t.tensor, dtype}, {t.indices, index}, {side, dtype}},
                      {{t.tensor, dtype}}, false, t.bound};
        sample.distinct = 1;
        samples.push_back(std::move(sample));
      }
    }
  }
  CheckConformance(samples, 41);

  // Tuples of 1 and 2 indices, and their gradients, split over 2 and 3 devices.
  weir::JobBuilder builder("tuples", weir::JobType::kPredict);
  Blob x = builder.Placeholder("x", Shape{6, 4, 3});
  Blob pairs = builder.Placeholder("pairs", Shape{6, 2}, DType::kI32);
  Blob rows = builder.Placeholder("rows", Shape{6, 1}, DType::kI32);
  Blob picked = weir::GatherNd(x, pairs);  // (6, 3)
  Blob scattered = weir::ScatterNd(rows, picked, Shape{4, 3});
  Blob flat = weir::Reshape(x, {{6, 12}});
  Blob added = weir::TensorScatterNdAdd(flat, rows, flat);
  Blob replaced = weir::TensorScatterNdUpdate(flat, weir::Slice(rows, {.start = {0, 0}, .stop = {1, 1}, .step = {1, 1}}),
                                              weir::Slice(flat, {.start = {2, 0}, .stop = {3, 12}, .step = {1, 1}}));
  Blob all = weir::Add(weir::Add(weir::ReduceSum(scattered), weir::ReduceSum(added)), weir::ReduceSum(replaced));
  builder.Output("all", all);
  builder.Output("dx", weir::Gradients(all, {x})[0]);
  const std::set<std::string> checked = CheckSbpSignatures(builder.Build());
  for (const char* op : {"gather_nd", "scatter_nd", "tensor_scatter_nd_add", "tensor_scatter_nd_update"}) CHECK(checked.count(op) == 1);
}

// --- argsort -----------------------------------------------------------------------------------

TEST_CASE("argsort orders each row ascending or descending, ties by index, NaN as the largest") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = Tensor::FromVector<float>({2, 5}, {3, 1, nan, 1, -2, 0, 0, 5, -1, 0});
  Tensor up = RunOp("argsort", ArgSortAttrs{false}, {x})[0];
  CHECK(up.GetDType() == DType::kI32);
  CHECK(up.ToVector<std::int32_t>() == std::vector<std::int32_t>{4, 1, 3, 0, 2, 3, 0, 1, 4, 2});
  CHECK(RunOp("argsort", ArgSortAttrs{true}, {x})[0].ToVector<std::int32_t>() ==
        std::vector<std::int32_t>{2, 0, 1, 3, 4, 2, 0, 1, 4, 3});
  CHECK(RunOp("argsort", ArgSortAttrs{true}, {Tensor::FromVector<std::int64_t>({4}, {7, -3, 7, 9})})[0]
            .ToVector<std::int32_t>() == std::vector<std::int32_t>{3, 0, 2, 1});
  CHECK(RunOp("argsort", ArgSortAttrs{false}, {Tensor(Shape{3, 0}, DType::kF64)})[0].GetShape() == Shape{3, 0});
  CHECK_THROWS_WITH_AS(RunOp("argsort", ArgSortAttrs{false}, {Tensor(Shape{2}, DType::kU8)}),
                       "[argsort] expects an f32, f64, f16, bf16, i32 or i64 input, got u8", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("argsort", ArgSortAttrs{false}, {Tensor::Scalar<float>(1)}),
                       "[argsort] x must have at least one axis, got a scalar", std::invalid_argument);
}

TEST_CASE("argsort: the CUDA kernel against the CPU's, and its SBP signatures") {
  // Both directions, with many ties (each row's order must come out the same on both).
  std::vector<Sample> samples;
  for (const Shape& shape : {Shape{7, 13}, Shape{1}, Shape{0, 5}, Shape{1000, 3}, Shape{3, 600}}) {
    for (DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
      for (bool descending : {false, true}) {
        samples.push_back({"argsort", ArgSortAttrs{descending}, {{shape, dtype}}, {{shape, DType::kI32}}, false, 5, true});
      }
    }
  }
  CheckConformance(samples, 43);
  weir::JobBuilder builder("order", weir::JobType::kPredict);
  builder.Output("order", weir::ArgSort(builder.Placeholder("x", Shape{6, 12}), true));
  CHECK(CheckSbpSignatures(builder.Build()).count("argsort") == 1);
}

// --- where ----------------------------------------------------------------------------------

TEST_CASE("where takes x where the condition holds and y elsewhere, all three broadcast") {
  // condition (3, 1), x (1, 4), y a scalar.
  const Tensor condition = Tensor::FromVector<std::int8_t>({3, 1}, {1, 0, 1});
  const Tensor x = Tensor::FromVector<float>({1, 4}, {1, 2, 3, 4});
  const Tensor y = Tensor::Scalar<float>(-1);
  Tensor out = RunOp("where", {}, {condition, x, y})[0];
  CHECK(out.GetShape() == Shape{3, 4});
  CHECK(out.ToVector<float>() == std::vector<float>{1, 2, 3, 4, -1, -1, -1, -1, 1, 2, 3, 4});
  // Any nonzero condition takes x; bool, i32 and i64 conditions; integer and byte values.
  CHECK(RunOp("where", {}, {Tensor::FromVector<std::int32_t>({3}, {-5, 0, 7}), Tensor::FromVector<std::int64_t>({3}, {1, 2, 3}),
                            Tensor::FromVector<std::int64_t>({3}, {10, 20, 30})})[0]
            .ToVector<std::int64_t>() == std::vector<std::int64_t>{1, 20, 3});
  Tensor flags(Shape{2}, DType::kBool);
  static_cast<std::uint8_t*>(flags.RawData())[1] = 1;
  CHECK(RunOp("where", {}, {flags, Tensor::FromVector<std::uint8_t>({2}, {1, 2}), Tensor::FromVector<std::uint8_t>({2}, {3, 4})})[0]
            .ToVector<std::uint8_t>() == std::vector<std::uint8_t>{3, 2});
  CHECK(RunOp("where", {}, {Tensor::Scalar<std::int64_t>(0), Tensor::FromVector<double>({2}, {1, 2}),
                            Tensor::FromVector<double>({2}, {3, 4})})[0]
            .ToVector<double>() == std::vector<double>{3, 4});
}

TEST_CASE("where rejects float conditions, mixed dtypes and shapes that do not broadcast, naming them") {
  const Tensor x(Shape{2, 3}, DType::kF32);
  CHECK_THROWS_WITH_AS(RunOp("where", {}, {Tensor(Shape{2, 3}, DType::kF32), x, x}),
                       "[where] expects an i8, u8, bool, i32 or i64 condition, got f32", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("where", {}, {Tensor(Shape{2, 3}, DType::kI8), x, Tensor(Shape{2, 3}, DType::kF64)}),
                       "[where] x and y dtypes differ: f32 vs f64", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("where", {}, {Tensor(Shape{4}, DType::kI8), x, x}), doctest::Contains("[where]"),
                       std::invalid_argument);
}

TEST_CASE("where: gradients against finite differences, to x where the condition holds, to y elsewhere") {
  weir::Session session;
  const Tensor condition = Tensor::FromVector<std::int32_t>({2, 3}, {1, 0, 0, 1, 1, 0});
  CheckGradients(session, "where", {condition, Random({2, 3}), Random({2, 3})},
                 [](const std::vector<Blob>& in) { return weir::Where(in[0], in[1], in[2]); });
  // x broadcast along the rows and y a scalar: their gradients sum over what they were broadcast to.
  CheckGradients(session, "where_broadcast", {condition, Random({3}), Random({})},
                 [](const std::vector<Blob>& in) { return weir::Where(in[0], in[1], in[2]); });
}

TEST_CASE("categorical_ordinal_encode numbers keys 1, 2, ... in the order first seen, across calls, until the table is full") {
  auto check = [](auto zero) {
    using T = decltype(zero);
    const DType dtype = std::is_same_v<T, std::int32_t> ? DType::kI32 : DType::kI64;
    CAPTURE(dtype);
    weir::JobBuilder builder("encode");
    const Blob keys = builder.Placeholder("keys", Shape{5}, dtype);
    const Blob table = builder.Variable("table", {.shape = Shape{2 * 4}, .dtype = dtype, .trainable = false});
    const Blob size = builder.Variable("size", {.shape = Shape{1}, .dtype = dtype, .trainable = false});
    builder.Output("ordinals", weir::CategoricalOrdinalEncode(table, size, keys));
    const weir::Job job = builder.Build();
    weir::Session session;
    auto encode = [&](std::vector<T> values) {
      return session.Call(job, {Tensor::FromVector<T>(Shape{5}, std::move(values))})[0].template ToVector<T>();
    };
    // Negative keys, 0, and keys far apart; a repeat within a call and across calls.
    CHECK(encode({-7, 0, -7, std::numeric_limits<T>::max(), 0}) == std::vector<T>{1, 2, 1, 3, 2});
    CHECK(encode({0, 42, -7, 42, 0}) == std::vector<T>{2, 4, 1, 4, 2});
    CHECK(session.GetVariable("size").template ToVector<T>() == std::vector<T>{4});
    // Capacity 4: a fifth key fails the call and names it; the four known keys still encode.
    CHECK_THROWS_WITH(encode({0, 42, 5, 1, 1}),
                      doctest::Contains("[categorical_ordinal_encode] key 5 is new and the table is full: all 4 ordinals are given"));
    CHECK(encode({42, 42, 0, -7, std::numeric_limits<T>::max()}) == std::vector<T>{4, 4, 2, 1, 3});
  };
  check(std::int32_t{0});
  check(std::int64_t{0});
  CHECK_THROWS_WITH_AS(RunOp("categorical_ordinal_encode", std::any{},
                             {Tensor::FromVector<std::int32_t>(Shape{3}, {0, 0, 0}), Tensor::FromVector<std::int32_t>(Shape{1}, {0}),
                              Tensor::FromVector<std::int32_t>(Shape{2}, {1, 2})}),
                       "[categorical_ordinal_encode] table must be one-dimensional with 2 x capacity entries (capacity >= 1), got (3)",
                       std::invalid_argument);
}
