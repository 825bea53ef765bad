// pooling and flatten: hand-computed cases, the f32 oneDNN kernels against the f64 reference loops,
// finite-difference gradients, bad inputs, and the cost of LeNet's two poolings.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gradient_check.hpp"
#include "op_test_util.hpp"
#include "kernels/attrs/pool_attrs.hpp"
#include "weir/weir.hpp"

using namespace weir;
using weir::testing::CheckClose;
using weir::testing::CheckGradients;
using weir::testing::RunOp;

namespace {

std::vector<double> Iota(std::int64_t count) {
  std::vector<double> values(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i);
  return values;
}

template <typename T> Tensor Make(Shape shape, const std::vector<double>& values) {
  std::vector<T> cast(values.begin(), values.end());
  return Tensor::FromVector<T>(std::move(shape), cast);
}

// NCHW data rearranged as NHWC.
Tensor ToNhwc(const Tensor& nchw) {
  const Shape& s = nchw.GetShape();
  Tensor out(Shape{s[0], s[2], s[3], s[1]}, nchw.GetDType());
  for (std::int64_t n = 0; n < s[0]; ++n)
    for (std::int64_t c = 0; c < s[1]; ++c)
      for (std::int64_t h = 0; h < s[2]; ++h)
        for (std::int64_t w = 0; w < s[3]; ++w) {
          const std::int64_t from = ((n * s[1] + c) * s[2] + h) * s[3] + w;
          const std::int64_t to = ((n * s[2] + h) * s[3] + w) * s[1] + c;
          if (nchw.GetDType() == DType::kF32) out.Data<float>()[to] = nchw.Data<float>()[from];
          else out.Data<double>()[to] = nchw.Data<double>()[from];
        }
  return out;
}

std::mt19937& Rng() {
  static std::mt19937 rng(7);
  return rng;
}

// Uniform(-1, 1) f32 values; continuous, so a window's maximum is unique (barring a 2^-24 chance).
Tensor RandomF32(Shape shape) {
  Tensor t(std::move(shape), DType::kF32);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) t.Data<float>()[i] = uniform(Rng());
  return t;
}

Tensor ToF64(const Tensor& t) {
  Tensor out(t.GetShape(), DType::kF64);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) out.Data<double>()[i] = t.Data<float>()[i];
  return out;
}

// f32 against f64 element by element, |a - b| <= tol · (1 + |b|).
void CheckNear(const Tensor& f32, const Tensor& f64, double tolerance) {
  REQUIRE(f32.GetShape() == f64.GetShape());
  int failures = 0;
  for (std::int64_t i = 0; i < f32.NumElements() && failures < 5; ++i) {
    const double a = f32.Data<float>()[i];
    const double b = f64.Data<double>()[i];
    if (std::abs(a - b) > tolerance * (1 + std::abs(b))) {
      ++failures;
      FAIL_CHECK("element ", i, ": f32 ", a, " vs f64 ", b);
    }
  }
}

std::string Describe(const Pool2DAttrs& a) {
  const char* padding = a.padding.kind == PaddingKind::kValid ? "VALID" : a.padding.kind == PaddingKind::kSame ? "SAME" : "explicit";
  return fmt::format("ksize ({},{}) strides ({},{}) {} {} ceil {}", a.ksize[0], a.ksize[1], a.strides[0], a.strides[1],
                     padding, a.data_format == DataFormat::kNCHW ? "NCHW" : "NHWC", a.ceil_mode);
}

}  // namespace

