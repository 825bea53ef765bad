// More math ops: concat, the unary family, softmax/sigmoid cross entropy with dense labels,
// reduce_max/min, maximum/minimum, clip_by_value and one_hot — hand-computed values, bad inputs, f32
// kernels against f64, and finite-difference gradients (tests/gradient_check.hpp).
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "gradient_check.hpp"
#include "kernels/attrs/concat_attrs.hpp"
#include "kernels/attrs/dropout_attrs.hpp"
#include "kernels/attrs/update_params.hpp"
#include "kernels/functors/philox.hpp"
#include "kernels/functors/unary.hpp"
#include "op_test_util.hpp"
#include "weir/weir.hpp"

using weir::Blob;
using weir::DType;
using weir::Shape;
using weir::Tensor;
using weir::UnaryOpKind;
using weir::internal::KernelError;
using weir::testing::CheckClose;
using weir::testing::CheckGradients;
using weir::testing::Random;
using weir::testing::RunOp;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// `x` as f32 (or any dtype T), for running the f32 kernel on the f64 reference's data.
template <typename T> Tensor CastTo(const Tensor& x) {
  std::vector<T> values;
  for (double v : x.ToVector<double>()) values.push_back(static_cast<T>(v));
  return Tensor::FromVector<T>(x.GetShape(), values);
}

std::vector<double> ToDoubles(const Tensor& t) {
  std::vector<double> out;
  if (t.GetDType() == DType::kF32) {
    for (float v : t.ToVector<float>()) out.push_back(v);
  } else {
    out = t.ToVector<double>();
  }
  return out;
}

/// Runs `type` on f64 inputs and on the same inputs cast to f32; each f32 output must be within
/// `tolerance` (relative, absolute near 0) of the f64 one.
void CheckF32AgainstF64(std::string_view type, std::any attrs, const std::vector<Tensor>& inputs,
                        double tolerance = 1e-5) {
  std::vector<Tensor> f32_inputs;
  for (const Tensor& input : inputs) f32_inputs.push_back(input.GetDType() == DType::kF64 ? CastTo<float>(input) : input);
  const std::vector<Tensor> reference = RunOp(type, attrs, inputs);
  const std::vector<Tensor> got = RunOp(type, attrs, f32_inputs);
  REQUIRE(reference.size() == got.size());
  for (std::size_t o = 0; o < got.size(); ++o) {
    CHECK(got[o].GetShape() == reference[o].GetShape());
    const std::vector<double> want = ToDoubles(reference[o]);
    const std::vector<double> have = ToDoubles(got[o]);
    for (std::size_t i = 0; i < want.size(); ++i) {
      INFO(type, " output ", o, " element ", i, ": f64 ", want[i], ", f32 ", have[i]);
      CHECK(std::abs(have[i] - want[i]) <= tolerance * (1 + std::abs(want[i])));
    }
  }
}

/// Element-exact comparison that treats NaN as equal to NaN and keeps the sign of zeros apart
/// only where `expected` asks for a NaN.
template <typename T> void CheckExact(const Tensor& t, const Shape& shape, const std::vector<double>& expected) {
  CHECK(t.GetShape() == shape);
  const std::vector<T> got = t.ToVector<T>();
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element ", i, ": got ", static_cast<double>(got[i]), ", expected ", expected[i]);
    if (std::isnan(expected[i])) {
      CHECK(std::isnan(static_cast<double>(got[i])));
    } else {
      CHECK(static_cast<double>(got[i]) == expected[i]);
    }
  }
}

/// f64 values in (lo, hi), for functions whose domain is not the whole line.
Tensor Uniform(Shape shape, double lo, double hi) {
  Tensor t(std::move(shape), DType::kF64);
  std::uniform_real_distribution<double> value(lo, hi);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) t.Data<double>()[i] = value(weir::testing::Rng());
  return t;
}

weir::testing::BuildFn OneInput(std::function<Blob(const Blob&)> op) { return weir::testing::Unary(std::move(op)); }

}  // namespace

// --- concat ---------------------------------------------------------------------------------

TEST_CASE("concat joins along any axis, negative axes too") {
  const Tensor a = Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4});
  const Tensor b = Tensor::FromVector<float>({2, 1}, {5, 6});
  const Tensor c = Tensor::FromVector<float>({2, 3}, {7, 8, 9, 10, 11, 12});
  CheckClose<float>(RunOp("concat", weir::ConcatAttrs{.axis = 1}, {a, b, c})[0], {2, 6},
                    {1, 2, 5, 7, 8, 9, 3, 4, 6, 10, 11, 12});
  CheckClose<float>(RunOp("concat", weir::ConcatAttrs{.axis = -1}, {a, b})[0], {2, 3}, {1, 2, 5, 3, 4, 6});
  CheckClose<float>(RunOp("concat", weir::ConcatAttrs{.axis = 0}, {a, Tensor::FromVector<float>({1, 2}, {9, 9})})[0],
                    {3, 2}, {1, 2, 3, 4, 9, 9});
  // Middle axis of a 3-D tensor, and an input that is empty along the axis.
  const Tensor x = Tensor::FromVector<double>({2, 1, 2}, {1, 2, 3, 4});
  const Tensor y = Tensor::FromVector<double>({2, 2, 2}, {5, 6, 7, 8, 9, 10, 11, 12});
  CheckClose<double>(RunOp("concat", weir::ConcatAttrs{.axis = 1}, {x, Tensor(Shape{2, 0, 2}, DType::kF64), y})[0],
                     {2, 3, 2}, {1, 2, 5, 6, 7, 8, 3, 4, 9, 10, 11, 12});
  // Integers and bytes go through the same byte copy; one input is a copy.
  CHECK(RunOp("concat", weir::ConcatAttrs{}, {Tensor::FromVector<std::int64_t>({2}, {1, 2}),
                                              Tensor::FromVector<std::int64_t>({1}, {-3})})[0]
            .ToVector<std::int64_t>() == std::vector<std::int64_t>{1, 2, -3});
  CHECK(RunOp("concat", weir::ConcatAttrs{}, {Tensor::FromVector<std::uint8_t>({1}, {7})})[0].ToVector<std::uint8_t>() ==
        std::vector<std::uint8_t>{7});
}

TEST_CASE("concat_grad cuts dy back into one slice per input") {
  const Tensor dy = Tensor::FromVector<float>({2, 6}, {1, 2, 5, 7, 8, 9, 3, 4, 6, 10, 11, 12});
  const std::vector<Tensor> parts =
      RunOp("concat_grad", weir::internal::ConcatGradAttrs{.axis = 1, .sizes = {2, 1, 3}}, {dy});
  REQUIRE(parts.size() == 3);
  CheckClose<float>(parts[0], {2, 2}, {1, 2, 3, 4});
  CheckClose<float>(parts[1], {2, 1}, {5, 6});
  CheckClose<float>(parts[2], {2, 3}, {7, 8, 9, 10, 11, 12});
  CHECK_THROWS_WITH_AS(RunOp("concat_grad", weir::internal::ConcatGradAttrs{.axis = 1, .sizes = {2, 2}}, {dy}),
                       "[concat_grad] sizes [2,2] do not add up to dy (2,6) along axis 1", std::invalid_argument);
}

TEST_CASE("concat rejects mismatched inputs") {
  const Tensor a(Shape{2, 3}, DType::kF32);
  CHECK_THROWS_WITH_AS(RunOp("concat", weir::ConcatAttrs{}, {a, Tensor(Shape{2, 3}, DType::kF64)}),
                       "[concat] dtypes differ: input 0 is f32, input 1 is f64", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("concat", weir::ConcatAttrs{}, {a, Tensor(Shape{2, 4}, DType::kF32)}),
                       "[concat] input 1 (2,4) does not match input 0 (2,3) outside axis 0", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("concat", weir::ConcatAttrs{.axis = 1}, {a, Tensor(Shape{2, 3, 1}, DType::kF32)}),
                       "[concat] input 1 (2,3,1) does not match input 0 (2,3) outside axis 1", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("concat", weir::ConcatAttrs{.axis = 2}, {a, a}),
                       "[concat] axis 2 out of range for rank 2", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("concat", weir::ConcatAttrs{}, {Tensor(Shape{}, DType::kF32)}),
                       "[concat] cannot join 0-D inputs, got input 0 ()", std::invalid_argument);
  CHECK_THROWS_WITH_AS(weir::Concat({}), "[concat] argument 'inputs' must hold at least one blob, got none",
                       std::invalid_argument);
}

