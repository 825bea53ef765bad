// Starter ops that work along axes: softmax, reduce_sum, reduce_mean, argmax, and
// sparse_softmax_cross_entropy; layer_norm's rows.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include "kernels/attrs/layer_norm_attrs.hpp"
#include "op_test_util.hpp"
#include "weir/ops.hpp"

using weir::DType;
using weir::Shape;
using weir::Tensor;
using weir::internal::KernelError;
using weir::testing::CheckClose;
using weir::testing::RunOp;

namespace {

std::vector<double> Iota(int count) {
  std::vector<double> values(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) values[static_cast<std::size_t>(i)] = i;
  return values;
}

}  // namespace

TEST_CASE("softmax along the last axis is shift-invariant") {
  // e^-2, e^-1, 1 over their sum 1.5032147243080551.
  const std::vector<double> expected{0.09003057317038046, 0.24472847105479764, 0.6652409557748219};
  CheckClose<float>(RunOp("softmax", weir::SoftmaxAttrs{}, {Tensor::FromVector<float>({3}, {1, 2, 3})})[0], {3}, expected);
  // Large logits would overflow exp without the max subtracted.
  CheckClose<float>(RunOp("softmax", weir::SoftmaxAttrs{}, {Tensor::FromVector<float>({3}, {1000, 1001, 1002})})[0], {3},
                    expected);
  CheckClose<double>(
      RunOp("softmax", weir::SoftmaxAttrs{.axis = 1}, {Tensor::FromVector<double>({2, 3}, {1, 2, 3, -1, -1, -1})})[0],
      {2, 3}, {expected[0], expected[1], expected[2], 1.0 / 3, 1.0 / 3, 1.0 / 3}, 1e-12);
}

TEST_CASE("f32 softmax rows (the vectorized loop) match f64 softmax for every row length; NaN and infinities as before") {
  std::mt19937 random(11);
  std::normal_distribution<float> logits(0.f, 8.f);
  for (std::int64_t n : {1, 5, 15, 16, 17, 128, 1000}) {
    CAPTURE(n);
    const std::int64_t rows = 600;  // 600 x 128 and 600 x 1000 are split over the intra-op pool
    std::vector<float> values(static_cast<std::size_t>(rows * n));
    for (float& v : values) v = logits(random);
    values[0] = 90.f;  // e^90 overflows f32: only the maximum taken out keeps it finite
    const Tensor x = Tensor::FromVector<float>({rows, n}, values);
    const std::vector<float> got = RunOp("softmax", weir::SoftmaxAttrs{}, {x})[0].ToVector<float>();
    const std::vector<double> want =
        RunOp("softmax", weir::SoftmaxAttrs{}, {Tensor::FromVector<double>({rows, n}, {values.begin(), values.end()})})[0]
            .ToVector<double>();
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, std::abs(got[i] - want[i]) / std::max(want[i], 1e-30));
      if (want[i] < 1e-30) CHECK(got[i] < 1e-30f);  // the tail below f32's normal range: zero or a denormal
    }
    CHECK(worst < 5e-6);
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special =
      RunOp("softmax", weir::SoftmaxAttrs{},
            {Tensor::FromVector<float>({3, 17}, std::vector<float>{nan, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                                                    -inf, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                                    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, nan})})[0]
          .ToVector<float>();
  for (int j = 0; j < 17; ++j) CHECK(std::isnan(special[static_cast<std::size_t>(j)]));             // a NaN spreads over its row
  CHECK(special[17] == 0.f);                                                                       // e^-inf is 0
  for (int j = 18; j < 34; ++j) CHECK(special[static_cast<std::size_t>(j)] == doctest::Approx(1.0 / 16));
  for (int j = 34; j < 51; ++j) CHECK(std::isnan(special[static_cast<std::size_t>(j)]));
}

TEST_CASE("softmax along outer and middle axes") {
  // Columns [1,1] -> [1/2,1/2] and [5, 5+ln3] -> [1/4,3/4].
  const Tensor x = Tensor::FromVector<float>({2, 2}, {1, 5, 1, static_cast<float>(5 + std::log(3.0))});
  CheckClose<float>(RunOp("softmax", weir::SoftmaxAttrs{.axis = -2}, {x})[0], {2, 2}, {0.5, 0.25, 0.5, 0.75});
  // (1,2,2) along axis 1: [0, ln3] -> [1/4,3/4] and [0, ln4] -> [1/5,4/5], interleaved.
  const Tensor x3 = Tensor::FromVector<double>({1, 2, 2}, {0, 0, std::log(3.0), std::log(4.0)});
  CheckClose<double>(RunOp("softmax", weir::SoftmaxAttrs{.axis = 1}, {x3})[0], {1, 2, 2}, {0.25, 0.2, 0.75, 0.8}, 1e-12);
}

