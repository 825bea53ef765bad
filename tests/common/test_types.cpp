// DType, Shape and Tensor, and their fmt formatters.
#include <doctest/doctest.h>

#include "weir/tensor.hpp"

using namespace weir;

TEST_CASE("dtypes have sizes and names") {
  CHECK(SizeOf(DType::kF32) == 4);
  CHECK(SizeOf(DType::kF64) == 8);
  CHECK(SizeOf(DType::kI32) == 4);
  CHECK(SizeOf(DType::kI64) == 8);
  CHECK(SizeOf(DType::kU8) == 1);
  CHECK(SizeOf(DType::kBool) == 1);
  CHECK(fmt::format("{}", DType::kBool) == "bool");
  CHECK(fmt::format("{:>5}", DType::kI64) == "  i64");
  CHECK(IsFloating(DType::kF64));
  CHECK_FALSE(IsFloating(DType::kI32));
  static_assert(DTypeOf<std::int64_t>() == DType::kI64);
}

TEST_CASE("shapes count elements, resolve negative axes and format like (100,784)") {
  const Shape shape{100, 784};
  CHECK(shape.Rank() == 2);
  CHECK(shape.NumElements() == 78400);
  CHECK(shape[-1] == 784);
  CHECK(fmt::format("{}", shape) == "(100,784)");
  CHECK(Shape{}.NumElements() == 1);
  CHECK(fmt::format("{}", Shape{}) == "()");
  CHECK(Shape{3, 0}.NumElements() == 0);
  CHECK_THROWS_AS(shape.Dim(2), std::out_of_range);
  CHECK_THROWS_AS(Shape({2, -1}), std::invalid_argument);
  CHECK(Shape{1, 2} == Shape(std::vector<std::int64_t>{1, 2}));
}

TEST_CASE("tensors own zeroed, aligned storage; copies share it and Clone copies") {
  Tensor t(Shape{2, 3}, DType::kF32);
  CHECK(t.NumBytes() == 24);
  CHECK(reinterpret_cast<std::uintptr_t>(t.RawData()) % 64 == 0);
  CHECK(t.ToVector<float>() == std::vector<float>(6, 0.f));
  Tensor shared = t;
  Tensor deep = t.Clone();
  t.Data<float>()[0] = 5;
  CHECK(shared.Data<float>()[0] == 5);
  CHECK(deep.Data<float>()[0] == 0);
  CHECK_THROWS_WITH_AS(t.Data<double>(), "[Tensor] element access as f64 but the tensor holds f32", std::invalid_argument);
  CHECK_THROWS_AS(Tensor::FromVector<float>({2}, {1, 2, 3}), std::invalid_argument);
  CHECK(Tensor::Scalar<std::int32_t>(7).GetShape().Rank() == 0);
}

TEST_CASE("tensors format with dtype, shape and (abbreviated) values") {
  CHECK(fmt::format("{}", Tensor::FromVector<float>({2, 2}, {1, 2.5f, 3, 4})) == "Tensor(f32, (2,2), [1, 2.5, 3, 4])");
  CHECK(fmt::format("{}", Tensor::FromVector<std::uint8_t>({2}, {7, 255})) == "Tensor(u8, (2), [7, 255])");
  CHECK(fmt::format("{}", Tensor::FromVector<bool>({2}, {true, false})) == "Tensor(bool, (2), [true, false])");
  std::vector<std::int64_t> many(100);
  for (std::size_t i = 0; i < many.size(); ++i) many[i] = static_cast<std::int64_t>(i);
  CHECK(fmt::format("{}", Tensor::FromVector<std::int64_t>({100}, many)) ==
        "Tensor(i64, (100), [0, 1, 2, 3, 4, 5, 6, 7, ..., 92, 93, 94, 95, 96, 97, 98, 99])");
  CHECK(fmt::format("{}", Tensor()) == "Tensor(undefined)");
}
