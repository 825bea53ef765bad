// Every starter op: shape/dtype inference and its CPU kernel against hand-computed values.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "gradient_check.hpp"
#include "op_test_util.hpp"
#include "weir/job.hpp"
#include "weir/ops.hpp"

using weir::DType;
using weir::Shape;
using weir::Tensor;
using weir::testing::RunOp;

TEST_CASE("matmul with transpose flags matches hand-computed products") {
  const Tensor a = Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = Tensor::FromVector<float>({3, 2}, {7, 8, 9, 10, 11, 12});
  auto out = RunOp("matmul", weir::MatMulAttrs{}, {a, b});
  CHECK(out[0].GetShape() == Shape{2, 2});
  CHECK(out[0].ToVector<float>() == std::vector<float>{58, 64, 139, 154});
  // a^T (3,2)·a (2,3) = (3,3)
  out = RunOp("matmul", weir::MatMulAttrs{.transpose_a = true}, {a, a});
  CHECK(out[0].ToVector<float>() == std::vector<float>{17, 22, 27, 22, 29, 36, 27, 36, 45});
  out = RunOp("matmul", weir::MatMulAttrs{.transpose_b = true, .alpha = 0.5}, {a, a});
  CHECK(out[0].ToVector<float>() == std::vector<float>{7, 16, 16, 38.5});
}

TEST_CASE("matmul rejects mismatched inner dims naming both shapes") {
  const Tensor a(Shape{100, 784}, DType::kF32);
  const Tensor b(Shape{512, 10}, DType::kF32);
  CHECK_THROWS_WITH_AS(RunOp("matmul", weir::MatMulAttrs{}, {a, b}), "[matmul] inner dims differ: (100,784) vs (512,10)",
                       std::invalid_argument);
}

TEST_CASE("relu") {
  const Tensor x = Tensor::FromVector<float>({4}, {-1, 0, 2, -3.5});
  CHECK(RunOp("unary", weir::UnaryAttrs{.kind = weir::UnaryOpKind::kRelu}, {x})[0].ToVector<float>() ==
        std::vector<float>{0, 0, 2, 0});
}