TEST_CASE("concat runs in a job with many inputs") {
  weir::JobBuilder builder("concat_job");
  std::vector<Blob> inputs;
  std::vector<Tensor> values;
  for (int i = 0; i < 5; ++i) {
    inputs.push_back(builder.Placeholder(fmt::format("x{}", i), {1, i + 1}));
    values.push_back(Tensor::FromVector<float>({1, i + 1}, std::vector<float>(static_cast<std::size_t>(i + 1), i)));
  }
  const Blob y = weir::Concat(inputs, {.axis = -1}, "joined");
  CHECK(y.GetShape() == Shape{1, 15});
  builder.Output("y", y);
  weir::Session session;
  const weir::Outputs out = session.Call(builder.Build(), values);
  CHECK(out[0].ToVector<float>() == std::vector<float>{0, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4});
}

TEST_CASE("concat gradients by finite differences") {
  weir::Session session;
  CheckGradients(session, "concat_axis1", {Random({2, 2}), Random({2, 1}), Random({2, 3})},
                 [](const std::vector<Blob>& x) { return weir::Concat(x, {.axis = 1}); });
  CheckGradients(session, "concat_axis0_3d", {Random({1, 2, 3}), Random({2, 2, 3})},
                 [](const std::vector<Blob>& x) { return weir::Concat(x, {.axis = -3}); });
  // One input twice: both slices flow back into it.
  CheckGradients(session, "concat_same_input", {Random({2, 3})},
                 OneInput([](const Blob& x) { return weir::Concat({x, weir::Square(x), x}, {.axis = 0}); }));
  // An input that needs no gradient (integer, cast): its slice of dy is cut but read by nobody.
  CheckGradients(session, "concat_with_constant_part", {Random({2, 2}), weir::testing::Labels({1, 2})},
                 [](const std::vector<Blob>& x) {
                   const Blob labels = weir::Reshape(weir::Cast(x[1], {.dtype = DType::kF64}), {.shape = {2, 1}});
                   return weir::Concat({labels, x[0]}, {.axis = 1});
                 });
}

// --- unary ----------------------------------------------------------------------------------

TEST_CASE("unary kinds on hand-computed values, f32 and f64") {
  const std::vector<double> line{-2, -0.5, 0.5, 2};
  const std::vector<double> positive{0.25, 0.5, 1, 4};
  const std::vector<double> unit{-0.75, -0.25, 0.25, 0.75};
  const std::vector<double> big{1.25, 1.5, 2, 3};
  const std::vector<double> with_zero{-2, 0, 0.5, 2};
  const std::vector<double> wide{-4, -2.5, 2.5, 4};  // both sides of the hard activations' kinks at ±3
  struct Case {
    UnaryOpKind kind;
    const std::vector<double>* x;
    std::vector<double> y;
  };
  const std::vector<Case> cases{
      {UnaryOpKind::kExp, &line, {0.1353352832366127, 0.6065306597126334, 1.6487212707001282, 7.38905609893065}},
      {UnaryOpKind::kLog, &positive, {-1.3862943611198906, -0.6931471805599453, 0.0, 1.3862943611198906}},
      {UnaryOpKind::kSqrt, &positive, {0.5, 0.7071067811865476, 1.0, 2.0}},
      {UnaryOpKind::kRsqrt, &positive, {2.0, 1.414213562373095, 1.0, 0.5}},
      {UnaryOpKind::kSquare, &line, {4, 0.25, 0.25, 4}},
      {UnaryOpKind::kAbs, &line, {2, 0.5, 0.5, 2}},
      {UnaryOpKind::kNegative, &line, {2, 0.5, -0.5, -2}},
      {UnaryOpKind::kReciprocal, &line, {-0.5, -2.0, 2.0, 0.5}},
      {UnaryOpKind::kLog1p, &positive, {0.22314355131420976, 0.4054651081081644, 0.6931471805599453, 1.6094379124341003}},
      {UnaryOpKind::kExpm1, &line, {-0.8646647167633873, -0.3934693402873666, 0.6487212707001282, 6.38905609893065}},
      {UnaryOpKind::kSoftplus, &line, {0.1269280110429725, 0.4740769841801067, 0.9740769841801067, 2.1269280110429727}},
      {UnaryOpKind::kSign, &line, {-1, -1, 1, 1}},
      {UnaryOpKind::kFloor, &line, {-2, -1, 0, 2}},
      {UnaryOpKind::kCeil, &line, {-2, -0.0, 1, 2}},
      {UnaryOpKind::kSin, &line, {-0.9092974268256817, -0.479425538604203, 0.479425538604203, 0.9092974268256817}},
      {UnaryOpKind::kCos, &line, {-0.4161468365471424, 0.8775825618903728, 0.8775825618903728, -0.4161468365471424}},
      {UnaryOpKind::kTan, &line, {2.185039863261519, -0.5463024898437905, 0.5463024898437905, -2.185039863261519}},
      {UnaryOpKind::kAsin, &unit, {-0.848062078981481, -0.25268025514207865, 0.25268025514207865, 0.848062078981481}},
      {UnaryOpKind::kAcos, &unit, {2.4188584057763776, 1.8234765819369754, 1.318116071652818, 0.7227342478134157}},
      {UnaryOpKind::kAtan, &line, {-1.1071487177940904, -0.4636476090008061, 0.4636476090008061, 1.1071487177940904}},
      {UnaryOpKind::kSinh, &line, {-3.626860407847019, -0.5210953054937474, 0.5210953054937474, 3.626860407847019}},
      {UnaryOpKind::kCosh, &line, {3.7621956910836314, 1.1276259652063807, 1.1276259652063807, 3.7621956910836314}},
      {UnaryOpKind::kAsinh, &line, {-1.4436354751788103, -0.48121182505960347, 0.48121182505960347, 1.4436354751788103}},
      {UnaryOpKind::kAcosh, &big, {0.6931471805599453, 0.9624236501192069, 1.3169578969248166, 1.762747174039086}},
      {UnaryOpKind::kAtanh, &unit, {-0.9729550745276566, -0.25541281188299536, 0.25541281188299536, 0.9729550745276566}},
      {UnaryOpKind::kErf, &line, {-0.9953222650189527, -0.5204998778130465, 0.5204998778130465, 0.9953222650189527}},
      {UnaryOpKind::kErfc, &line, {1.9953222650189528, 1.5204998778130465, 0.4795001221869535, 0.004677734981047265}},
      {UnaryOpKind::kLgamma, &positive, {1.2880225246980772, 0.5723649429247004, 0.0, 1.7917594692280554}},
      {UnaryOpKind::kLogSigmoid, &line, {-2.1269280110429727, -0.9740769841801067, -0.4740769841801067, -0.1269280110429725}},
      {UnaryOpKind::kGelu, &line, {-0.04550026389635842, -0.15426876936299344, 0.34573123063700656, 1.9544997361036416}},
      {UnaryOpKind::kReciprocalNoNan, &with_zero, {-0.5, 0, 2, 0.5}},
      {UnaryOpKind::kRelu, &line, {0, 0, 0.5, 2}},
      {UnaryOpKind::kSigmoid, &line, {0.11920292202211755, 0.3775406687981454, 0.6224593312018546, 0.8807970779778823}},
      {UnaryOpKind::kTanh, &line, {-0.9640275800758169, -0.46211715726000974, 0.46211715726000974, 0.9640275800758169}},
      {UnaryOpKind::kHardsigmoid, &wide, {0, 0.08333333333333333, 0.9166666666666666, 1}},
      {UnaryOpKind::kHardswish, &wide, {0, -0.20833333333333334, 2.2916666666666665, 4}},
  };
  // Every kind has a case here.
  CHECK(cases.size() + 1 == std::size(weir::kUnaryOpKindNames));  // kRound: below
  for (const Case& c : cases) {
    INFO("kind ", static_cast<int>(c.kind));
    const weir::UnaryAttrs attrs{.kind = c.kind};
    CheckClose<double>(RunOp("unary", attrs, {Tensor::FromVector<double>({2, 2}, *c.x)})[0], {2, 2}, c.y, 1e-14);
    CheckClose<float>(RunOp("unary", attrs, {CastTo<float>(Tensor::FromVector<double>({4}, *c.x))})[0], {4}, c.y, 1e-6);
  }
  CHECK(std::signbit(RunOp("unary", weir::UnaryAttrs{.kind = UnaryOpKind::kNegative},
                           {Tensor::Scalar<double>(0.0)})[0].ToVector<double>()[0]));
  // Round is half to even; sign of zero is zero.
  CheckExact<float>(RunOp("unary", weir::UnaryAttrs{.kind = UnaryOpKind::kRound},
                          {Tensor::FromVector<float>({8}, {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 0.4f, 0.6f})})[0],
                    {8}, {-2, -2, -0.0, 0, 2, 2, 0, 1});
  CheckExact<double>(RunOp("unary", weir::UnaryAttrs{.kind = UnaryOpKind::kSign},
                           {Tensor::FromVector<double>({3}, {0.0, -0.0, kNaN})})[0],
                     {3}, {0, 0, 0});
  // Outside the domain: what the C library gives.
  CheckExact<double>(RunOp("unary", weir::UnaryAttrs{.kind = UnaryOpKind::kLog},
                           {Tensor::FromVector<double>({3}, {0, -1, kInf})})[0],
                     {3}, {-kInf, kNaN, kInf});
  // Softplus neither overflows nor underflows to a wrong value far out.
  CheckClose<double>(RunOp("unary", weir::UnaryAttrs{.kind = UnaryOpKind::kSoftplus},
                           {Tensor::FromVector<double>({2}, {1000, -1000})})[0],
                     {2}, {1000, 0});
  CheckClose<double>(RunOp("unary", weir::UnaryAttrs{.kind = UnaryOpKind::kSoftplus},
                           {Tensor::FromVector<double>({1}, {-100})})[0],
                     {1}, {3.720075976020836e-44}, 1e-12);
  // Empty tensors run nothing.
  CHECK(RunOp("unary", weir::UnaryAttrs{.kind = UnaryOpKind::kExp}, {Tensor(Shape{0, 3}, DType::kF32)})[0].GetShape() ==
        Shape{0, 3});
}