TEST_CASE("max and avg pooling, VALID, 2x2 stride 2, f32 and f64, with a dropped odd row and column") {
  // 4x4 ramp: windows {0,1,4,5} {2,3,6,7} {8,9,12,13} {10,11,14,15}.
  for (DType dtype : {DType::kF32, DType::kF64}) {
    const Tensor x = dtype == DType::kF32 ? Make<float>({1, 1, 4, 4}, Iota(16)) : Make<double>({1, 1, 4, 4}, Iota(16));
    const Tensor max = RunOp("max_pool2d", Pool2DAttrs{}, {x})[0];
    const Tensor avg = RunOp("avg_pool2d", Pool2DAttrs{}, {x})[0];
    if (dtype == DType::kF32) {
      CheckClose<float>(max, {1, 1, 2, 2}, {5, 7, 13, 15});
      CheckClose<float>(avg, {1, 1, 2, 2}, {2.5, 4.5, 10.5, 12.5});
    } else {
      CheckClose<double>(max, {1, 1, 2, 2}, {5, 7, 13, 15});
      CheckClose<double>(avg, {1, 1, 2, 2}, {2.5, 4.5, 10.5, 12.5});
    }
  }
  // 5x5 VALID: the last row and column fall outside every window.
  const Tensor x5 = Make<float>({1, 1, 5, 5}, Iota(25));
  CheckClose<float>(RunOp("max_pool2d", Pool2DAttrs{}, {x5})[0], {1, 1, 2, 2}, {6, 8, 16, 18});
  CheckClose<float>(RunOp("avg_pool2d", Pool2DAttrs{}, {x5})[0], {1, 1, 2, 2}, {3, 5, 13, 15});
}

TEST_CASE("SAME padding: out = ceil(in / stride), the odd pad at the end, avg divides by the pixels covered") {
  // 5x5 ramp x = 5r + c, 3x3 windows, stride 2: pads (1, 1); windows cover rows {0,1}, {1,2,3}, {3,4}.
  const Pool2DAttrs same{.ksize = {3, 3}, .strides = {2, 2}, .padding = SamePadding()};
  for (DType dtype : {DType::kF32, DType::kF64}) {
    const Tensor x = dtype == DType::kF32 ? Make<float>({1, 1, 5, 5}, Iota(25)) : Make<double>({1, 1, 5, 5}, Iota(25));
    const std::vector<double> max{6, 8, 9, 16, 18, 19, 21, 23, 24};
    const std::vector<double> avg{3, 4.5, 6, 10.5, 12, 13.5, 18, 19.5, 21};
    if (dtype == DType::kF32) {
      CheckClose<float>(RunOp("max_pool2d", same, {x})[0], {1, 1, 3, 3}, max);
      CheckClose<float>(RunOp("avg_pool2d", same, {x})[0], {1, 1, 3, 3}, avg);
    } else {
      CheckClose<double>(RunOp("max_pool2d", same, {x})[0], {1, 1, 3, 3}, max);
      CheckClose<double>(RunOp("avg_pool2d", same, {x})[0], {1, 1, 3, 3}, avg);
    }
  }
  // 2x2 windows, stride 1 on 3x3: one pad, at the end (bottom / right), so the last window is 1 wide.
  const Pool2DAttrs odd{.ksize = {2, 2}, .strides = {1, 1}, .padding = SamePadding()};
  const Tensor x = Make<float>({1, 1, 3, 3}, Iota(9));
  CheckClose<float>(RunOp("avg_pool2d", odd, {x})[0], {1, 1, 3, 3}, {2, 3, 3.5, 5, 6, 6.5, 6.5, 7.5, 8});
  // Negative values: padding never wins a max.
  const Tensor negative = Make<float>({1, 1, 3, 3}, {-9, -8, -7, -6, -5, -4, -3, -2, -1});
  CheckClose<float>(RunOp("max_pool2d", odd, {negative})[0], {1, 1, 3, 3}, {-5, -4, -4, -2, -1, -1, -2, -1, -1});
}