TEST_CASE("matmul f64 runs through dgemm with transposes and alpha") {
  using weir::testing::CheckClose;
  const Tensor a = Tensor::FromVector<double>({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = Tensor::FromVector<double>({3, 2}, {7, 8, 9, 10, 11, 12});
  CheckClose<double>(RunOp("matmul", weir::MatMulAttrs{}, {a, b})[0], {2, 2}, {58, 64, 139, 154});
  CheckClose<double>(RunOp("matmul", weir::MatMulAttrs{.transpose_a = true}, {a, a})[0], {3, 3},
                     {17, 22, 27, 22, 29, 36, 27, 36, 45});
  CheckClose<double>(RunOp("matmul", weir::MatMulAttrs{.transpose_b = true, .alpha = 0.5}, {a, a})[0], {2, 2},
                     {7, 16, 16, 38.5});
  // b^T (2,3) · a^T (3,2) = (a·b)^T, scaled by -1.
  CheckClose<double>(RunOp("matmul", weir::MatMulAttrs{.transpose_a = true, .transpose_b = true, .alpha = -1}, {b, a})[0],
                     {2, 2}, {-58, -139, -64, -154});
  // An empty inner dim gives zeros.
  CheckClose<double>(RunOp("matmul", weir::MatMulAttrs{}, {Tensor(Shape{2, 0}, DType::kF64), Tensor(Shape{0, 3}, DType::kF64)})[0],
                     {2, 3}, {0, 0, 0, 0, 0, 0});
}

TEST_CASE("batch_matmul multiplies the last two axes for every batch index, f32 and f64") {
  using weir::testing::CheckClose;
  // Batch 0: [[1,2,3],[4,5,6]]; batch 1: its negative. b is the same for both.
  const Tensor a = Tensor::FromVector<double>({2, 2, 3}, {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6});
  const Tensor b = Tensor::FromVector<double>({2, 3, 2}, {7, 8, 9, 10, 11, 12, 7, 8, 9, 10, 11, 12});
  CheckClose<double>(RunOp("batch_matmul", weir::MatMulAttrs{}, {a, b})[0], {2, 2, 2},
                     {58, 64, 139, 154, -58, -64, -139, -154});
  CheckClose<double>(RunOp("batch_matmul", weir::MatMulAttrs{.transpose_b = true, .alpha = 0.5}, {a, a})[0], {2, 2, 2},
                     {7, 16, 16, 38.5, 7, 16, 16, 38.5});
  CheckClose<double>(RunOp("batch_matmul", weir::MatMulAttrs{.transpose_a = true, .transpose_b = true}, {b, a})[0], {2, 2, 2},
                     {58, 139, 64, 154, -58, -139, -64, -154});
  // Rank 4 in f32, and an empty inner dim.
  const Tensor a4 = Tensor::FromVector<float>({1, 2, 1, 2}, {1, 2, 3, 4});
  const Tensor b4 = Tensor::FromVector<float>({1, 2, 2, 1}, {5, 6, 7, 8});
  CHECK(RunOp("batch_matmul", weir::MatMulAttrs{}, {a4, b4})[0].ToVector<float>() == std::vector<float>{17, 53});
  CHECK(RunOp("batch_matmul", weir::MatMulAttrs{}, {Tensor(Shape{2, 2, 0}, DType::kF32), Tensor(Shape{2, 0, 3}, DType::kF32)})[0]
            .ToVector<float>() == std::vector<float>(12, 0.f));
}

TEST_CASE("batch_matmul rejects ranks, batch axes and inner dims that do not match, naming them") {
  const auto run = [](Shape a, Shape b) {
    return RunOp("batch_matmul", weir::MatMulAttrs{}, {Tensor(std::move(a), DType::kF32), Tensor(std::move(b), DType::kF32)});
  };
  CHECK_THROWS_WITH_AS(run({2, 3}, {3, 2}), "[batch_matmul] expects a and b of one rank >= 3, got (2,3) and (3,2)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(run({2, 2, 3}, {3, 3, 2}), "[batch_matmul] batch axes differ: (2,2,3) vs (3,3,2)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(run({2, 2, 3}, {2, 4, 2}), "[batch_matmul] inner dims differ: (2,2,3) vs (2,4,2)", std::invalid_argument);
}

TEST_CASE("batch_matmul: gradients against finite differences, every transpose") {
  weir::Session session;
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      const Shape a = ta ? Shape{2, 3, 4} : Shape{2, 4, 3};
      const Shape b = tb ? Shape{2, 5, 3} : Shape{2, 3, 5};
      weir::testing::CheckGradients(session, fmt::format("batch_matmul_{}_{}", ta, tb),
                                    {weir::testing::Random(a), weir::testing::Random(b)}, [ta, tb](const std::vector<weir::Blob>& in) {
                                      return weir::BatchMatMul(in[0], in[1], {.transpose_a = ta, .transpose_b = tb, .alpha = 0.5});
                                    });
    }
  }
}

TEST_CASE("matmul rejects mixed and integer dtypes") {
  CHECK_THROWS_WITH_AS(RunOp("matmul", weir::MatMulAttrs{}, {Tensor(Shape{2, 2}, DType::kF32), Tensor(Shape{2, 2}, DType::kF64)}),
                       "[matmul] dtypes differ: f32 vs f64", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("matmul", weir::MatMulAttrs{}, {Tensor(Shape{2, 2}, DType::kI32), Tensor(Shape{2, 2}, DType::kI32)}),
                       "[matmul] expects floating inputs, got i32", std::invalid_argument);
}

TEST_CASE("identity copies every dtype") {
  const Tensor f = Tensor::FromVector<float>({2, 2}, {1, -2, 3.5, 4});
  auto out = RunOp("identity", {}, {f});
  CHECK(out[0].GetShape() == Shape{2, 2});
  CHECK(out[0].ToVector<float>() == std::vector<float>{1, -2, 3.5, 4});
  CHECK(RunOp("identity", {}, {Tensor::FromVector<std::int64_t>({3}, {1, -1, 1LL << 40})})[0].ToVector<std::int64_t>() ==
        std::vector<std::int64_t>{1, -1, 1LL << 40});
  CHECK(RunOp("identity", {}, {Tensor::FromVector<bool>({2}, {true, false})})[0].ToVector<bool>() ==
        std::vector<bool>{true, false});
  CHECK(RunOp("identity", {}, {Tensor::Scalar<std::uint8_t>(7)})[0].ToVector<std::uint8_t>() ==
        std::vector<std::uint8_t>{7});
}

TEST_CASE("identity rejects an undefined blob") {
  CHECK_THROWS_WITH_AS(weir::Identity(weir::Blob{}), "[identity] input 'x' is an undefined blob", std::invalid_argument);
}

TEST_CASE("reshape keeps row-major order and infers one -1") {
  const Tensor x = Tensor::FromVector<std::int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto out = RunOp("reshape", weir::ReshapeAttrs{{3, 2}}, {x});
  CHECK(out[0].GetShape() == Shape{3, 2});
  CHECK(out[0].ToVector<std::int32_t>() == std::vector<std::int32_t>{1, 2, 3, 4, 5, 6});
  CHECK(RunOp("reshape", weir::ReshapeAttrs{{-1}}, {x})[0].GetShape() == Shape{6});
  CHECK(RunOp("reshape", weir::ReshapeAttrs{{2, -1, 1}}, {x})[0].GetShape() == Shape{2, 3, 1});
  CHECK(RunOp("reshape", weir::ReshapeAttrs{{}}, {Tensor(Shape{1, 1}, DType::kF64)})[0].GetShape() == Shape{});
  CHECK(RunOp("reshape", weir::ReshapeAttrs{{3, -1}}, {Tensor(Shape{0, 3}, DType::kF32)})[0].GetShape() == Shape{3, 0});
}

TEST_CASE("reshape rejects bad target shapes") {
  const Tensor x(Shape{2, 3}, DType::kF32);
  CHECK_THROWS_WITH_AS(RunOp("reshape", weir::ReshapeAttrs{{4, 2}}, {x}),
                       "[reshape] cannot reshape x (2,3) (6 elements) into (4,2) (8 elements)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("reshape", weir::ReshapeAttrs{{4, -1}}, {x}),
                       "[reshape] cannot reshape x (2,3) (6 elements) into (4,-1)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("reshape", weir::ReshapeAttrs{{-1, -1}}, {x}), "[reshape] shape (-1,-1) has more than one -1",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("reshape", weir::ReshapeAttrs{{2, -3}}, {x}),
                       "[reshape] shape (2,-3) has a negative dimension other than -1", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("reshape", weir::ReshapeAttrs{{0, -1}}, {Tensor(Shape{0, 3}, DType::kF32)}),
                       "[reshape] cannot infer the -1 in (0,-1): the other dims multiply to 0", std::invalid_argument);
}

TEST_CASE("transpose permutes axes") {
  const Tensor x = Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto out = RunOp("transpose", weir::TransposeAttrs{{1, 0}}, {x});
  CHECK(out[0].GetShape() == Shape{3, 2});
  CHECK(out[0].ToVector<float>() == std::vector<float>{1, 4, 2, 5, 3, 6});

  // x[i][j][k] = 6i + 3j + k; out[k][i][j] = x[i][j][k].
  std::vector<double> values(12);
  for (int i = 0; i < 12; ++i) values[static_cast<std::size_t>(i)] = i;
  const Tensor x3 = Tensor::FromVector<double>({2, 2, 3}, values);
  out = RunOp("transpose", weir::TransposeAttrs{{2, 0, 1}}, {x3});
  CHECK(out[0].GetShape() == Shape{3, 2, 2});
  CHECK(out[0].ToVector<double>() == std::vector<double>{0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11});
  // Identity permutation and size-1 axes only: a plain copy.
  out = RunOp("transpose", weir::TransposeAttrs{{1, 0, 2}}, {Tensor::FromVector<double>({1, 2, 3}, {0, 1, 2, 3, 4, 5})});
  CHECK(out[0].GetShape() == Shape{2, 1, 3});
  CHECK(out[0].ToVector<double>() == std::vector<double>{0, 1, 2, 3, 4, 5});

  // u8 and bool move as bytes; (2,3) -> (3,2).
  out = RunOp("transpose", weir::TransposeAttrs{{1, 0}}, {Tensor::FromVector<std::uint8_t>({2, 3}, {1, 2, 3, 4, 5, 6})});
  CHECK(out[0].ToVector<std::uint8_t>() == std::vector<std::uint8_t>{1, 4, 2, 5, 3, 6});
  out = RunOp("transpose", weir::TransposeAttrs{{1, 0}},
              {Tensor::FromVector<bool>({2, 2}, {true, true, false, false})});
  CHECK(out[0].ToVector<bool>() == std::vector<bool>{true, false, true, false});
}

TEST_CASE("transpose matches a reference loop where axes merge") {
  // (2,1,3,4) -> perm (2,3,0,1) = (3,4,2,1): axes 2,3 and 0,1 each stay adjacent, so the kernel
  // runs it as a 2-D (12,2) transpose.
  const std::vector<std::int64_t> dims{2, 1, 3, 4};
  std::vector<std::int64_t> values(24);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<std::int64_t>(i) * 10;
  const Tensor x = Tensor::FromVector<std::int64_t>(Shape(dims), values);
  auto out = RunOp("transpose", weir::TransposeAttrs{{2, 3, 0, 1}}, {x});
  CHECK(out[0].GetShape() == Shape{3, 4, 2, 1});
  std::vector<std::int64_t> expected;
  for (int c = 0; c < 3; ++c) {
    for (int d = 0; d < 4; ++d) {
      for (int a = 0; a < 2; ++a) expected.push_back(values[static_cast<std::size_t>(a * 12 + c * 4 + d)]);
    }
  }
  CHECK(out[0].ToVector<std::int64_t>() == expected);
}

TEST_CASE("transpose rejects non-permutations") {
  const Tensor x(Shape{2, 3}, DType::kF32);
  CHECK_THROWS_WITH_AS(RunOp("transpose", weir::TransposeAttrs{{0, 0}}, {x}),
                       "[transpose] perm [0,0] is not a permutation of 0..1 for x (2,3)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("transpose", weir::TransposeAttrs{{0}}, {x}),
                       "[transpose] perm [0] is not a permutation of 0..1 for x (2,3)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("transpose", weir::TransposeAttrs{{-1, 0}}, {x}),
                       "[transpose] perm [-1,0] is not a permutation of 0..1 for x (2,3)", std::invalid_argument);
}

TEST_CASE("op functions infer blob shapes and dtypes in a job") {
  weir::JobBuilder builder("shapes");
  const weir::Blob x = builder.Placeholder("x", {4, 3});
  const weir::Blob labels = builder.Placeholder("labels", {4}, DType::kI32);
  CHECK(weir::Reshape(x, {{2, -1}}).GetShape() == Shape{2, 6});
  CHECK(weir::Transpose(x, {{1, 0}}).GetShape() == Shape{3, 4});
  CHECK(weir::Add(x, builder.Constant(Tensor::Scalar<float>(1))).GetShape() == Shape{4, 3});
  CHECK(weir::ScalarMul(weir::ScalarAdd(x, 1), 2).GetShape() == Shape{4, 3});
  CHECK(weir::ReduceMean(x, {.axes = {0}, .keep_dims = true}).GetShape() == Shape{1, 3});
  const weir::Blob index = weir::ArgMax(x, {.axis = 1, .output_dtype = DType::kI64});
  CHECK(index.GetShape() == Shape{4});
  CHECK(index.GetDType() == DType::kI64);
  CHECK(weir::Cast(x, {DType::kU8}).GetDType() == DType::kU8);
  const weir::Blob loss = weir::SparseSoftmaxCrossEntropy(labels, weir::Softmax(x), "loss");
  CHECK(loss.GetShape() == Shape{4});
  CHECK(loss.Name() == "loss/out");
  CHECK_THROWS_WITH_AS(weir::Sub(x, builder.Placeholder("y", {4})), "[sub] shapes do not broadcast: (4,3) vs (4)",
                       std::invalid_argument);
}

TEST_CASE("large f32 matmuls split over the intra-op pool by rows or by columns match dgemm") {
  // (m, k, n) = (100, 200, 300) splits C's rows; (20, 100, 3000) has too few rows and splits its
  // columns. Every transpose combination and a non-unit alpha, against the f64 kernel.
  struct Size {
    std::int64_t m, k, n;
  };
  for (const Size size : {Size{100, 200, 300}, Size{20, 100, 3000}}) {
    for (int flags = 0; flags < 4; ++flags) {
      const weir::MatMulAttrs attrs{.transpose_a = (flags & 1) != 0, .transpose_b = (flags & 2) != 0, .alpha = -0.5};
      CAPTURE(size.m);
      CAPTURE(flags);
      const Shape a_shape = attrs.transpose_a ? Shape{size.k, size.m} : Shape{size.m, size.k};
      const Shape b_shape = attrs.transpose_b ? Shape{size.n, size.k} : Shape{size.k, size.n};
      Tensor a32(a_shape, DType::kF32), b32(b_shape, DType::kF32), a64(a_shape, DType::kF64), b64(b_shape, DType::kF64);
      for (std::int64_t i = 0; i < a32.NumElements(); ++i) {
        a32.Data<float>()[i] = static_cast<float>((i * 37) % 101) / 50.f - 1.f;
        a64.Data<double>()[i] = a32.Data<float>()[i];
      }
      for (std::int64_t i = 0; i < b32.NumElements(); ++i) {
        b32.Data<float>()[i] = static_cast<float>((i * 53) % 97) / 48.f - 1.f;
        b64.Data<double>()[i] = b32.Data<float>()[i];
      }
      const Tensor got = RunOp("matmul", attrs, {a32, b32})[0];
      const Tensor want = RunOp("matmul", attrs, {a64, b64})[0];
      REQUIRE(got.GetShape() == Shape{size.m, size.n});
      double worst = 0;
      for (std::int64_t i = 0; i < got.NumElements(); ++i) {
        worst = std::max(worst, std::abs(static_cast<double>(got.Data<float>()[i]) - want.Data<double>()[i]));
      }
      CHECK(worst < 1e-3);
    }
  }
}
