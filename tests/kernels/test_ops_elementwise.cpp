// Elementwise starter ops: bias_add, add/sub/mul/div, compare, scalar, sigmoid, tanh, cast.
#include <cmath>
#include <cstdint>
#include <limits>

#include <doctest/doctest.h>

#include "op_test_util.hpp"
#include "weir/ops.hpp"

using weir::DType;
using weir::Shape;
using weir::Tensor;
using weir::internal::KernelError;
using weir::testing::CheckClose;
using weir::testing::RunOp;

namespace {

constexpr std::int32_t kI32Max = std::numeric_limits<std::int32_t>::max();
constexpr std::int32_t kI32Min = std::numeric_limits<std::int32_t>::min();

}  // namespace

TEST_CASE("bias_add adds bias along the axis") {
  const Tensor x = Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor bias = Tensor::FromVector<float>({3}, {10, 20, 30});
  CheckClose<float>(RunOp("bias_add", weir::BiasAddAttrs{}, {x, bias})[0], {2, 3}, {11, 22, 33, 14, 25, 36});
  CheckClose<float>(RunOp("bias_add", weir::BiasAddAttrs{.axis = -1}, {x, bias})[0], {2, 3}, {11, 22, 33, 14, 25, 36});
  CheckClose<float>(RunOp("bias_add", weir::BiasAddAttrs{.axis = 0}, {x, Tensor::FromVector<float>({2}, {100, 200})})[0],
                    {2, 3}, {101, 102, 103, 204, 205, 206});
  // NCW-like (2,2,2) with the bias on the channels: x[n][c][i] = 4n + 2c + i.
  const Tensor x3 = Tensor::FromVector<double>({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  CheckClose<double>(RunOp("bias_add", weir::BiasAddAttrs{}, {x3, Tensor::FromVector<double>({2}, {1, -1})})[0],
                     {2, 2, 2}, {1, 2, 1, 2, 5, 6, 5, 6});
}

TEST_CASE("bias_add rejects mismatched bias, dtypes and axes") {
  const Tensor x(Shape{2, 4}, DType::kF32);
  CHECK_THROWS_WITH_AS(RunOp("bias_add", weir::BiasAddAttrs{}, {x, Tensor(Shape{5}, DType::kF32)}),
                       "[bias_add] bias (5) does not match x (2,4) on axis 1", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("bias_add", weir::BiasAddAttrs{}, {x, Tensor(Shape{1, 4}, DType::kF32)}),
                       "[bias_add] expects a 1-D bias, got (1,4)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("bias_add", weir::BiasAddAttrs{}, {x, Tensor(Shape{4}, DType::kF64)}),
                       "[bias_add] dtypes differ: x f32 vs bias f64 (a 16-bit x may take an f32 bias)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("bias_add", weir::BiasAddAttrs{.axis = 2}, {x, Tensor(Shape{4}, DType::kF32)}),
                       "[bias_add] axis 2 out of range for rank 2", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("bias_add", weir::BiasAddAttrs{}, {Tensor(Shape{2, 4}, DType::kI32), Tensor(Shape{4}, DType::kI32)}),
                       "[bias_add] expects floating inputs, got i32", std::invalid_argument);
}

TEST_CASE("broadcasting binary ops: same shape, scalars and rows") {
  const Tensor a = Tensor::FromVector<float>({3}, {1, 2, 3});
  const Tensor b = Tensor::FromVector<float>({3}, {10, 20, 30});
  CheckClose<float>(RunOp("add", {}, {a, b})[0], {3}, {11, 22, 33});
  CheckClose<float>(RunOp("sub", {}, {a, b})[0], {3}, {-9, -18, -27});
  CheckClose<float>(RunOp("mul", {}, {a, b})[0], {3}, {10, 40, 90});
  CheckClose<float>(RunOp("div", {}, {a, b})[0], {3}, {0.1, 0.1, 0.1});
  // Equal counts under different shapes: (1,3) - (3) is still a flat loop.
  CheckClose<float>(RunOp("sub", {}, {Tensor::FromVector<float>({1, 3}, {1, 2, 3}), a})[0], {1, 3}, {0, 0, 0});

  const Tensor m = Tensor::FromVector<double>({2, 2}, {1, 2, 3, 4});
  CheckClose<double>(RunOp("sub", {}, {m, Tensor::Scalar<double>(1)})[0], {2, 2}, {0, 1, 2, 3});
  CheckClose<double>(RunOp("div", {}, {Tensor::Scalar<double>(12), m})[0], {2, 2}, {12, 6, 4, 3});
  CheckClose<double>(RunOp("mul", {}, {Tensor::FromVector<double>({1, 1, 1}, {2}), m})[0], {1, 2, 2}, {2, 4, 6, 8});

  // A row broadcast over rows, on either side.
  const Tensor x = Tensor::FromVector<double>({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor row = Tensor::FromVector<double>({3}, {1, 10, 100});
  CheckClose<double>(RunOp("mul", {}, {x, row})[0], {2, 3}, {1, 20, 300, 4, 50, 600});
  CheckClose<double>(RunOp("sub", {}, {row, x})[0], {2, 3}, {0, 8, 97, -3, 5, 94});
  CheckClose<double>(RunOp("add", {}, {Tensor::FromVector<double>({1, 3}, {1, 10, 100}), x})[0], {2, 3},
                     {2, 12, 103, 5, 15, 106});
}

TEST_CASE("broadcasting binary ops: general strided cases") {
  // Column (2,1) against row (1,3).
  const Tensor column = Tensor::FromVector<float>({2, 1}, {1, 2});
  const Tensor row = Tensor::FromVector<float>({1, 3}, {10, 20, 30});
  CheckClose<float>(RunOp("add", {}, {column, row})[0], {2, 3}, {11, 21, 31, 12, 22, 32});
  CheckClose<float>(RunOp("sub", {}, {column, row})[0], {2, 3}, {-9, -19, -29, -8, -18, -28});
  // (2,1,3) + (2,1) -> (2,2,3): out[i][j][k] = a[i][k] + b[j].
  const Tensor a = Tensor::FromVector<float>({2, 1, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = Tensor::FromVector<float>({2, 1}, {10, 20});
  CheckClose<float>(RunOp("add", {}, {a, b})[0], {2, 2, 3}, {11, 12, 13, 21, 22, 23, 14, 15, 16, 24, 25, 26});
  // A channel bias (1,2,1) over (2,2,2): the middle axis is broadcast.
  const Tensor x = Tensor::FromVector<std::int64_t>({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(RunOp("mul", {}, {x, Tensor::FromVector<std::int64_t>({1, 2, 1}, {1, -1})})[0].ToVector<std::int64_t>() ==
        std::vector<std::int64_t>{0, 1, -2, -3, 4, 5, -6, -7});
  // Empty outputs run nothing.
  CHECK(RunOp("add", {}, {Tensor(Shape{0, 3}, DType::kF32), Tensor(Shape{2, 1, 1}, DType::kF32)})[0].GetShape() ==
        Shape{2, 0, 3});
}

TEST_CASE("broadcasting binary ops on integers truncate and wrap") {
  const Tensor a = Tensor::FromVector<std::int32_t>({4}, {7, -7, 7, -7});
  const Tensor b = Tensor::FromVector<std::int32_t>({4}, {2, 2, -2, -2});
  CHECK(RunOp("div", {}, {a, b})[0].ToVector<std::int32_t>() == std::vector<std::int32_t>{3, -3, -3, 3});
  CHECK(RunOp("add", {}, {Tensor::FromVector<std::int32_t>({2}, {kI32Max, 1}), Tensor::Scalar<std::int32_t>(1)})[0]
            .ToVector<std::int32_t>() == std::vector<std::int32_t>{kI32Min, 2});
  CHECK(RunOp("div", {}, {Tensor::Scalar<std::int32_t>(kI32Min), Tensor::Scalar<std::int32_t>(-1)})[0]
            .ToVector<std::int32_t>() == std::vector<std::int32_t>{kI32Min});
  CHECK(RunOp("mul", {}, {Tensor::FromVector<std::int64_t>({2}, {3, 1LL << 40}), Tensor::Scalar<std::int64_t>(-2)})[0]
            .ToVector<std::int64_t>() == std::vector<std::int64_t>{-6, -(1LL << 41)});
  CHECK_THROWS_WITH_AS(RunOp("div", {}, {a, Tensor::FromVector<std::int32_t>({2, 1}, {1, 0})}),
                       "[div] integer division by zero", KernelError);
}

TEST_CASE("broadcasting binary ops reject bad shapes and dtypes") {
  CHECK_THROWS_WITH_AS(RunOp("add", {}, {Tensor(Shape{2, 3}, DType::kF32), Tensor(Shape{2}, DType::kF32)}),
                       "[add] shapes do not broadcast: (2,3) vs (2)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("mul", {}, {Tensor(Shape{2}, DType::kF32), Tensor(Shape{2}, DType::kI32)}),
                       "[mul] dtypes differ: f32 vs i32", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("sub", {}, {Tensor(Shape{2}, DType::kBool), Tensor(Shape{2}, DType::kBool)}),
                       "[sub] expects f32, f64, f16, bf16, i32, i64 or i8 inputs, got bool", std::invalid_argument);
}

TEST_CASE("compare gives int8 1 or 0 with numpy broadcasting; NaN is unequal to everything") {
  using weir::CompareOpKind;
  const auto compare = [](CompareOpKind kind, const Tensor& a, const Tensor& b) {
    const Tensor out = RunOp("compare", weir::CompareAttrs{kind}, {a, b})[0];
    CHECK(out.GetDType() == DType::kI8);
    return out.ToVector<std::int8_t>();
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor a = Tensor::FromVector<float>({2, 3}, {1, 2, 3, nan, 5, 6});
  const Tensor row = Tensor::FromVector<float>({3}, {2, 2, nan});
  using V = std::vector<std::int8_t>;
  CHECK(compare(CompareOpKind::kEqual, a, row) == V{0, 1, 0, 0, 0, 0});
  CHECK(compare(CompareOpKind::kNotEqual, a, row) == V{1, 0, 1, 1, 1, 1});
  CHECK(compare(CompareOpKind::kGreater, a, row) == V{0, 0, 0, 0, 1, 0});
  CHECK(compare(CompareOpKind::kGreaterEqual, a, row) == V{0, 1, 0, 0, 1, 0});
  CHECK(compare(CompareOpKind::kLess, a, row) == V{1, 0, 0, 0, 0, 0});
  CHECK(compare(CompareOpKind::kLessEqual, a, row) == V{1, 1, 0, 0, 0, 0});
  // A column against a row (the strided walk), on integers of every width.
  const Tensor column = Tensor::FromVector<std::int8_t>({2, 1}, {-128, 127});
  const Tensor ints = Tensor::FromVector<std::int8_t>({1, 3}, {-128, 0, 127});
  CHECK(compare(CompareOpKind::kLess, column, ints) == V{0, 1, 1, 0, 0, 0});
  CHECK(compare(CompareOpKind::kGreaterEqual, Tensor::FromVector<std::uint8_t>({2}, {0, 255}), Tensor::Scalar<std::uint8_t>(128)) ==
        V{0, 1});
  CHECK(compare(CompareOpKind::kEqual, Tensor::FromVector<std::int64_t>({2}, {1LL << 40, 3}),
                Tensor::FromVector<std::int64_t>({2}, {1LL << 40, 4})) == V{1, 0});
  CHECK_THROWS_WITH_AS(RunOp("compare", weir::CompareAttrs{}, {Tensor(Shape{2}, DType::kF32), Tensor(Shape{2}, DType::kI32)}),
                       "[compare] dtypes differ: f32 vs i32", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("compare", weir::CompareAttrs{}, {Tensor(Shape{2}, DType::kBool), Tensor(Shape{2}, DType::kBool)}),
                       "[compare] expects f32, f64, i32, i64, u8 or i8 inputs, got bool", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("compare", weir::CompareAttrs{}, {Tensor(Shape{2, 3}, DType::kF32), Tensor(Shape{2}, DType::kF32)}),
                       "[compare] shapes do not broadcast: (2,3) vs (2)", std::invalid_argument);
}

TEST_CASE("scalar applies each kind") {
  using Kind = weir::ScalarOpKind;
  const Tensor x = Tensor::FromVector<float>({3}, {1, 2, 4});
  const auto run = [&](Kind kind, double value) { return RunOp("scalar", weir::ScalarAttrs{kind, value}, {x})[0]; };
  CheckClose<float>(run(Kind::kAdd, 1), {3}, {2, 3, 5});
  CheckClose<float>(run(Kind::kSub, 1), {3}, {0, 1, 3});
  CheckClose<float>(run(Kind::kRSub, 1), {3}, {0, -1, -3});
  CheckClose<float>(run(Kind::kMul, 0.5), {3}, {0.5, 1, 2});
  CheckClose<float>(run(Kind::kDiv, 2), {3}, {0.5, 1, 2});
  CheckClose<float>(run(Kind::kRDiv, 4), {3}, {4, 2, 1});
  CheckClose<float>(run(Kind::kPow, 2), {3}, {1, 4, 16});
  CheckClose<double>(RunOp("scalar", weir::ScalarAttrs{Kind::kPow, 0.5}, {Tensor::FromVector<double>({2}, {4, 9})})[0],
                     {2}, {2, 3});

  const Tensor xi = Tensor::FromVector<std::int32_t>({2}, {2, -3});
  const auto run_i = [&](Kind kind, double value) {
    return RunOp("scalar", weir::ScalarAttrs{kind, value}, {xi})[0].ToVector<std::int32_t>();
  };
  CHECK(run_i(Kind::kAdd, 3) == std::vector<std::int32_t>{5, 0});
  CHECK(run_i(Kind::kPow, 3) == std::vector<std::int32_t>{8, -27});
  CHECK(run_i(Kind::kPow, 0) == std::vector<std::int32_t>{1, 1});
  CHECK(run_i(Kind::kRDiv, 7) == std::vector<std::int32_t>{3, -2});
  CHECK(run_i(Kind::kDiv, -2) == std::vector<std::int32_t>{-1, 1});
  CHECK(RunOp("scalar", weir::ScalarAttrs{Kind::kMul, -3}, {Tensor::FromVector<std::int64_t>({1}, {1LL << 40})})[0]
            .ToVector<std::int64_t>() == std::vector<std::int64_t>{-3 * (1LL << 40)});
  CHECK_THROWS_WITH_AS(RunOp("scalar", weir::ScalarAttrs{Kind::kRDiv, 1}, {Tensor::FromVector<std::int32_t>({2}, {1, 0})}),
                       "[scalar] integer division by zero", KernelError);
}

TEST_CASE("scalar rejects values its dtype cannot take") {
  using Kind = weir::ScalarOpKind;
  const Tensor xi(Shape{2}, DType::kI32);
  CHECK_THROWS_WITH_AS(RunOp("scalar", weir::ScalarAttrs{Kind::kAdd, 0.5}, {xi}),
                       "[scalar] value 0.5 is not representable as i32, the dtype of x (2)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("scalar", weir::ScalarAttrs{Kind::kAdd, 3e9}, {xi}),
                       "[scalar] value 3000000000 is not representable as i32, the dtype of x (2)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("scalar", weir::ScalarAttrs{Kind::kDiv, 0}, {Tensor(Shape{2}, DType::kI64)}),
                       "[scalar] integer division of x (2) by 0", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("scalar", weir::ScalarAttrs{Kind::kPow, -1}, {xi}),
                       "[scalar] negative exponent -1 needs a floating x, got i32 x (2)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("scalar", weir::ScalarAttrs{Kind::kAdd, 1}, {Tensor(Shape{2}, DType::kU8)}),
                       "[scalar] expects an f32, f64, f16, bf16, i32 or i64 input, got u8", std::invalid_argument);
}

TEST_CASE("sigmoid is stable for large |x|") {
  const weir::UnaryAttrs sigmoid{.kind = weir::UnaryOpKind::kSigmoid};
  const Tensor x = Tensor::FromVector<double>({5}, {0, 2, -2, 100, -100});
  CheckClose<double>(RunOp("unary", sigmoid, {x})[0], {5}, {0.5, 0.8807970779778823, 0.11920292202211755, 1, 0}, 1e-12);
  CHECK(RunOp("unary", sigmoid, {x})[0].ToVector<double>()[4] == doctest::Approx(3.720075976020836e-44).epsilon(1e-9).scale(0));
  const auto y = RunOp("unary", sigmoid, {Tensor::FromVector<float>({4}, {0, 2, 1000, -1000})})[0].ToVector<float>();
  CHECK(y[0] == 0.5f);
  CHECK(y[1] == doctest::Approx(0.8807970779778823));
  CHECK(y[2] == 1.0f);
  CHECK(y[3] == 0.0f);
  CHECK_THROWS_WITH_AS(RunOp("unary", sigmoid, {Tensor(Shape{2}, DType::kI32)}),
                       "[unary] sigmoid expects a floating (f32 or f64) x, got i32", std::invalid_argument);
}

TEST_CASE("tanh") {
  const weir::UnaryAttrs tanh{.kind = weir::UnaryOpKind::kTanh};
  CheckClose<float>(RunOp("unary", tanh, {Tensor::FromVector<float>({4}, {0, 0.5, -1, 20})})[0], {4},
                    {0, 0.46211715726000974, -0.7615941559557649, 1});
  CheckClose<double>(RunOp("unary", tanh, {Tensor::FromVector<double>({2}, {-0.5, 1000})})[0], {2},
                     {-0.46211715726000974, 1}, 1e-12);
  CHECK_THROWS_WITH_AS(RunOp("unary", tanh, {Tensor(Shape{2}, DType::kI64)}),
                       "[unary] tanh expects a floating (f32 or f64) x, got i64", std::invalid_argument);
}

TEST_CASE("cast converts floats, saturating into integers") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = Tensor::FromVector<float>({5}, {1.5, -2.7f, 0, 300, nan});
  CHECK(RunOp("cast", weir::CastAttrs{DType::kI32}, {x})[0].ToVector<std::int32_t>() ==
        std::vector<std::int32_t>{1, -2, 0, 300, 0});
  CHECK(RunOp("cast", weir::CastAttrs{DType::kU8}, {x})[0].ToVector<std::uint8_t>() ==
        std::vector<std::uint8_t>{1, 0, 0, 255, 0});
  CHECK(RunOp("cast", weir::CastAttrs{DType::kBool}, {x})[0].ToVector<bool>() ==
        std::vector<bool>{true, true, false, true, true});
  const Tensor big = Tensor::FromVector<double>({2}, {1e20, -1e20});
  CHECK(RunOp("cast", weir::CastAttrs{DType::kI32}, {big})[0].ToVector<std::int32_t>() ==
        std::vector<std::int32_t>{kI32Max, kI32Min});
  CHECK(RunOp("cast", weir::CastAttrs{DType::kI64}, {big})[0].ToVector<std::int64_t>() ==
        std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min()});
  CheckClose<float>(RunOp("cast", weir::CastAttrs{DType::kF32}, {Tensor::FromVector<double>({2}, {0.1, -3})})[0], {2},
                    {0.1, -3});
}

TEST_CASE("cast between integers wraps and bools map to 0/1") {
  CHECK(RunOp("cast", weir::CastAttrs{DType::kI32}, {Tensor::FromVector<std::int64_t>({2}, {(1LL << 32) + 5, -1})})[0]
            .ToVector<std::int32_t>() == std::vector<std::int32_t>{5, -1});
  CHECK(RunOp("cast", weir::CastAttrs{DType::kU8}, {Tensor::FromVector<std::int32_t>({2}, {257, -1})})[0]
            .ToVector<std::uint8_t>() == std::vector<std::uint8_t>{1, 255});
  CHECK(RunOp("cast", weir::CastAttrs{DType::kI64}, {Tensor::FromVector<std::uint8_t>({2}, {0, 255})})[0]
            .ToVector<std::int64_t>() == std::vector<std::int64_t>{0, 255});
  CheckClose<float>(RunOp("cast", weir::CastAttrs{DType::kF32}, {Tensor::FromVector<bool>({2}, {true, false})})[0], {2},
                    {1, 0});
  CHECK(RunOp("cast", weir::CastAttrs{DType::kBool}, {Tensor::FromVector<std::int32_t>({3}, {0, -4, 1})})[0]
            .ToVector<bool>() == std::vector<bool>{false, true, true});
}

TEST_CASE("cast has a kernel for every pair of dtypes") {
  const auto& all = weir::kAllDTypes;
  const Tensor source = Tensor::FromVector<double>({3}, {0, 1, 0});
  for (DType from : all) {
    const Tensor x = RunOp("cast", weir::CastAttrs{from}, {source})[0];
    for (DType to : all) {
      INFO(weir::Name(from), " -> ", weir::Name(to));
      const Tensor y = RunOp("cast", weir::CastAttrs{to}, {x})[0];
      CHECK(y.GetDType() == to);
      CHECK(RunOp("cast", weir::CastAttrs{DType::kF64}, {y})[0].ToVector<double>() == std::vector<double>{0, 1, 0});
    }
  }
}

TEST_CASE("cast rejects an unknown dtype") {
  CHECK_THROWS_WITH_AS(RunOp("cast", weir::CastAttrs{static_cast<DType>(42)}, {Tensor(Shape{1}, DType::kF32)}),
                       "[cast] unknown target dtype 42", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("cast", weir::CastAttrs{DType::kTensorBuffer}, {Tensor(Shape{1}, DType::kF32)}),
                       "[cast] cannot cast to tensor_buffer (only the data ops make one)", std::invalid_argument);
}