TEST_CASE("strides other than the window, rectangular windows, explicit padding and ceil_mode") {
  const Tensor x = Make<float>({1, 1, 4, 4}, Iota(16));
  // 3x3 windows, stride 1: overlapping.
  CheckClose<float>(RunOp("max_pool2d", Pool2DAttrs{.ksize = {3, 3}, .strides = {1, 1}}, {x})[0], {1, 1, 2, 2},
                    {10, 11, 14, 15});
  // 1x2 windows, strides (2, 1): rows 0 and 2, three column pairs.
  CheckClose<float>(RunOp("avg_pool2d", Pool2DAttrs{.ksize = {1, 2}, .strides = {2, 1}}, {x})[0], {1, 1, 2, 3},
                    {0.5, 1.5, 2.5, 8.5, 9.5, 10.5});
  // Explicit pads (top 1, bottom 0, left 0, right 1) with 2x2 stride 2: rows {0}, {1,2}; cols {0,1}, {2,3}.
  const Pool2DAttrs explicit_pads{.padding = ExplicitPadding(1, 0, 0, 1)};
  CheckClose<float>(RunOp("avg_pool2d", explicit_pads, {x})[0], {1, 1, 2, 2}, {0.5, 2.5, 6.5, 8.5});
  // ceil_mode on 5x5, 2x2 stride 2: a third, partial window per axis (row / column 4 alone).
  const Tensor x5 = Make<float>({1, 1, 5, 5}, Iota(25));
  const Pool2DAttrs ceil{.ceil_mode = true};
  CheckClose<float>(RunOp("max_pool2d", ceil, {x5})[0], {1, 1, 3, 3}, {6, 8, 9, 16, 18, 19, 21, 23, 24});
  CheckClose<float>(RunOp("avg_pool2d", ceil, {x5})[0], {1, 1, 3, 3}, {3, 5, 6.5, 13, 15, 16.5, 20.5, 22.5, 24});
  // ceil_mode never adds a window that would start in the padding: 4x4, 2x2 stride 2 stays 2x2.
  CHECK(RunOp("max_pool2d", ceil, {x})[0].GetShape() == Shape{1, 1, 2, 2});
  // Gradients of the partial windows: avg spreads dy over the pixels covered, max puts it on the maximum.
  const Tensor dy = Make<float>({1, 1, 3, 3}, std::vector<double>(9, 1.0));
  const Tensor avg_dx = RunOp("avg_pool2d_grad", internal::Pool2DGradAttrs{ceil, Shape{1, 1, 5, 5}}, {dy})[0];
  CheckClose<float>(avg_dx, {1, 1, 5, 5},
                    {0.25, 0.25, 0.25, 0.25, 0.5, 0.25, 0.25, 0.25, 0.25, 0.5, 0.25, 0.25, 0.25,
                     0.25, 0.5, 0.25, 0.25, 0.25, 0.25, 0.5, 0.5, 0.5, 0.5, 0.5, 1});
  const Tensor max_dx = RunOp("max_pool2d_grad", ceil, {dy, x5})[0];
  CheckClose<float>(max_dx, {1, 1, 5, 5},
                    {0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 0, 1, 0, 1, 1});
}

TEST_CASE("NHWC pools each channel like NCHW") {
  // Two channels: a ramp and its negation.
  std::vector<double> values = Iota(25);
  for (double v : Iota(25)) values.push_back(-v);
  for (DType dtype : {DType::kF32, DType::kF64}) {
    const Tensor nchw = dtype == DType::kF32 ? Make<float>({1, 2, 5, 5}, values) : Make<double>({1, 2, 5, 5}, values);
    for (const Padding& padding : {ValidPadding(), SamePadding()}) {
      for (const char* op : {"max_pool2d", "avg_pool2d"}) {
        INFO(op, " dtype ", Name(dtype));
        const Pool2DAttrs first{.ksize = {3, 2}, .strides = {2, 1}, .padding = padding};
        Pool2DAttrs last = first;
        last.data_format = DataFormat::kNHWC;
        const Tensor expected = ToNhwc(RunOp(op, first, {nchw})[0]);
        const Tensor got = RunOp(op, last, {ToNhwc(nchw)})[0];
        REQUIRE(got.GetShape() == expected.GetShape());
        if (dtype == DType::kF32) CHECK(got.ToVector<float>() == expected.ToVector<float>());
        else CHECK(got.ToVector<double>() == expected.ToVector<double>());
      }
    }
  }
}