TEST_CASE("softmax rejects bad axes and integer inputs") {
  CHECK_THROWS_WITH_AS(RunOp("softmax", weir::SoftmaxAttrs{.axis = 2}, {Tensor(Shape{2, 3}, DType::kF32)}),
                       "[softmax] axis 2 out of range for rank 2", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("softmax", weir::SoftmaxAttrs{}, {Tensor(Shape{}, DType::kF32)}),
                       "[softmax] axis -1 out of range for rank 0", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("softmax", weir::SoftmaxAttrs{}, {Tensor(Shape{3}, DType::kI32)}),
                       "[softmax] expects a floating input, got i32", std::invalid_argument);
}

TEST_CASE("reduce_sum over chosen axes with and without keep_dims") {
  const Tensor x = Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  CheckClose<float>(RunOp("reduce_sum", weir::ReduceAttrs{}, {x})[0], {}, {21});
  CheckClose<float>(RunOp("reduce_sum", weir::ReduceAttrs{.axes = {0}}, {x})[0], {3}, {5, 7, 9});
  CheckClose<float>(RunOp("reduce_sum", weir::ReduceAttrs{.axes = {1}}, {x})[0], {2}, {6, 15});
  CheckClose<float>(RunOp("reduce_sum", weir::ReduceAttrs{.axes = {-1}, .keep_dims = true}, {x})[0], {2, 1}, {6, 15});
  CheckClose<float>(RunOp("reduce_sum", weir::ReduceAttrs{.axes = {0, 1}, .keep_dims = true}, {x})[0], {1, 1}, {21});

  // x[i][j][k] = 6i + 2j + k over (2,3,2).
  const Tensor x3 = Tensor::FromVector<double>({2, 3, 2}, Iota(12));
  CheckClose<double>(RunOp("reduce_sum", weir::ReduceAttrs{.axes = {0, 2}}, {x3})[0], {3}, {14, 22, 30});
  CheckClose<double>(RunOp("reduce_sum", weir::ReduceAttrs{.axes = {1}}, {x3})[0], {2, 2}, {6, 9, 24, 27});
  CheckClose<double>(RunOp("reduce_sum", weir::ReduceAttrs{.axes = {-3}, .keep_dims = true}, {x3})[0], {1, 3, 2},
                     {6, 8, 10, 12, 14, 16});
  // A size-1 reduced axis is a copy.
  CheckClose<double>(RunOp("reduce_sum", weir::ReduceAttrs{.axes = {1}}, {Tensor::FromVector<double>({2, 1}, {3, 4})})[0],
                     {2}, {3, 4});
}

TEST_CASE("reduce_sum accumulates f32 in double and integers with wraparound") {
  // In float, 1e8 + 1 rounds back to 1e8.
  CheckClose<float>(RunOp("reduce_sum", weir::ReduceAttrs{}, {Tensor::FromVector<float>({3}, {1e8, 1, -1e8})})[0], {},
                    {1});
  const Tensor xi = Tensor::FromVector<std::int32_t>({2, 2}, {1, 2, 3, std::numeric_limits<std::int32_t>::max()});
  CHECK(RunOp("reduce_sum", weir::ReduceAttrs{.axes = {0}}, {xi})[0].ToVector<std::int32_t>() ==
        std::vector<std::int32_t>{4, std::numeric_limits<std::int32_t>::min() + 1});
  CHECK(RunOp("reduce_sum", weir::ReduceAttrs{.axes = {1}, .keep_dims = true},
              {Tensor::FromVector<std::int64_t>({2, 2}, {1LL << 40, 1, -5, -6})})[0]
            .ToVector<std::int64_t>() == std::vector<std::int64_t>{(1LL << 40) + 1, -11});
  // Summing no elements gives 0.
  CheckClose<float>(RunOp("reduce_sum", weir::ReduceAttrs{.axes = {0}}, {Tensor(Shape{0, 2}, DType::kF32)})[0], {2}, {0, 0});
}