TEST_CASE("unary on integers: square, abs, negative and sign wrap like two's complement") {
  constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
  const Tensor x = Tensor::FromVector<std::int32_t>({5}, {-3, 0, 4, kMin, 46341});
  const auto run = [&](UnaryOpKind kind) {
    return RunOp("unary", weir::UnaryAttrs{.kind = kind}, {x})[0].ToVector<std::int32_t>();
  };
  CHECK(run(UnaryOpKind::kAbs) == std::vector<std::int32_t>{3, 0, 4, kMin, 46341});
  CHECK(run(UnaryOpKind::kNegative) == std::vector<std::int32_t>{3, 0, -4, kMin, -46341});
  CHECK(run(UnaryOpKind::kSign) == std::vector<std::int32_t>{-1, 0, 1, -1, 1});
  // 46341² = 2147488281 wraps to 2147488281 - 2^32.
  CHECK(run(UnaryOpKind::kSquare) == std::vector<std::int32_t>{9, 0, 16, 0, -2147479015});
  CHECK(RunOp("unary", weir::UnaryAttrs{.kind = UnaryOpKind::kSquare}, {Tensor::FromVector<std::int64_t>({1}, {-3000000000})})[0]
            .ToVector<std::int64_t>() == std::vector<std::int64_t>{9000000000000000000});
}

TEST_CASE("unary rejects dtypes a kind does not take") {
  CHECK_THROWS_WITH_AS(RunOp("unary", weir::UnaryAttrs{.kind = UnaryOpKind::kExp}, {Tensor(Shape{2}, DType::kI32)}),
                       "[unary] exp expects a floating (f32 or f64) x, got i32", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("unary", weir::UnaryAttrs{.kind = UnaryOpKind::kRsqrt}, {Tensor(Shape{2}, DType::kI64)}),
                       "[unary] rsqrt expects a floating (f32 or f64) x, got i64", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("unary", weir::UnaryAttrs{.kind = UnaryOpKind::kAbs}, {Tensor(Shape{2}, DType::kU8)}),
                       "[unary] abs expects an f32, f64, i32 or i64 x, got u8", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("unary", weir::UnaryAttrs{.kind = static_cast<UnaryOpKind>(200)},
                             {Tensor(Shape{2}, DType::kF32)}),
                       "[unary] unknown kind 200", std::invalid_argument);
  weir::JobBuilder builder("unary_errors");
  const Blob i = builder.Placeholder("i", {2}, DType::kI32);
  CHECK_THROWS_WITH_AS(weir::Log(i), "[unary] log expects a floating (f32 or f64) x, got i32", std::invalid_argument);
}

TEST_CASE("unary f32 kernels match the f64 ones") {
  const Tensor line = Random({64});
  for (std::size_t k = 0; k < std::size(weir::kUnaryOpKindNames); ++k) {
    const auto kind = static_cast<UnaryOpKind>(k);
    INFO("kind ", weir::kUnaryOpKindNames[k]);
    const auto [low, high] =
        weir::internal::VisitUnaryKind(kind, []<typename Fn>() { return std::pair{Fn::kLow, Fn::kHigh}; });
    const Tensor x = low == -2.0 && high == 2.0 ? line : Uniform({64}, low, high);
    // Rounding kinds compare exactly on inputs away from their steps: f32 keeps the same side.
    CheckF32AgainstF64("unary", weir::UnaryAttrs{.kind = kind}, {x});
    CheckF32AgainstF64("unary_grad", weir::UnaryAttrs{.kind = kind}, {Random({64}), x});
  }
}

TEST_CASE("f32 gelu and its gradient (vectorized loops) match the exact f64 math across the line") {
  // 200001 points over [-15, 15] (the deep tails included), odd counts so the loops' remainders run too,
  // and the edges: signed zeros, infinities, NaN, far out on both sides.
  std::vector<float> values;
  for (int i = 0; i <= 200000; ++i) values.push_back(-15.f + 30.f * static_cast<float>(i) / 200000.f);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const float v : {0.f, -0.f, inf, -inf, nan, -87.f, -200.f, 200.f, 1e-30f, -1e-30f}) {
    values.push_back(v);
  }
  const auto n = static_cast<std::int64_t>(values.size());
  const Tensor x = Tensor::FromVector<float>({n}, values);
  const Tensor dy = Tensor::FromVector<float>({n}, std::vector<float>(values.size(), 1.f));
  const std::vector<float> y = RunOp("unary", weir::UnaryAttrs{.kind = UnaryOpKind::kGelu}, {x})[0].ToVector<float>();
  const std::vector<float> dx =
      RunOp("unary_grad", weir::UnaryAttrs{.kind = UnaryOpKind::kGelu}, {dy, x})[0].ToVector<float>();
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    const double want = 0.5 * v * std::erfc(-v * M_SQRT1_2);
    const double want_grad = 0.5 * std::erfc(-v * M_SQRT1_2) + v * std::exp(-0.5 * v * v) * 0.5 * M_2_SQRTPI * M_SQRT1_2;
    INFO("x = ", v);
    if (std::isnan(want)) {
      CHECK(std::isnan(y[i]));
    } else if (std::isinf(want)) {
      CHECK(y[i] == want);
    } else {
      // A few ulps near 0, growing with x² in the left tail, where e^(-x²/2) magnifies the rounding
      // of x² (1.4e-5 relative at -11.6, where gelu is 1e-30).
      CHECK(std::abs(y[i] - want) <= 6e-7 * (1 + v * v / 4) * std::abs(want) + 1e-37);
    }
    if (std::isnan(want_grad)) {
      CHECK(std::isnan(dx[i]));
    } else {
      CHECK(std::abs(dx[i] - want_grad) <= 4e-7 * std::max(std::abs(want_grad), 1.0));
    }
  }
}