TEST_CASE("max pooling's gradient goes to one element per window: the first largest on the f64 reference") {
  // A constant window: every element ties.
  const Tensor x = Make<double>({1, 1, 2, 4}, {3, 3, 1, 2, 3, 3, 2, 2});
  const Tensor dy = Make<double>({1, 1, 1, 2}, {10, 20});
  CheckClose<double>(RunOp("max_pool2d_grad", Pool2DAttrs{}, {dy, x})[0], {1, 1, 2, 4}, {10, 0, 0, 20, 0, 0, 0, 0});
  // oneDNN (f32) also gives each window's gradient to exactly one of its maxima.
  const Tensor dx = RunOp("max_pool2d_grad", Pool2DAttrs{}, {Make<float>({1, 1, 1, 2}, {10, 20}),
                                                            Make<float>({1, 1, 2, 4}, {3, 3, 1, 2, 3, 3, 2, 2})})[0];
  const std::vector<float> got = dx.ToVector<float>();
  CHECK(got[2] == 0);
  CHECK(got[0] + got[1] + got[4] + got[5] == 10);
  CHECK((got[0] == 10 || got[1] == 10 || got[4] == 10 || got[5] == 10));
  CHECK(got[3] + got[6] + got[7] == 20);
  CHECK((got[3] == 20 || got[6] == 20 || got[7] == 20));
}

TEST_CASE("f32 oneDNN pooling matches the f64 reference, forward and backward, over a grid of configurations") {
  int cases = 0;
  for (DataFormat format : {DataFormat::kNCHW, DataFormat::kNHWC}) {
    for (const Padding& padding : {ValidPadding(), SamePadding(), ExplicitPadding(1, 0, 1, 1)}) {
      for (std::array<std::int64_t, 2> ksize : {std::array<std::int64_t, 2>{2, 2}, {3, 3}, {3, 2}}) {
        for (std::array<std::int64_t, 2> strides : {std::array<std::int64_t, 2>{1, 1}, {2, 2}, {2, 1}, {3, 3}}) {
          for (bool ceil_mode : {false, true}) {
            const Pool2DAttrs attrs{.ksize = ksize, .strides = strides, .padding = padding, .data_format = format,
                                    .ceil_mode = ceil_mode};
            INFO(Describe(attrs));
            const Shape shape = format == DataFormat::kNCHW ? Shape{2, 3, 7, 6} : Shape{2, 7, 6, 3};
            const Tensor x = RandomF32(shape);
            const Tensor x64 = ToF64(x);
            for (const char* op : {"max_pool2d", "avg_pool2d"}) {
              INFO(op);
              const Tensor y = RunOp(op, attrs, {x})[0];
              const Tensor y64 = RunOp(op, attrs, {x64})[0];
              CheckNear(y, y64, 1e-6);
              const Tensor dy = RandomF32(y.GetShape());
              const Tensor dx = std::string(op) == "max_pool2d"
                                    ? RunOp("max_pool2d_grad", attrs, {dy, x})[0]
                                    : RunOp("avg_pool2d_grad", internal::Pool2DGradAttrs{attrs, shape}, {dy})[0];
              const Tensor dx64 = std::string(op) == "max_pool2d"
                                      ? RunOp("max_pool2d_grad", attrs, {ToF64(dy), x64})[0]
                                      : RunOp("avg_pool2d_grad", internal::Pool2DGradAttrs{attrs, shape}, {ToF64(dy)})[0];
              CheckNear(dx, dx64, 1e-5);
              ++cases;
            }
          }
        }
      }
    }
  }
  CHECK(cases == 2 * 3 * 3 * 4 * 2 * 2);
}