TEST_CASE("reduce_sum rejects bad axes and dtypes") {
  const Tensor x(Shape{2, 3}, DType::kF32);
  CHECK_THROWS_WITH_AS(RunOp("reduce_sum", weir::ReduceAttrs{.axes = {1, -1}}, {x}),
                       "[reduce_sum] axes [1,-1] name axis 1 twice for x (2,3)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("reduce_sum", weir::ReduceAttrs{.axes = {2}}, {x}),
                       "[reduce_sum] axis 2 out of range for rank 2", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("reduce_sum", weir::ReduceAttrs{}, {Tensor(Shape{2}, DType::kBool)}),
                       "[reduce_sum] expects an f32, f64, f16, bf16, i32 or i64 input, got bool", std::invalid_argument);
}

TEST_CASE("reduce_mean") {
  const Tensor x = Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  CheckClose<float>(RunOp("reduce_mean", weir::ReduceAttrs{}, {x})[0], {}, {3.5});
  CheckClose<float>(RunOp("reduce_mean", weir::ReduceAttrs{.axes = {1}}, {x})[0], {2}, {2, 5});
  CheckClose<float>(RunOp("reduce_mean", weir::ReduceAttrs{.axes = {-2}, .keep_dims = true}, {x})[0], {1, 3},
                    {2.5, 3.5, 4.5});
  // x[i][j][k] = 6i + 2j + k; over i and k: (14 + 8j) / 4.
  CheckClose<double>(RunOp("reduce_mean", weir::ReduceAttrs{.axes = {2, 0}}, {Tensor::FromVector<double>({2, 3, 2}, Iota(12))})[0],
                     {3}, {3.5, 5.5, 7.5});
  // The mean of nothing is NaN, as in numpy.
  CHECK(std::isnan(RunOp("reduce_mean", weir::ReduceAttrs{}, {Tensor(Shape{0}, DType::kF64)})[0].ToVector<double>()[0]));
  CHECK_THROWS_WITH_AS(RunOp("reduce_mean", weir::ReduceAttrs{}, {Tensor(Shape{2}, DType::kI32)}),
                       "[reduce_mean] expects a floating input, got i32", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("reduce_mean", weir::ReduceAttrs{.axes = {0, 0}}, {Tensor(Shape{2}, DType::kF32)}),
                       "[reduce_mean] axes [0,0] name axis 0 twice for x (2)", std::invalid_argument);
}

TEST_CASE("argmax picks the first maximum") {
  const Tensor x = Tensor::FromVector<float>({2, 3}, {1, 3, 3, 7, 2, 7});
  auto out = RunOp("argmax", weir::ArgMaxAttrs{}, {x});
  CHECK(out[0].GetShape() == Shape{2});
  CHECK(out[0].ToVector<std::int32_t>() == std::vector<std::int32_t>{1, 0});
  out = RunOp("argmax", weir::ArgMaxAttrs{.axis = 0, .output_dtype = DType::kI64}, {x});
  CHECK(out[0].GetShape() == Shape{3});
  CHECK(out[0].ToVector<std::int64_t>() == std::vector<std::int64_t>{1, 0, 1});
  // (2,2,2) along the middle axis: [0,1] [5,4] [9,9] [9,8].
  const Tensor x3 = Tensor::FromVector<std::int32_t>({2, 2, 2}, {0, 5, 1, 4, 9, 9, 9, 8});
  out = RunOp("argmax", weir::ArgMaxAttrs{.axis = 1}, {x3});
  CHECK(out[0].GetShape() == Shape{2, 2});
  CHECK(out[0].ToVector<std::int32_t>() == std::vector<std::int32_t>{1, 0, 0, 0});
  CHECK(RunOp("argmax", weir::ArgMaxAttrs{}, {Tensor::FromVector<std::int64_t>({3}, {-5, -1, -3})})[0]
            .ToVector<std::int32_t>() == std::vector<std::int32_t>{1});
  // NaN counts as the largest, as in numpy.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(RunOp("argmax", weir::ArgMaxAttrs{}, {Tensor::FromVector<double>({4}, {1, nan, 5, nan})})[0]
            .ToVector<std::int32_t>() == std::vector<std::int32_t>{1});
}

TEST_CASE("argmax rejects bad attrs and inputs") {
  CHECK_THROWS_WITH_AS(RunOp("argmax", weir::ArgMaxAttrs{.output_dtype = DType::kF32}, {Tensor(Shape{2}, DType::kF32)}),
                       "[argmax] output_dtype must be i32 or i64, got f32", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("argmax", weir::ArgMaxAttrs{.axis = 1}, {Tensor(Shape{2, 0}, DType::kF32)}),
                       "[argmax] axis 1 of x (2,0) is empty", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("argmax", weir::ArgMaxAttrs{.axis = -3}, {Tensor(Shape{2, 2}, DType::kF32)}),
                       "[argmax] axis -3 out of range for rank 2", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("argmax", weir::ArgMaxAttrs{}, {Tensor(Shape{2}, DType::kU8)}),
                       "[argmax] expects an f32, f64, f16, bf16, i32 or i64 input, got u8", std::invalid_argument);
}