TEST_CASE("hardsigmoid and hardswish gradients: 0 below -3, hardswish's dy above 3, OneFlow's slopes between") {
  const Tensor x = Tensor::FromVector<double>({7}, {-4, -3, -2.5, 0.5, 2.5, 3, 4});
  const Tensor dy = Tensor::FromVector<double>({7}, std::vector<double>(7, 2.0));
  const auto grad = [&](UnaryOpKind kind) { return RunOp("unary_grad", weir::UnaryAttrs{.kind = kind}, {dy, x})[0]; };
  CheckClose<double>(grad(UnaryOpKind::kHardsigmoid), {7}, {0, 0, 2.0 / 6, 2.0 / 6, 2.0 / 6, 0, 0}, 1e-15);
  CheckClose<double>(grad(UnaryOpKind::kHardswish), {7}, {0, 0, 2 * (-2.5 / 3 + 0.5), 2 * (0.5 / 3 + 0.5),
                                                         2 * (2.5 / 3 + 0.5), 2, 2}, 1e-15);
}

TEST_CASE("reduce_prod: products over axes, integers wrapping, and the gradient with zeros among the factors") {
  const Tensor x = Tensor::FromVector<double>({2, 3}, {1, 2, 3, -0.5, 4, 2});
  CheckClose<double>(RunOp("reduce_prod", weir::ReduceAttrs{{1}}, {x})[0], {2}, {6, -4});
  CheckClose<double>(RunOp("reduce_prod", weir::ReduceAttrs{{0}, true}, {x})[0], {1, 3}, {-0.5, 8, 6});
  CheckClose<double>(RunOp("reduce_prod", weir::ReduceAttrs{}, {x})[0], {}, {-24});
  CheckClose<double>(RunOp("reduce_prod", weir::ReduceAttrs{{1}}, {Tensor(Shape{2, 0}, DType::kF64)})[0], {2}, {1, 1});
  // 2^31 * 2 wraps to 0 in i32, as the sums wrap.
  CheckExact<std::int32_t>(RunOp("reduce_prod", weir::ReduceAttrs{}, {Tensor::FromVector<std::int32_t>({3}, {65536, 32768, 2})})[0],
                           {}, {0});
  CHECK_THROWS_WITH_AS(RunOp("reduce_prod", weir::ReduceAttrs{}, {Tensor(Shape{2}, DType::kU8)}),
                       "[reduce_prod] expects an f32, f64, f16, bf16, i32 or i64 input, got u8", std::invalid_argument);
  weir::Session session;
  // No zero, one zero in a row (its element gets the product of the rest), two zeros in a row (all 0).
  CheckGradients(session, "reduce_prod_rows", {Tensor::FromVector<double>({3, 3}, {1.5, -2, 0.5, 0, 3, -1.25, 0, 2, 0})},
                 [](const std::vector<Blob>& in) { return weir::ReduceProd(in[0], {{1}}); });
  CheckGradients(session, "reduce_prod_all", {Random({2, 3})},
                 [](const std::vector<Blob>& in) { return weir::ReduceProd(in[0]); });
}

TEST_CASE("lgamma: values and its gradient, the digamma function, on both sides of zero; NaN gradients at the poles") {
  const weir::UnaryAttrs lgamma{.kind = UnaryOpKind::kLgamma};
  CheckClose<double>(RunOp("unary", lgamma, {Tensor::FromVector<double>({3}, {-0.5, -1.5, 30})})[0], {3},
                     {1.265512123484645, 0.8600470153764812, 71.25703896716801}, 1e-13);
  // ψ(0.25) = -γ - π/2 - 3 ln 2, ψ(0.5) = -γ - 2 ln 2, ψ(1) = -γ, ψ(4) = -γ + 1 + 1/2 + 1/3, ψ(-0.5) =
  // ψ(1.5) = ψ(0.5) + 2 (reflection, cot(-π/2) = 0), ψ(10.5) = ψ(0.5) + Σ 1/(k + 1/2) for k < 10.
  const Tensor x = Tensor::FromVector<double>({6}, {0.25, 0.5, 1, 4, -0.5, 10.5});
  CheckClose<double>(RunOp("unary_grad", lgamma, {Tensor::FromVector<double>({6}, {1, 1, 1, 1, 1, 2}), x})[0], {6},
                     {-4.227453533376265, -1.9635100260214235, -0.5772156649015329, 1.2561176684318005,
                      0.03648997397857652, 2 * 2.3030010342976857},
                     1e-10);
  const std::vector<double> poles =
      RunOp("unary_grad", lgamma, {Tensor::FromVector<double>({2}, {1, 1}), Tensor::FromVector<double>({2}, {0, -2})})[0]
          .ToVector<double>();
  CHECK(std::isnan(poles[0]));
  CHECK(std::isnan(poles[1]));
}

TEST_CASE("unary_grad: abs at 0 and the rounding kinds give zero") {
  const Tensor dy = Tensor::FromVector<double>({3}, {2, 3, 4});
  const Tensor x = Tensor::FromVector<double>({3}, {-1, 0, 1});
  CheckExact<double>(RunOp("unary_grad", weir::UnaryAttrs{.kind = UnaryOpKind::kAbs}, {dy, x})[0], {3}, {-2, 0, 4});
  for (UnaryOpKind kind : {UnaryOpKind::kSign, UnaryOpKind::kFloor, UnaryOpKind::kCeil, UnaryOpKind::kRound}) {
    CheckExact<double>(RunOp("unary_grad", weir::UnaryAttrs{.kind = kind}, {dy, x})[0], {3}, {0, 0, 0});
  }
  CHECK_THROWS_WITH_AS(RunOp("unary_grad", weir::UnaryAttrs{}, {dy, Tensor(Shape{2}, DType::kF64)}),
                       "[unary_grad] dy f64(3) does not match y f64(2)", std::invalid_argument);
}

TEST_CASE("unary gradients by finite differences, every kind") {
  weir::Session session;
  const auto check = [&](const char* name, const Tensor& x, Blob (*fn)(const Blob&, std::string_view)) {
    CheckGradients(session, name, {x}, OneInput([fn](const Blob& b) { return fn(b, {}); }));
  };
  // Every kind with a derivative, on inputs from its functor's range.
  for (std::size_t k = 0; k < std::size(weir::kUnaryOpKindNames); ++k) {
    const auto kind = static_cast<UnaryOpKind>(k);
    if (kind == UnaryOpKind::kSign || kind == UnaryOpKind::kFloor || kind == UnaryOpKind::kCeil ||
        kind == UnaryOpKind::kRound) {
      continue;  // steps: below
    }
    const auto [low, high] =
        weir::internal::VisitUnaryKind(kind, []<typename Fn>() { return std::pair{Fn::kLow, Fn::kHigh}; });
    CheckGradients(session, weir::kUnaryOpKindNames[k], {Uniform({2, 3}, low, high)},
                   OneInput([kind](const Blob& x) { return weir::Unary(x, {kind}); }));
  }
  check("exp", Random({2, 3}), weir::Exp);  // the named functions are the kinds
  // Zero gradients; the numeric ones are 0 too away from the steps (0.2 from any integer or half).
  const Tensor steps = Tensor::FromVector<double>({2, 3}, {-1.7, -0.3, 0.3, 0.7, 1.3, 2.25});
  check("sign", steps, weir::Sign);
  check("floor", steps, weir::Floor);
  check("ceil", steps, weir::Ceil);
  check("round", steps, weir::Round);
  // A chain: gradients compose through several kinds.
  CheckGradients(session, "chain", {Random({3})}, OneInput([](const Blob& x) {
                   return weir::Log(weir::Softplus(weir::Sin(weir::Square(x))));
                 }));
}

// --- softmax_cross_entropy ------------------------------------------------------------------