TEST_CASE("pooling gradients match finite differences") {
  Session session;
  int index = 0;
  for (DataFormat format : {DataFormat::kNCHW, DataFormat::kNHWC}) {
    for (const Pool2DAttrs& base : {Pool2DAttrs{}, Pool2DAttrs{.ksize = {3, 3}, .strides = {2, 2}, .padding = SamePadding()},
                                    Pool2DAttrs{.ksize = {2, 3}, .strides = {1, 2}, .padding = ExplicitPadding(1, 1, 0, 2)},
                                    Pool2DAttrs{.ksize = {2, 2}, .strides = {2, 2}, .ceil_mode = true}}) {
      Pool2DAttrs attrs = base;
      attrs.data_format = format;
      INFO(Describe(attrs));
      const Shape shape = format == DataFormat::kNCHW ? Shape{2, 2, 5, 5} : Shape{2, 5, 5, 2};
      // Random magnitudes in [0.5, 1.5) are distinct almost surely and far apart relative to the step.
      const Tensor x = testing::Random(shape);
      CheckGradients(session, fmt::format("max_pool_{}", index),  {x},
                     testing::Unary([attrs](const Blob& b) { return MaxPool2D(b, attrs); }));
      CheckGradients(session, fmt::format("avg_pool_{}", index), {x},
                     testing::Unary([attrs](const Blob& b) { return AvgPool2D(b, attrs); }));
      ++index;
    }
  }
}

TEST_CASE("pooling inside jobs: shapes at build time, f32 gradients through a session, names") {
  JobBuilder builder("pool_job");
  const Blob x = builder.Placeholder("x", Shape{2, 3, 6, 6});
  const Blob max = MaxPool2D(x, {.ksize = {2, 2}, .strides = {2, 2}, .padding = SamePadding()}, "pool1");
  CHECK(max.GetShape() == Shape{2, 3, 3, 3});
  CHECK(max.Name() == "pool1/out");
  const Blob avg = AvgPool2D(max, {.ksize = {3, 3}, .strides = {1, 1}});
  CHECK(avg.GetShape() == Shape{2, 3, 1, 1});
  const Blob loss = ReduceSum(avg);
  const std::vector<Blob> grads = Gradients(loss, {x});
  builder.Output("y", avg);
  builder.Output("dx", grads[0]);
  const Job job = builder.Build();
  Session session;
  const Tensor input = RandomF32({2, 3, 6, 6});
  const Outputs out = session.Call(job, {input});
  // Reference: the same composition in f64.
  const Tensor max64 = RunOp("max_pool2d", Pool2DAttrs{.padding = SamePadding()}, {ToF64(input)})[0];
  const Tensor avg64 = RunOp("avg_pool2d", Pool2DAttrs{.ksize = {3, 3}, .strides = {1, 1}}, {max64})[0];
  CheckNear(out["y"], avg64, 1e-6);
  // d(sum avg)/dx: 1/9 at each window's maximum, 0 elsewhere.
  int nonzero = 0;
  for (float v : out["dx"].ToVector<float>()) {
    if (v != 0.f) {
      CHECK(v == doctest::Approx(1.0 / 9));
      ++nonzero;
    }
  }
  CHECK(nonzero == 2 * 3 * 9);
}