TEST_CASE("sparse_softmax_cross_entropy matches logsumexp - logit[label]") {
  // logsumexp(1,2,3) = 3 + ln(1 + e^-1 + e^-2) = 3.4076059644443806.
  const Tensor logits = Tensor::FromVector<float>({2, 3}, {1, 2, 3, 1, 2, 3});
  const Tensor labels = Tensor::FromVector<std::int32_t>({2}, {0, 2});
  CheckClose<float>(RunOp("sparse_softmax_cross_entropy", {}, {labels, logits})[0], {2},
                    {2.4076059644443806, 0.4076059644443806});
  // i64 labels, f64 logits; a 1000-logit gap stays finite.
  const Tensor logits64 = Tensor::FromVector<double>({2, 2}, {1000, 0, 0, 0});
  const Tensor labels64 = Tensor::FromVector<std::int64_t>({2}, {1, 0});
  CheckClose<double>(RunOp("sparse_softmax_cross_entropy", {}, {labels64, logits64})[0], {2}, {1000, std::log(2.0)},
                     1e-12);
}

TEST_CASE("sparse_softmax_cross_entropy fails the call on an out-of-range label") {
  const Tensor logits(Shape{4, 10}, DType::kF32);
  CHECK_THROWS_WITH_AS(
      RunOp("sparse_softmax_cross_entropy", {}, {Tensor::FromVector<std::int32_t>({4}, {0, 9, 1, 12}), logits}),
      "[sparse_softmax_cross_entropy] label 12 at row 3 is outside [0, 10)", KernelError);
  CHECK_THROWS_WITH_AS(
      RunOp("sparse_softmax_cross_entropy", {}, {Tensor::FromVector<std::int64_t>({4}, {0, -1, 1, 2}), logits}),
      "[sparse_softmax_cross_entropy] label -1 at row 1 is outside [0, 10)", KernelError);
}

TEST_CASE("sparse_softmax_cross_entropy rejects bad shapes and dtypes") {
  const Tensor logits(Shape{2, 3}, DType::kF32);
  CHECK_THROWS_WITH_AS(RunOp("sparse_softmax_cross_entropy", {}, {Tensor(Shape{3}, DType::kI32), logits}),
                       "[sparse_softmax_cross_entropy] expects labels (N) and logits (N,C), got labels (3) and logits (2,3)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("sparse_softmax_cross_entropy", {}, {Tensor(Shape{2}, DType::kF32), logits}),
                       "[sparse_softmax_cross_entropy] expects i32 or i64 labels, got f32", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("sparse_softmax_cross_entropy", {}, {Tensor(Shape{2}, DType::kI32), Tensor(Shape{2, 3}, DType::kI32)}),
                       "[sparse_softmax_cross_entropy] expects floating logits, got i32", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("sparse_softmax_cross_entropy", {}, {Tensor(Shape{2}, DType::kI32), Tensor(Shape{2, 0}, DType::kF32)}),
                       "[sparse_softmax_cross_entropy] logits (2,0) have no classes", std::invalid_argument);
}

TEST_CASE("large sums over rows split over the intra-op pool match the serial sums") {
  // (rows, columns) summed over the rows (a bias gradient), and NHWC summed over N, H, W: big
  // enough for the parallel column sum; the reference sums each column in double, in order.
  for (const Shape& shape : {Shape{3001, 37}, Shape{20, 14, 14, 32}}) {
    CAPTURE(shape.ToString());
    const std::int64_t count = shape.NumElements();
    const std::int64_t columns = shape[shape.Rank() - 1];
    Tensor x(shape, DType::kF32);
    Tensor xi(shape, DType::kI32);
    for (std::int64_t i = 0; i < count; ++i) {
      x.Data<float>()[i] = static_cast<float>((i * 7919) % 1000) / 100.f - 5.f;
      xi.Data<std::int32_t>()[i] = static_cast<std::int32_t>((i * 31) % 201) - 100;
    }
    std::vector<double> sums(static_cast<std::size_t>(columns), 0.0), means(sums.size());
    std::vector<double> int_sums(sums.size(), 0.0);
    for (std::int64_t i = 0; i < count; ++i) {
      sums[static_cast<std::size_t>(i % columns)] += x.Data<float>()[i];
      int_sums[static_cast<std::size_t>(i % columns)] += xi.Data<std::int32_t>()[i];
    }
    for (std::size_t c = 0; c < sums.size(); ++c) means[c] = sums[c] / static_cast<double>(count / columns);
    std::vector<int> axes(static_cast<std::size_t>(shape.Rank() - 1));
    for (int a = 0; a + 1 < shape.Rank(); ++a) axes[static_cast<std::size_t>(a)] = a;
    const weir::ReduceAttrs attrs{.axes = axes};
    CheckClose<float>(RunOp("reduce_sum", attrs, {x})[0], {columns}, sums, 1e-3);
    CheckClose<float>(RunOp("reduce_mean", attrs, {x})[0], {columns}, means, 1e-5);
    const Tensor got = RunOp("reduce_sum", attrs, {xi})[0];
    for (std::int64_t c = 0; c < columns; ++c) CHECK(got.Data<std::int32_t>()[c] == int_sums[static_cast<std::size_t>(c)]);
  }
}