TEST_CASE("softmax_cross_entropy with dense labels") {
  // lse(1,2,3) = 3.4076059644443806.
  const Tensor logits = Tensor::FromVector<float>({3, 3}, {1, 2, 3, 1, 2, 3, 1000, 0, 0});
  const Tensor labels = Tensor::FromVector<float>({3, 3}, {0, 0, 1, 0.5, 0.5, 0, 1, 0, 0});
  CheckClose<float>(RunOp("softmax_cross_entropy", {}, {labels, logits})[0], {3},
                    {0.4076059644443806, 1.9076059644443806, 0});
  // Any rank: the last axis holds the classes.
  const Tensor logits3 = Tensor::FromVector<double>({2, 1, 3}, {1, 2, 3, 3, 2, 1});
  const Tensor labels3 = Tensor::FromVector<double>({2, 1, 3}, {0, 1, 0, 0, 1, 0});
  CheckClose<double>(RunOp("softmax_cross_entropy", {}, {labels3, logits3})[0], {2, 1},
                     {1.4076059644443806, 1.4076059644443806}, 1e-14);
  // A one-hot label row agrees with the sparse op.
  CheckClose<float>(RunOp("sparse_softmax_cross_entropy", {}, {Tensor::FromVector<std::int32_t>({1}, {2}),
                                                               Tensor::FromVector<float>({1, 3}, {1, 2, 3})})[0],
                    {1}, {0.4076059644443806});
}

TEST_CASE("softmax_cross_entropy_grad: softmax minus labels, and minus log softmax") {
  const Tensor logits = Tensor::FromVector<double>({2, 3}, {1, 2, 3, 1, 2, 3});
  const Tensor labels = Tensor::FromVector<double>({2, 3}, {0, 0, 1, 1, 1, 0});
  const Tensor dy = Tensor::FromVector<double>({2}, {2, 1});
  const std::vector<Tensor> grads = RunOp("softmax_cross_entropy_grad", {}, {labels, logits, dy});
  const double s0 = 0.09003057317038043, s1 = 0.24472847105479759, s2 = 0.6652409557748217;
  // Row 0: (softmax - labels) · 2; row 1: labels sum to 2, so softmax · 2 - labels.
  CheckClose<double>(grads[1], {2, 3}, {2 * s0, 2 * s1, 2 * (s2 - 1), 2 * s0 - 1, 2 * s1 - 1, 2 * s2}, 1e-12);
  CheckClose<double>(grads[0], {2, 3},
                     {-2 * -2.4076059644443806, -2 * -1.4076059644443806, -2 * -0.4076059644443806, 2.4076059644443806,
                      1.4076059644443806, 0.4076059644443806},
                     1e-12);
  CheckF32AgainstF64("softmax_cross_entropy", {}, {Uniform({4, 5}, 0, 1), Random({4, 5})});
  CheckF32AgainstF64("softmax_cross_entropy_grad", {}, {Uniform({4, 5}, 0, 1), Random({4, 5}), Random({4})});
}

TEST_CASE("softmax_cross_entropy rejects bad inputs") {
  const Tensor logits(Shape{2, 3}, DType::kF32);
  CHECK_THROWS_WITH_AS(RunOp("softmax_cross_entropy", {}, {Tensor(Shape{2, 4}, DType::kF32), logits}),
                       "[softmax_cross_entropy] labels (2,4) do not match logits (2,3)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("softmax_cross_entropy", {}, {Tensor(Shape{2, 3}, DType::kF64), logits}),
                       "[softmax_cross_entropy] dtypes differ: labels f64 vs logits f32", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("softmax_cross_entropy", {}, {Tensor(Shape{2}, DType::kI32), Tensor(Shape{2}, DType::kI32)}),
                       "[softmax_cross_entropy] expects floating logits, got i32", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("softmax_cross_entropy", {}, {Tensor(Shape{}, DType::kF32), Tensor(Shape{}, DType::kF32)}),
                       "[softmax_cross_entropy] expects logits (..., C), got a 0-D ()", std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      RunOp("softmax_cross_entropy", {}, {Tensor(Shape{2, 0}, DType::kF32), Tensor(Shape{2, 0}, DType::kF32)}),
      "[softmax_cross_entropy] logits (2,0) have no classes", std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      RunOp("softmax_cross_entropy_grad", {}, {logits, logits, Tensor(Shape{3}, DType::kF32)}),
      "[softmax_cross_entropy_grad] dy f32(3) does not match the loss f32(2)", std::invalid_argument);
}

TEST_CASE("softmax_cross_entropy gradients by finite differences, labels and logits") {
  weir::Session session;
  CheckGradients(session, "softmax_cross_entropy", {Uniform({3, 4}, 0, 1), Random({3, 4})},
                 [](const std::vector<Blob>& x) { return weir::SoftmaxCrossEntropy(x[0], x[1]); });
  CheckGradients(session, "softmax_cross_entropy_3d", {Uniform({2, 2, 3}, 0, 1), Random({2, 2, 3})},
                 [](const std::vector<Blob>& x) { return weir::SoftmaxCrossEntropy(x[0], x[1]); });
  // One-hot labels (no gradient wanted for them): the logits' gradient is softmax - labels.
  CheckGradients(session, "softmax_cross_entropy_one_hot", {Random({3, 4}), weir::testing::Labels({0, 3, 1})},
                 [](const std::vector<Blob>& x) {
                   return weir::SoftmaxCrossEntropy(weir::OneHot(x[1], {.depth = 4, .dtype = DType::kF64}), x[0]);
                 });
}

// --- sigmoid_cross_entropy ------------------------------------------------------------------

TEST_CASE("sigmoid_cross_entropy in the stable form") {
  const Tensor logits = Tensor::FromVector<double>({6}, {0, 2, -3, 100, -100, 1000});
  const Tensor labels = Tensor::FromVector<double>({6}, {1, 0, 1, 1, 0, 0});
  CheckClose<double>(RunOp("sigmoid_cross_entropy", {}, {labels, logits})[0], {6},
                     {0.6931471805599453, 2.1269280110429727, 3.048587351573742, 3.720075976020836e-44,
                      3.720075976020836e-44, 1000},
                     1e-12);
  CheckF32AgainstF64("sigmoid_cross_entropy", {}, {Uniform({3, 4}, 0, 1), Random({3, 4})});
  // dlogits = (sigmoid(x) - z) · dy; dlabels = -x · dy.
  const std::vector<Tensor> grads = RunOp("sigmoid_cross_entropy_grad", {},
                                          {Tensor::FromVector<double>({2}, {0, 1}), Tensor::FromVector<double>({2}, {2, -3}),
                                           Tensor::FromVector<double>({2}, {1, 2})});
  CheckClose<double>(grads[1], {2}, {0.8807970779778823, 2 * (0.04742587317756678 - 1)}, 1e-12);
  CheckClose<double>(grads[0], {2}, {-2, 6}, 1e-12);
  CheckF32AgainstF64("sigmoid_cross_entropy_grad", {}, {Uniform({3, 4}, 0, 1), Random({3, 4}), Random({3, 4})});
}

TEST_CASE("sigmoid_cross_entropy rejects bad inputs") {
  CHECK_THROWS_WITH_AS(
      RunOp("sigmoid_cross_entropy", {}, {Tensor(Shape{2, 3}, DType::kF32), Tensor(Shape{3, 2}, DType::kF32)}),
      "[sigmoid_cross_entropy] labels (2,3) do not match logits (3,2)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      RunOp("sigmoid_cross_entropy", {}, {Tensor(Shape{2}, DType::kI64), Tensor(Shape{2}, DType::kF32)}),
      "[sigmoid_cross_entropy] dtypes differ: labels i64 vs logits f32", std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      RunOp("sigmoid_cross_entropy", {}, {Tensor(Shape{2}, DType::kI32), Tensor(Shape{2}, DType::kI32)}),
      "[sigmoid_cross_entropy] expects floating logits, got i32", std::invalid_argument);
}

TEST_CASE("sigmoid_cross_entropy gradients by finite differences") {
  weir::Session session;
  CheckGradients(session, "sigmoid_cross_entropy", {Uniform({2, 3}, 0, 1), Uniform({2, 3}, -4, 4)},
                 [](const std::vector<Blob>& x) { return weir::SigmoidCrossEntropy(x[0], x[1]); });
}

