// DType, Shape and Tensor, and their fmt formatters.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "common/allocator.hpp"
#include "weir/half.hpp"
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
  CHECK(SizeOf(DType::kF16) == 2);
  CHECK(SizeOf(DType::kBF16) == 2);
  CHECK(fmt::format("{} {}", DType::kF16, DType::kBF16) == "f16 bf16");
  CHECK(IsFloating(DType::kF16));
  CHECK(IsFloating(DType::kBF16));
  static_assert(DTypeOf<bfloat16>() == DType::kBF16);
}

namespace {

float FloatOfBits(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// The representable value nearest to x among `below` and `above` (x between them), ties to the one
// with an even last bit: the reference both 16-bit conversions must match.
template <typename Half> std::uint16_t Nearest(float x, std::uint16_t below, std::uint16_t above) {
  const double low = static_cast<float>(Half::FromBits(below));
  const double high = static_cast<float>(Half::FromBits(above));
  const double distance_low = std::fabs(static_cast<double>(x) - low);
  const double distance_high = std::fabs(high - static_cast<double>(x));
  if (distance_low != distance_high) return distance_low < distance_high ? below : above;
  return (below & 1u) == 0 ? below : above;
}

// Checks the conversion of x against the nearest of its two neighbours in Half.
template <typename Half> void CheckRounding(float x) {
  const std::uint16_t got = Half(x).bits;
  const float back = static_cast<float>(Half::FromBits(got));
  if (std::isnan(x)) {
    CHECK(std::isnan(back));
    return;
  }
  if (std::isinf(back)) {  // overflow: |x| at or past the midpoint between the largest finite value and 2^16 or 2^128
    const bool is_f16 = std::is_same_v<Half, float16>;
    const double largest = static_cast<float>(Half::FromBits(is_f16 ? 0x7bffu : 0x7f7fu));
    CHECK(std::fabs(static_cast<double>(x)) >= (largest + std::ldexp(1.0, is_f16 ? 16 : 128)) / 2);
    return;
  }
  // The neighbour on the other side of x from `got` (a magnitude step up or down).
  const bool below_x = std::fabs(back) <= std::fabs(x);
  const std::uint16_t other = static_cast<std::uint16_t>(below_x ? got + 1 : got - 1);
  INFO("x = ", x, " got ", back);
  CHECK(Nearest<Half>(x, below_x ? got : other, below_x ? other : got) == got);
}

}  // namespace

TEST_CASE("float16 and bfloat16 convert every value exactly and round floats to nearest, ties to even") {
  for (std::uint32_t bits = 0; bits <= 0xffffu; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    const float f16 = float16::FromBits(h);
    const float bf16 = bfloat16::FromBits(h);
    if (std::isnan(f16)) {
      CHECK(std::isnan(static_cast<float>(float16(f16))));
    } else {
      CHECK(float16(f16).bits == h);  // every float16 converts to float and back unchanged
    }
    if (std::isnan(bf16)) {
      CHECK(std::isnan(static_cast<float>(bfloat16(bf16))));
    } else {
      CHECK(bfloat16(bf16).bits == h);
    }
  }
  // Known values: the largest float16, its overflow midpoint, the smallest subnormal, ties.
  CHECK(static_cast<float>(float16(65504.f)) == 65504.f);
  CHECK(std::isinf(static_cast<float>(float16(65520.f))));
  CHECK(static_cast<float>(float16(65519.f)) == 65504.f);
  CHECK(static_cast<float>(float16(5.9604645e-8f)) == 5.9604645e-8f);
  CHECK(static_cast<float>(float16(2.98023224e-8f)) == 0.f);  // 2^-25: the tie rounds to even (zero)
  CHECK(float16(1.f + 1.f / 2048).bits == float16(1.f).bits);  // tie below: even mantissa
  CHECK(float16(1.f + 3.f / 2048).bits == float16(1.f).bits + 2);  // tie above: even mantissa
  CHECK(static_cast<float>(bfloat16(1.f + 1.f / 256)) == 1.f);
  CHECK(static_cast<float>(bfloat16(1.f + 3.f / 256)) == 1.f + 1.f / 64);
  CHECK(std::isinf(static_cast<float>(bfloat16(3.4e38f))));
  CHECK(std::signbit(static_cast<float>(float16(-0.f))));
  // Floats across the whole range (a stride through every bit pattern) round to the nearest value.
  for (std::uint64_t bits = 0; bits <= 0xffffffffu; bits += 40961) {
    const float x = FloatOfBits(static_cast<std::uint32_t>(bits));
    CheckRounding<float16>(x);
    CheckRounding<bfloat16>(x);
  }
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

TEST_CASE("large result buffers are recycled once dropped, small ones and overflow are freed") {
  using weir::internal::AllocateUninitialized;
  const std::size_t large = std::size_t{3} << 20;
  std::byte* first = nullptr;
  {
    const std::shared_ptr<std::byte[]> a = AllocateUninitialized(large);
    first = a.get();
    std::memset(a.get(), 7, large);  // every byte is writable
  }
  {
    const std::shared_ptr<std::byte[]> again = AllocateUninitialized(large);
    CHECK(again.get() == first);  // the dropped buffer came back
    const std::shared_ptr<std::byte[]> second = AllocateUninitialized(large);
    CHECK(second.get() != first);  // a buffer in use is never handed out twice
  }
  // More than the pool keeps (256 MiB): the buffers beyond it are freed, not kept.
  std::vector<std::shared_ptr<std::byte[]>> many;
  for (int i = 0; i < 100; ++i) many.push_back(AllocateUninitialized(large));
  many.clear();
  const std::shared_ptr<std::byte[]> small = AllocateUninitialized(100);
  CHECK(small != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(small.get()) % 64 == 0);
}
