// Every starter op: shape/dtype inference and its CPU kernel against hand-computed values.
#include <doctest/doctest.h>

#include "op_test_util.hpp"
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
  CHECK(RunOp("relu", {}, {x})[0].ToVector<float>() == std::vector<float>{0, 0, 2, 0});
}