// --- reduce_max / reduce_min ----------------------------------------------------------------

TEST_CASE("reduce_max and reduce_min over chosen axes") {
  const Tensor x = Tensor::FromVector<float>({2, 3}, {1, 5, 3, 4, 2, 6});
  CheckExact<float>(RunOp("reduce_max", weir::ReduceAttrs{}, {x})[0], {}, {6});
  CheckExact<float>(RunOp("reduce_min", weir::ReduceAttrs{}, {x})[0], {}, {1});
  CheckExact<float>(RunOp("reduce_max", weir::ReduceAttrs{.axes = {1}}, {x})[0], {2}, {5, 6});
  CheckExact<float>(RunOp("reduce_min", weir::ReduceAttrs{.axes = {-1}, .keep_dims = true}, {x})[0], {2, 1}, {1, 2});
  CheckExact<float>(RunOp("reduce_max", weir::ReduceAttrs{.axes = {0}}, {x})[0], {3}, {4, 5, 6});
  CheckExact<float>(RunOp("reduce_min", weir::ReduceAttrs{.axes = {0}, .keep_dims = true}, {x})[0], {1, 3}, {1, 2, 3});
  // Middle axis of (2,2,2) with a size-1 axis in front: x[n][c][i] = 4n + 2c + i, negated.
  const Tensor x3 = Tensor::FromVector<double>({1, 2, 2, 2}, {0, -1, -2, -3, -4, -5, -6, -7});
  CheckExact<double>(RunOp("reduce_max", weir::ReduceAttrs{.axes = {2}}, {x3})[0], {1, 2, 2}, {0, -1, -4, -5});
  CheckExact<double>(RunOp("reduce_min", weir::ReduceAttrs{.axes = {1, 3}}, {x3})[0], {1, 2}, {-5, -7});
  // Integers, including the extremes of the type.
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  const Tensor i = Tensor::FromVector<std::int64_t>({2, 2}, {kMin, 3, -1, 7});
  CHECK(RunOp("reduce_max", weir::ReduceAttrs{.axes = {1}}, {i})[0].ToVector<std::int64_t>() ==
        std::vector<std::int64_t>{3, 7});
  CHECK(RunOp("reduce_min", weir::ReduceAttrs{.axes = {0}}, {i})[0].ToVector<std::int64_t>() ==
        std::vector<std::int64_t>{kMin, 3});
  CHECK(RunOp("reduce_max", weir::ReduceAttrs{}, {Tensor::FromVector<std::int32_t>({3}, {-5, -2, -9})})[0]
            .ToVector<std::int32_t>() == std::vector<std::int32_t>{-2});
}

TEST_CASE("reduce_max and reduce_min: NaN wins, empty reductions give the identity") {
  const Tensor x = Tensor::FromVector<double>({2, 3}, {1, kNaN, 3, 4, 5, 6});
  CheckExact<double>(RunOp("reduce_max", weir::ReduceAttrs{.axes = {1}}, {x})[0], {2}, {kNaN, 6});
  CheckExact<double>(RunOp("reduce_min", weir::ReduceAttrs{.axes = {0}}, {x})[0], {3}, {1, kNaN, 3});
  CheckExact<float>(RunOp("reduce_max", weir::ReduceAttrs{.axes = {1}}, {Tensor(Shape{2, 0}, DType::kF32)})[0], {2},
                    {-kInf, -kInf});
  CheckExact<double>(RunOp("reduce_min", weir::ReduceAttrs{}, {Tensor(Shape{0}, DType::kF64)})[0], {}, {kInf});
  CHECK(RunOp("reduce_max", weir::ReduceAttrs{}, {Tensor(Shape{0}, DType::kI32)})[0].ToVector<std::int32_t>() ==
        std::vector<std::int32_t>{std::numeric_limits<std::int32_t>::lowest()});
  CHECK(RunOp("reduce_max", weir::ReduceAttrs{.axes = {0}}, {Tensor(Shape{3, 0}, DType::kF32)})[0].GetShape() ==
        Shape{0});
}

TEST_CASE("reduce_max and reduce_min reject bad axes and dtypes") {
  CHECK_THROWS_WITH_AS(RunOp("reduce_max", weir::ReduceAttrs{.axes = {2}}, {Tensor(Shape{2, 3}, DType::kF32)}),
                       "[reduce_max] axis 2 out of range for rank 2", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("reduce_min", weir::ReduceAttrs{.axes = {0, -2}}, {Tensor(Shape{2, 3}, DType::kF32)}),
                       "[reduce_min] axes [0,-2] name axis 0 twice for x (2,3)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("reduce_max", weir::ReduceAttrs{}, {Tensor(Shape{2}, DType::kBool)}),
                       "[reduce_max] expects an f32, f64, f16, bf16, i32 or i64 input, got bool", std::invalid_argument);
}

TEST_CASE("reduce_extremum_grad shares dy evenly among ties") {
  const Tensor x = Tensor::FromVector<double>({2, 3}, {1, 3, 3, 2, 2, 2});
  const Tensor y = Tensor::FromVector<double>({2}, {3, 2});
  const Tensor dy = Tensor::FromVector<double>({2}, {1, 6});
  CheckClose<double>(RunOp("reduce_extremum_grad", weir::ReduceAttrs{.axes = {1}}, {x, y, dy})[0], {2, 3},
                     {0, 0.5, 0.5, 2, 2, 2}, 1e-15);
  // Over axis 0 (kept dims): column maxima 2, 3, 3.
  CheckClose<double>(RunOp("reduce_extremum_grad", weir::ReduceAttrs{.axes = {0}, .keep_dims = true},
                           {x, Tensor::FromVector<double>({1, 3}, {2, 3, 3}), Tensor::FromVector<double>({1, 3}, {1, 2, 3})})[0],
                     {2, 3}, {0, 2, 3, 1, 0, 0}, 1e-15);
  CHECK_THROWS_WITH_AS(RunOp("reduce_extremum_grad", weir::ReduceAttrs{.axes = {1}}, {x, y, Tensor(Shape{3}, DType::kF64)}),
                       "[reduce_extremum_grad] dy f64(3) does not match the reduction of x f64(2)", std::invalid_argument);
  CheckF32AgainstF64("reduce_max", weir::ReduceAttrs{.axes = {0, 2}}, {Random({3, 4, 5})}, 1e-7);
  CheckF32AgainstF64("reduce_min", weir::ReduceAttrs{.axes = {1}}, {Random({3, 4, 5})}, 1e-7);
}

TEST_CASE("reduce_max and reduce_min gradients by finite differences") {
  weir::Session session;
  CheckGradients(session, "reduce_max_all", {Random({2, 3})}, OneInput([](const Blob& x) { return weir::ReduceMax(x); }));
  CheckGradients(session, "reduce_max_rows", {Random({3, 4})},
                 OneInput([](const Blob& x) { return weir::ReduceMax(x, {.axes = {1}}); }));
  CheckGradients(session, "reduce_min_cols_keep", {Random({3, 4})},
                 OneInput([](const Blob& x) { return weir::ReduceMin(x, {.axes = {0}, .keep_dims = true}); }));
  CheckGradients(session, "reduce_min_3d", {Random({2, 3, 2})},
                 OneInput([](const Blob& x) { return weir::ReduceMin(x, {.axes = {0, 2}}); }));
  // Ties built into the graph: max(x, x) along a concat splits dy between both copies.
  CheckGradients(session, "reduce_max_tied", {Random({2, 3})}, OneInput([](const Blob& x) {
                   return weir::ReduceMax(weir::Concat({x, x}, {.axis = 1}), {.axes = {1}});
                 }));
}

// --- maximum / minimum ----------------------------------------------------------------------