TEST_CASE("layer_norm normalizes each row from begin_norm_axis on, with the rows' mean and inverse deviation") {
  // Rows of large, shifted values (the variance is taken about the mean, in double) over the last
  // axis, and over the last two axes.
  std::mt19937 random(5);
  std::uniform_real_distribution<float> uniform(-2.f, 2.f);
  for (const auto& [shape, axis] : {std::pair{Shape{5, 7}, 1}, std::pair{Shape{2, 3, 4}, 1}, std::pair{Shape{3, 2, 9}, -1}}) {
    CAPTURE(shape);
    Tensor x(shape, DType::kF32);
    for (std::int64_t i = 0; i < x.NumElements(); ++i) x.Data<float>()[i] = 1000.f + 10.f * uniform(random);
    const auto outputs = RunOp("layer_norm", weir::internal::LayerNormAttrs{axis, 1e-5}, {x});
    const int begin = axis < 0 ? axis + shape.Rank() : axis;
    std::int64_t rows = 1;
    for (int i = 0; i < begin; ++i) rows *= shape[i];
    const std::int64_t n = x.NumElements() / rows;
    std::vector<double> y, means, invs;
    for (std::int64_t r = 0; r < rows; ++r) {
      double mean = 0, variance = 0;
      for (std::int64_t c = 0; c < n; ++c) mean += x.Data<float>()[r * n + c];
      mean /= static_cast<double>(n);
      for (std::int64_t c = 0; c < n; ++c) variance += std::pow(x.Data<float>()[r * n + c] - mean, 2);
      const double inv = 1 / std::sqrt(variance / static_cast<double>(n) + 1e-5);
      for (std::int64_t c = 0; c < n; ++c) y.push_back((x.Data<float>()[r * n + c] - mean) * inv);
      means.push_back(mean);
      invs.push_back(inv);
    }
    const Shape statistics(std::vector<std::int64_t>(shape.Dims().begin(), shape.Dims().begin() + begin));
    CheckClose<float>(outputs[0], shape, y, 1e-5);
    CheckClose<float>(outputs[1], statistics, means, 1e-7);
    CheckClose<float>(outputs[2], statistics, invs, 1e-6);
  }
  // A row of one element normalizes to 0; bad inputs name the argument.
  const auto single = RunOp("layer_norm", weir::internal::LayerNormAttrs{1, 1e-5}, {Tensor::FromVector<float>({2, 1}, {3.f, -4.f})});
  CheckClose<float>(single[0], Shape{2, 1}, {0, 0});
  CHECK_THROWS_WITH_AS(RunOp("layer_norm", weir::internal::LayerNormAttrs{2, 1e-5}, {Tensor(Shape{2, 3}, DType::kF32)}),
                       doctest::Contains("begin_norm_axis"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("layer_norm", weir::internal::LayerNormAttrs{1, 0.0}, {Tensor(Shape{2, 3}, DType::kF32)}),
                       "[layer_norm] epsilon must be positive, got 0", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("layer_norm", weir::internal::LayerNormAttrs{1, 1e-5}, {Tensor(Shape{2, 3}, DType::kI32)}),
                       "[layer_norm] expects an f32 or f64 x, got i32", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("layer_norm", weir::internal::LayerNormAttrs{1, 1e-5}, {Tensor(Shape{2, 0}, DType::kF32)}),
                       doctest::Contains("cannot normalize rows of no elements"), std::invalid_argument);
}