TEST_CASE("pooling rejects bad inputs with the op, the expected and the received value") {
  JobBuilder builder("pool_errors");
  const Blob x = builder.Placeholder("x", Shape{1, 1, 4, 4});
  CHECK_THROWS_WITH_AS(MaxPool2D(builder.Placeholder("x3", Shape{1, 4, 4})), "[max_pool2d] expects a 4-D x (N,C,H,W), got (1,4,4)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(AvgPool2D(builder.Placeholder("xi", Shape{1, 1, 4, 4}, DType::kI32)),
                       "[avg_pool2d] expects a floating x, got i32", std::invalid_argument);
  CHECK_THROWS_WITH_AS(MaxPool2D(x, {.ksize = {0, 2}}),
                       "[max_pool2d] kernel height must be positive, got 0 (x (1,1,4,4), NCHW, ksize (0,2), strides (2,2))",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(MaxPool2D(x, {.strides = {2, -1}}),
                       "[max_pool2d] stride along the width must be positive, got -1 (x (1,1,4,4), NCHW, ksize (2,2), strides (2,-1))",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(AvgPool2D(x, {.ksize = {5, 2}}),
                       "[avg_pool2d] the window (5 with dilation 1) is larger than the padded height 4 (x (1,1,4,4), NCHW, "
                       "ksize (5,2), strides (2,2))",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(MaxPool2D(x, {.padding = ExplicitPadding(0, 0, 2, 0)}),
                       "[max_pool2d] padding along the width (2, 0) must be smaller than the window 2 (x (1,1,4,4), NCHW, "
                       "ksize (2,2), strides (2,2))",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(MaxPool2D(x, {.padding = ExplicitPadding(-1, 0, 0, 0)}),
                       doctest::Contains("[max_pool2d] explicit padding along the height must be >= 0, got (-1, 0)"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(MaxPool2D(Blob{}), "[max_pool2d] input 'x' is an undefined blob", std::invalid_argument);
  // NHWC reads the channels last: (1,4,4,1) pools its 4x4 pixels.
  CHECK(MaxPool2D(builder.Placeholder("nhwc", Shape{1, 4, 4, 1}), {.data_format = DataFormat::kNHWC}).GetShape() ==
        Shape{1, 2, 2, 1});
  // Backward ops check their operands belong to one forward pooling.
  CHECK_THROWS_WITH_AS(RunOp("max_pool2d_grad", Pool2DAttrs{}, {Tensor(Shape{1, 1, 3, 2}, DType::kF32), Tensor(Shape{1, 1, 4, 4}, DType::kF32)}),
                       "[max_pool2d_grad] dy f32(1,1,3,2) does not match the pooling of x f32(1,1,4,4): f32(1,1,2,2)",
                       std::invalid_argument);
  CHECK_THROWS_AS(RunOp("avg_pool2d_grad", internal::Pool2DGradAttrs{Pool2DAttrs{}, Shape{1, 1, 4, 4}},
                        {Tensor(Shape{1, 1, 3, 3}, DType::kF64)}),
                  std::invalid_argument);
}

TEST_CASE("pooling an empty batch gives an empty result") {
  const Tensor x(Shape{0, 3, 4, 4}, DType::kF32);
  CHECK(RunOp("max_pool2d", Pool2DAttrs{}, {x})[0].GetShape() == Shape{0, 3, 2, 2});
  CHECK(RunOp("avg_pool2d", Pool2DAttrs{}, {x})[0].GetShape() == Shape{0, 3, 2, 2});
  CHECK(RunOp("max_pool2d_grad", Pool2DAttrs{}, {Tensor(Shape{0, 3, 2, 2}, DType::kF32), x})[0].GetShape() ==
        Shape{0, 3, 4, 4});
}

// --- flatten ------------------------------------------------------------------------------------

TEST_CASE("flatten merges start_dim..end_dim, keeps the order of elements, and passes gradients back") {
  JobBuilder builder("flatten");
  const Blob x = builder.Placeholder("x", Shape{2, 3, 4, 5});
  CHECK(Flatten(x).GetShape() == Shape{2, 60});
  CHECK(Flatten(x, {.start_dim = 0}).GetShape() == Shape{120});
  CHECK(Flatten(x, {.start_dim = 1, .end_dim = 2}).GetShape() == Shape{2, 12, 5});
  CHECK(Flatten(x, {.start_dim = -2, .end_dim = -1}).GetShape() == Shape{2, 3, 20});
  CHECK(Flatten(x, {.start_dim = 2, .end_dim = 2}).GetShape() == Shape{2, 3, 4, 5});
  JobBuilder other("flatten_shapes");
  CHECK(Flatten(other.Placeholder("scalar", Shape{}), {.start_dim = 0}).GetShape() == Shape{1});
  CHECK(Flatten(other.Placeholder("empty", Shape{2, 0, 3})).GetShape() == Shape{2, 0});
  const Blob named = Flatten(x, {}, "flat");
  CHECK(named.Name() == "flat/out");
  builder.Output("y", named);
  Session session;
  const Tensor input = Make<float>({2, 3, 4, 5}, Iota(120));
  CHECK(session.Call(builder.Build(), {input})[0].ToVector<float>() == input.ToVector<float>());

  CheckGradients(session, "flatten", {testing::Random({2, 3, 2})},
                 testing::Unary([](const Blob& b) { return Flatten(b, {.start_dim = 0, .end_dim = 1}); }));
}

TEST_CASE("flatten rejects bad dims naming them and x's shape") {
  JobBuilder builder("flatten_errors");
  const Blob x = builder.Placeholder("x", Shape{2, 3, 4});
  CHECK_THROWS_WITH_AS(Flatten(x, {.start_dim = 3}), "[flatten] start_dim must be in [-3, 3) for x (2,3,4), got 3",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Flatten(x, {.end_dim = -4}), "[flatten] end_dim must be in [-3, 3) for x (2,3,4), got -4",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Flatten(x, {.start_dim = 2, .end_dim = 1}),
                       "[flatten] start_dim 2 (axis 2) comes after end_dim 1 (axis 1) for x (2,3,4)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(Flatten(x, {.start_dim = -1, .end_dim = 0}),
                       "[flatten] start_dim -1 (axis 2) comes after end_dim 0 (axis 0) for x (2,3,4)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(Flatten(Blob{}), "[flatten] input 'x' is an undefined blob", std::invalid_argument);
}

// --- cost ---------------------------------------------------------------------------------------

namespace {

// One kernel, created once as a task would, run `iterations` times; the mean milliseconds per run.
double KernelMilliseconds(std::string_view type, std::any attrs, const std::vector<Tensor>& inputs, int iterations) {
  using namespace weir::internal;
  std::vector<TensorMeta> input_metas;
  for (const Tensor& t : inputs) input_metas.push_back({t.GetShape(), t.GetDType()});
  const std::vector<TensorMeta> output_metas = FindOp(type).infer(InferContext{type, type, &attrs, input_metas});
  auto kernel = FindKernel({std::string(type), Device::Kind::kCpu, input_metas[0].dtype})(
      KernelSetup{type, type, &attrs, input_metas, output_metas, Device::Cpu()});
  std::vector<Tensor> outputs;
  std::vector<ConstTensorView> in;
  std::vector<TensorView> out;
  for (std::size_t i = 0; i < inputs.size(); ++i) in.push_back({inputs[i].RawData(), &input_metas[i]});
  for (const TensorMeta& meta : output_metas) outputs.emplace_back(meta.shape, meta.dtype);
  for (std::size_t i = 0; i < outputs.size(); ++i) out.push_back({outputs[i].RawData(), &output_metas[i]});
  kernel->Run(in, out);  // warm-up: first touch of the output pages
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) kernel->Run(in, out);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / iterations;
}

}  // namespace

// Reports timings only: on a shared machine oneDNN's OpenMP threads make them too noisy to assert on.
TEST_CASE("timing report: LeNet's max poolings (2x2, stride 2, SAME, NCHW), forward and backward") {
  const Pool2DAttrs attrs{.padding = SamePadding()};
  for (const Shape& shape : {Shape{100, 32, 28, 28}, Shape{100, 64, 14, 14}}) {
    const Tensor x = RandomF32(shape);
    const Tensor dy = RandomF32({shape[0], shape[1], shape[2] / 2, shape[3] / 2});
    const double forward = KernelMilliseconds("max_pool2d", attrs, {x}, 20);
    const double backward = KernelMilliseconds("max_pool2d_grad", attrs, {dy, x}, 20);
    MESSAGE(fmt::format("max_pool2d {}: forward {:.3f} ms, backward {:.3f} ms (f32, oneDNN)", shape, forward, backward));
  }
}