TEST_CASE("maximum and minimum broadcast like add") {
  const Tensor a = Tensor::FromVector<float>({2, 3}, {1, 5, 3, -4, 2, 6});
  const Tensor b = Tensor::FromVector<float>({3}, {2, 2, 2});
  CheckExact<float>(RunOp("maximum", {}, {a, b})[0], {2, 3}, {2, 5, 3, 2, 2, 6});
  CheckExact<float>(RunOp("minimum", {}, {a, b})[0], {2, 3}, {1, 2, 2, -4, 2, 2});
  CheckExact<double>(RunOp("maximum", {}, {Tensor::FromVector<double>({2, 1}, {0, 10}),
                                            Tensor::FromVector<double>({1, 3}, {-1, 5, 20})})[0],
                     {2, 3}, {0, 5, 20, 10, 10, 20});
  CHECK(RunOp("minimum", {}, {Tensor::FromVector<std::int32_t>({3}, {-7, 0, 7}), Tensor::Scalar<std::int32_t>(1)})[0]
            .ToVector<std::int32_t>() == std::vector<std::int32_t>{-7, 0, 1});
  CheckExact<double>(RunOp("maximum", {}, {Tensor::FromVector<double>({3}, {kNaN, 1, 2}),
                                            Tensor::FromVector<double>({3}, {0, kNaN, 1})})[0],
                     {3}, {kNaN, kNaN, 2});
  CHECK_THROWS_WITH_AS(RunOp("maximum", {}, {Tensor(Shape{2, 3}, DType::kF32), Tensor(Shape{2}, DType::kF32)}),
                       "[maximum] shapes do not broadcast: (2,3) vs (2)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("minimum", {}, {Tensor(Shape{2}, DType::kF32), Tensor(Shape{2}, DType::kF64)}),
                       "[minimum] dtypes differ: f32 vs f64", std::invalid_argument);
}

TEST_CASE("maximum_grad and minimum_grad send ties to a") {
  const Tensor dy = Tensor::FromVector<double>({3}, {1, 2, 3});
  const Tensor a = Tensor::FromVector<double>({3}, {1, 2, 3});
  const Tensor b = Tensor::FromVector<double>({3}, {2, 2, 2});
  const std::vector<Tensor> max_grads = RunOp("maximum_grad", {}, {dy, a, b});
  CheckExact<double>(max_grads[0], {3}, {0, 2, 3});
  CheckExact<double>(max_grads[1], {3}, {1, 0, 0});
  const std::vector<Tensor> min_grads = RunOp("minimum_grad", {}, {dy, a, b});
  CheckExact<double>(min_grads[0], {3}, {1, 2, 0});
  CheckExact<double>(min_grads[1], {3}, {0, 0, 3});
  CHECK_THROWS_WITH_AS(RunOp("maximum_grad", {}, {dy, a, Tensor(Shape{1}, DType::kF64)}),
                       "[maximum_grad] b f64(1) does not match dy f64(3)", std::invalid_argument);
}

TEST_CASE("maximum and minimum gradients by finite differences, with broadcasting") {
  weir::Session session;
  const auto maximum = [](const std::vector<Blob>& x) { return weir::Maximum(x[0], x[1]); };
  const auto minimum = [](const std::vector<Blob>& x) { return weir::Minimum(x[0], x[1]); };
  CheckGradients(session, "maximum", {Random({2, 3}), Random({2, 3})}, maximum);
  CheckGradients(session, "minimum", {Random({2, 3}), Random({2, 3})}, minimum);
  CheckGradients(session, "maximum_row", {Random({3, 4}), Random({4})}, maximum);
  CheckGradients(session, "minimum_column_row", {Random({3, 1}), Random({1, 4})}, minimum);
  // A tie in the graph: maximum(x, x) sends everything to a, which is x either way.
  CheckGradients(session, "maximum_self", {Random({3})}, OneInput([](const Blob& x) { return weir::Maximum(x, x); }));
}

// --- clip_by_value --------------------------------------------------------------------------

TEST_CASE("clip_by_value with one or both bounds") {
  const Tensor x = Tensor::FromVector<float>({6}, {-3, -1, 0, 0.5f, 1, 4});
  CheckExact<float>(RunOp("clip_by_value", weir::ClipAttrs{.min = -1, .max = 1}, {x})[0], {6}, {-1, -1, 0, 0.5, 1, 1});
  CheckExact<float>(RunOp("clip_by_value", weir::ClipAttrs{.min = 0}, {x})[0], {6}, {0, 0, 0, 0.5, 1, 4});
  CheckExact<float>(RunOp("clip_by_value", weir::ClipAttrs{.max = 0.25}, {x})[0], {6}, {-3, -1, 0, 0.25, 0.25, 0.25});
  CheckExact<double>(RunOp("clip_by_value", weir::ClipAttrs{.min = 2, .max = 2},
                           {Tensor::FromVector<double>({3}, {1, kNaN, 3})})[0],
                     {3}, {2, kNaN, 2});
  // Integer bounds round inward: x >= 0.5 means x >= 1 for integers.
  CHECK(RunOp("clip_by_value", weir::ClipAttrs{.min = 0.5, .max = 2.5},
              {Tensor::FromVector<std::int32_t>({4}, {-5, 1, 2, 9})})[0]
            .ToVector<std::int32_t>() == std::vector<std::int32_t>{1, 1, 2, 2});
  CHECK(RunOp("clip_by_value", weir::ClipAttrs{.min = -1e30}, {Tensor::FromVector<std::int64_t>({2}, {-5, 9})})[0]
            .ToVector<std::int64_t>() == std::vector<std::int64_t>{-5, 9});
}

TEST_CASE("clip_by_value_grad passes dy inside the bounds, bounds included") {
  const Tensor dy = Tensor::FromVector<double>({5}, {1, 2, 3, 4, 5});
  const Tensor x = Tensor::FromVector<double>({5}, {-2, -1, 0, 1, 2});
  CheckExact<double>(RunOp("clip_by_value_grad", weir::ClipAttrs{.min = -1, .max = 1}, {dy, x})[0], {5}, {0, 2, 3, 4, 0});
  CheckExact<double>(RunOp("clip_by_value_grad", weir::ClipAttrs{.max = 0}, {dy, x})[0], {5}, {1, 2, 3, 0, 0});
  // hardtanh's rule: the bounds themselves pass nothing.
  CheckExact<double>(RunOp("clip_by_value_grad", weir::ClipAttrs{.min = -1, .max = 1, .open_gradient = true}, {dy, x})[0],
                     {5}, {0, 0, 3, 0, 0});
}

TEST_CASE("clip_by_value rejects bad bounds and dtypes") {
  const Tensor x(Shape{2}, DType::kF32);
  CHECK_THROWS_WITH_AS(RunOp("clip_by_value", weir::ClipAttrs{}, {x}),
                       "[clip_by_value] needs a min or a max bound, got neither", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("clip_by_value", weir::ClipAttrs{.min = 2, .max = 1}, {x}),
                       "[clip_by_value] min 2 is greater than max 1", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("clip_by_value", weir::ClipAttrs{.min = kNaN}, {x}),
                       "[clip_by_value] bounds must be numbers, got min nan and max inf", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("clip_by_value", weir::ClipAttrs{.min = 0}, {Tensor(Shape{2}, DType::kU8)}),
                       "[clip_by_value] expects an f32, f64, f16, bf16, i32 or i64 x, got u8", std::invalid_argument);
}

TEST_CASE("clip_by_value gradients by finite differences") {
  weir::Session session;
  // Random magnitudes lie in [0.5, 1.5): bounds of ±1 clip some elements and pass others.
  CheckGradients(session, "clip_both", {Random({3, 4})},
                 OneInput([](const Blob& x) { return weir::ClipByValue(x, {.min = -1, .max = 1}); }));
  CheckGradients(session, "clip_min", {Random({3, 4})},
                 OneInput([](const Blob& x) { return weir::ClipByValue(x, {.min = 0.9}); }));
  CheckGradients(session, "clip_max", {Random({3, 4})},
                 OneInput([](const Blob& x) { return weir::ClipByValue(x, {.max = -0.9}); }));
}

// --- one_hot --------------------------------------------------------------------------------

TEST_CASE("one_hot puts on_value at each index") {
  CheckExact<float>(RunOp("one_hot", weir::OneHotAttrs{.depth = 3}, {Tensor::FromVector<std::int32_t>({3}, {0, 2, 1})})[0],
                    {3, 3}, {1, 0, 0, 0, 0, 1, 0, 1, 0});
  CheckExact<double>(RunOp("one_hot", weir::OneHotAttrs{.depth = 2, .on_value = 5, .off_value = -1, .dtype = DType::kF64},
                           {Tensor::FromVector<std::int64_t>({2, 1}, {1, 0})})[0],
                     {2, 1, 2}, {-1, 5, 5, -1});
  CHECK(RunOp("one_hot", weir::OneHotAttrs{.depth = 4, .dtype = DType::kI64}, {Tensor::FromVector<std::int32_t>({1}, {3})})[0]
            .ToVector<std::int64_t>() == std::vector<std::int64_t>{0, 0, 0, 1});
  CHECK(RunOp("one_hot", weir::OneHotAttrs{.depth = 2, .on_value = 7, .dtype = DType::kI32},
              {Tensor::Scalar<std::int64_t>(0)})[0]
            .ToVector<std::int32_t>() == std::vector<std::int32_t>{7, 0});
  CHECK(RunOp("one_hot", weir::OneHotAttrs{.depth = 0}, {Tensor(Shape{0}, DType::kI32)})[0].GetShape() == Shape{0, 0});
}

TEST_CASE("one_hot rejects bad indices, depth and values") {
  CHECK_THROWS_WITH_AS(RunOp("one_hot", weir::OneHotAttrs{.depth = 3}, {Tensor::FromVector<std::int32_t>({2}, {1, 3})}),
                       "[one_hot] index 3 at position 1 is outside [0, 3)", KernelError);
  CHECK_THROWS_WITH_AS(RunOp("one_hot", weir::OneHotAttrs{.depth = 3}, {Tensor::FromVector<std::int64_t>({1}, {-1})}),
                       "[one_hot] index -1 at position 0 is outside [0, 3)", KernelError);
  CHECK_THROWS_WITH_AS(RunOp("one_hot", weir::OneHotAttrs{.depth = 3}, {Tensor(Shape{2}, DType::kF32)}),
                       "[one_hot] expects i32 or i64 indices, got f32", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("one_hot", weir::OneHotAttrs{.depth = -1}, {Tensor(Shape{2}, DType::kI32)}),
                       "[one_hot] depth must be >= 0, got -1", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RunOp("one_hot", weir::OneHotAttrs{.depth = 2, .dtype = DType::kBool}, {Tensor(Shape{2}, DType::kI32)}),
                       "[one_hot] dtype must be f32, f64, i32 or i64, got bool", std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      RunOp("one_hot", weir::OneHotAttrs{.depth = 2, .on_value = 0.5, .dtype = DType::kI32}, {Tensor(Shape{2}, DType::kI32)}),
      "[one_hot] an i32 one-hot needs whole on/off values in range, got on_value 0.5 and off_value 0",
      std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      RunOp("one_hot", weir::OneHotAttrs{.depth = 2, .on_value = 3e9, .dtype = DType::kI32}, {Tensor(Shape{2}, DType::kI32)}),
      "[one_hot] an i32 one-hot needs whole on/off values in range, got on_value 3000000000 and off_value 0",
      std::invalid_argument);
}

TEST_CASE("one_hot feeds a dense cross entropy that matches the sparse one in a job") {
  weir::JobBuilder builder("one_hot_job");
  const Blob labels = builder.Placeholder("labels", {3}, DType::kI32);
  const Blob logits = builder.Placeholder("logits", {3, 4});
  builder.Output("dense", weir::SoftmaxCrossEntropy(weir::OneHot(labels, {.depth = 4}), logits));
  builder.Output("sparse", weir::SparseSoftmaxCrossEntropy(labels, logits));
  const weir::Job job = builder.Build();
  weir::Session session;
  const Tensor logit_values = CastTo<float>(Random({3, 4}));
  const weir::Outputs out = session.Call(job, {Tensor::FromVector<std::int32_t>({3}, {0, 3, 1}), logit_values});
  CheckClose<float>(out[0], {3}, ToDoubles(out[1]), 1e-6);
  // A bad index fails that call only; the next one runs.
  CHECK_THROWS_WITH(session.Call(job, {Tensor::FromVector<std::int32_t>({3}, {0, 4, 1}), logit_values}),
                    doctest::Contains("[one_hot] index 4 at position 1 is outside [0, 4)"));
  CHECK(session.Call(job, {Tensor::FromVector<std::int32_t>({3}, {1, 1, 1}), logit_values})[0].GetShape() == Shape{3});
}

TEST_CASE("adam_update and dropout on large tensors (vector loops over the intra-op pool) equal their element formulas") {
  using namespace weir::internal;
  // Long enough to split over the pool, with tails no vector covers; some gradients exactly 0 so that
  // LazyAdam leaves those elements alone.
  const std::int64_t count = 100003;
  std::mt19937 random(17);
  const auto uniform = [&](float low, float high) {
    Tensor t(Shape{count}, DType::kF32);
    std::uniform_real_distribution<float> draw(low, high);
    for (std::int64_t i = 0; i < count; ++i) t.Data<float>()[i] = draw(random);
    return t;
  };
  const Tensor x = uniform(-2.f, 2.f);
  const auto copy = [](const Tensor& t) { return t.Clone(); };
  for (const bool lazy : {false, true}) {
    for (const double weight_decay : {0.0, 0.01}) {
      CAPTURE(lazy);
      CAPTURE(weight_decay);
      weir::Optimizer optimizer = weir::Adam(weir::PiecewiseConstantScheduler({}, {0.01}), 0.9, 0.99, 1e-8, true);
      optimizer.lazy = lazy;
      optimizer.weight_decay = weight_decay;
      const UpdateAttrs attrs{optimizer, weir::Regularizer{.l2 = lazy ? 0.0 : 0.001}, 0.5};
      Tensor p = uniform(-1.f, 1.f), g = uniform(-1.f, 1.f), m = uniform(-1.f, 1.f), v = uniform(0.f, 1.f);
      for (std::int64_t i = 0; i < count; i += 7) g.Data<float>()[i] = 0.f;
      const Tensor lr = Tensor::FromVector<float>({1}, {0.01f});
      const Tensor step = Tensor::FromVector<std::int64_t>({1}, {3});
      Tensor want_p = copy(p), want_m = copy(m), want_v = copy(v);
      RunOp("adam_update", attrs, {p, g, lr, m, v, step});  // in place
      const auto rate = static_cast<float>(AdamBiasCorrectedRate(0.01f, 0.9, 0.99, 3));
      const AdamConstants<float> constants = MakeAdamConstants<float>(optimizer);
      const RegularizedGradient<float> regularized = MakeRegularizedGradient<float>(attrs);
      int wrong = 0;
      for (std::int64_t i = 0; i < count; ++i) {
        AdamStep(want_p.Data<float>()[i], want_m.Data<float>()[i], want_v.Data<float>()[i], g.Data<float>()[i], rate,
                 constants, regularized);
        wrong += p.Data<float>()[i] != want_p.Data<float>()[i] || m.Data<float>()[i] != want_m.Data<float>()[i] ||
                 v.Data<float>()[i] != want_v.Data<float>()[i];
      }
      CHECK(wrong == 0);
    }
  }
  const DropoutAttrs attrs{.rate = 0.3, .seed = 99};
  const std::vector<Tensor> dropped = RunOp("dropout", attrs, {x});
  const auto threshold = static_cast<std::uint64_t>(0.3 * 18446744073709551615.0);
  const auto scale = static_cast<float>(1.0 / (1.0 - 0.3));
  int wrong = 0, kept = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    const bool keep = DropoutKeeps(99, 0, static_cast<std::uint64_t>(i), threshold);  // the task's first call
    kept += keep;
    wrong += dropped[1].Data<std::uint8_t>()[i] != (keep ? 1 : 0);
    wrong += dropped[0].Data<float>()[i] != (keep ? x.Data<float>()[i] * scale : 0.f);
  }
  CHECK(wrong == 0);
  CHECK(std::abs(kept / static_cast<double>(count) - 0.7) < 0.01);
}
