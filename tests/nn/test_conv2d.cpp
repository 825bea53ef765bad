// conv2d: hand-computed cases, the f32 oneDNN kernels against the f64 reference loops, finite-difference
// gradients, the layer's variables, a small train job, and bad inputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <omp.h>

#include <filesystem>
#include <iterator>
#include <thread>

#include <fmt/format.h>

#include "gradient_check.hpp"
#include "graph/job_graph.hpp"
#include "kernels/attrs/conv2d_attrs.hpp"
#include "op_test_util.hpp"
#include "weir/weir.hpp"

using namespace weir;
using namespace weir::testing;
using weir::internal::Conv2DGradAttrs;

namespace {

Tensor Iota(Shape shape, DType dtype) {
  Tensor t(std::move(shape), dtype);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) {
    if (dtype == DType::kF32) t.Data<float>()[i] = static_cast<float>(i + 1);
    else t.Data<double>()[i] = static_cast<double>(i + 1);
  }
  return t;
}

Tensor Values(Shape shape, DType dtype, const std::vector<double>& values) {
  Tensor t(std::move(shape), dtype);
  REQUIRE(static_cast<std::int64_t>(values.size()) == t.NumElements());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::kF32) t.Data<float>()[i] = static_cast<float>(values[i]);
    else t.Data<double>()[i] = values[i];
  }
  return t;
}

std::vector<double> AsDoubles(const Tensor& t) {
  std::vector<double> out;
  if (t.GetDType() == DType::kF32) {
    for (float v : t.ToVector<float>()) out.push_back(v);
  } else {
    out = t.ToVector<double>();
  }
  return out;
}

// Runs conv2d's forward kernel of x's dtype and checks y against hand-computed values.
void CheckForward(const std::string& name, const Tensor& x, const Tensor& weight, const Conv2DAttrs& attrs,
                  const Shape& y_shape, const std::vector<double>& expected) {
  INFO("case ", name, " ", x.GetDType());
  const std::vector<Tensor> y = RunOp("conv2d", attrs, {x, weight});
  REQUIRE(y.size() == 1);
  CHECK(y[0].GetShape() == y_shape);
  CHECK(y[0].GetDType() == x.GetDType());
  const std::vector<double> got = AsDoubles(y[0]);
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element ", i);
    CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-6));
  }
}

// Random values in [-1, 1) of `dtype`, from a fixed stream per call site.
Tensor Uniform(const Shape& shape, std::mt19937& rng) {
  Tensor t(shape, DType::kF64);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) {
    // Rounded to f32 so that the f32 kernel and the f64 reference see identical inputs.
    t.Data<double>()[i] = static_cast<float>(dist(rng));
  }
  return t;
}

Tensor ToF32(const Tensor& t) {
  Tensor out(t.GetShape(), DType::kF32);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) out.Data<float>()[i] = static_cast<float>(t.Data<double>()[i]);
  return out;
}

// f32 (oneDNN) against f64 (reference) on the same data: |a - b| <= tol·(1 + |b|), with the scale of
// the accumulated sum (`terms` products of magnitude <= 1) folded into tol.
void CheckSame(const std::string& what, const Tensor& f32, const Tensor& f64, double terms) {
  INFO(what);
  REQUIRE(f32.GetShape() == f64.GetShape());
  const std::vector<double> a = AsDoubles(f32);
  const std::vector<double> b = AsDoubles(f64);
  const double tolerance = 2e-6 * std::max(1.0, std::sqrt(terms));
  double worst = 0;
  std::size_t worst_index = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double error = std::abs(a[i] - b[i]) / (1 + std::abs(b[i]));
    if (error > worst) worst = error, worst_index = i;
  }
  INFO("worst relative error ", worst, " at element ", worst_index, " (tolerance ", tolerance, ")");
  CHECK(worst <= tolerance);
}

std::string Describe(const Padding& padding) {
  switch (padding.kind) {
    case PaddingKind::kValid: return "valid";
    case PaddingKind::kSame: return "same";
    case PaddingKind::kExplicit:
      return fmt::format("explicit({},{},{},{})", padding.pads[0], padding.pads[1], padding.pads[2], padding.pads[3]);
  }
  return "?";
}

// Runs forward, grad data and grad filter in f32 and f64 on the same random data and compares them.
void CompareWithReference(const std::string& name, const Shape& x_shape, const Shape& weight_shape,
                          const Conv2DAttrs& attrs, std::mt19937& rng) {
  INFO("case ", name, ": x ", x_shape, ", weight ", weight_shape);
  const Tensor x = Uniform(x_shape, rng);
  const Tensor weight = Uniform(weight_shape, rng);
  const Tensor y64 = RunOp("conv2d", attrs, {x, weight})[0];
  const Tensor y32 = RunOp("conv2d", attrs, {ToF32(x), ToF32(weight)})[0];
  const double taps = static_cast<double>(weight_shape.NumElements() / weight_shape[0]);
  CheckSame("forward", y32, y64, taps);

  const Tensor dy = Uniform(y64.GetShape(), rng);
  const Tensor dx64 = RunOp("conv2d_grad_data", Conv2DGradAttrs{attrs, x_shape}, {dy, weight})[0];
  const Tensor dx32 = RunOp("conv2d_grad_data", Conv2DGradAttrs{attrs, x_shape}, {ToF32(dy), ToF32(weight)})[0];
  CHECK(dx64.GetShape() == x_shape);
  CheckSame("grad data", dx32, dx64, static_cast<double>(weight_shape.NumElements()));

  const Tensor dw64 = RunOp("conv2d_grad_filter", Conv2DGradAttrs{attrs, weight_shape}, {dy, x})[0];
  const Tensor dw32 = RunOp("conv2d_grad_filter", Conv2DGradAttrs{attrs, weight_shape}, {ToF32(dy), ToF32(x)})[0];
  CHECK(dw64.GetShape() == weight_shape);
  CheckSame("grad filter", dw32, dw64, static_cast<double>(y64.GetShape().NumElements() / weight_shape[0]));
}

}  // namespace

TEST_CASE("conv2d forward on hand-computed cases, f32 and f64") {
  for (const DType dtype : {DType::kF32, DType::kF64}) {
    const Tensor x33 = Iota({1, 1, 3, 3}, dtype);  // 1..9
    // VALID, a diagonal 2x2 kernel: y = x[i,j] + x[i+1,j+1].
    CheckForward("valid", x33, Values({1, 1, 2, 2}, dtype, {1, 0, 0, 1}), {}, {1, 1, 2, 2}, {6, 8, 12, 14});
    // SAME, odd kernel: pads 1 on every side; y = the sum of each 3x3 neighbourhood.
    CheckForward("same_odd", x33, Values({1, 1, 3, 3}, dtype, std::vector<double>(9, 1.0)),
                 {.padding = SamePadding()}, {1, 1, 3, 3}, {12, 21, 16, 27, 45, 33, 24, 39, 28});
    // SAME, even kernel: the single pad goes after (bottom/right), as TensorFlow and OneFlow.
    CheckForward("same_even", x33, Values({1, 1, 2, 2}, dtype, {1, 1, 1, 1}), {.padding = SamePadding()},
                 {1, 1, 3, 3}, {12, 16, 9, 24, 28, 15, 15, 17, 9});
    // Explicit asymmetric padding: one row on top, one column on the right.
    CheckForward("explicit", x33, Values({1, 1, 2, 2}, dtype, {1, 1, 1, 1}),
                 {.padding = ExplicitPadding(1, 0, 0, 1)}, {1, 1, 3, 3}, {3, 5, 3, 12, 16, 9, 24, 28, 15});
    // Strides 2 on 4x4.
    CheckForward("strides", Iota({1, 1, 4, 4}, dtype), Values({1, 1, 2, 2}, dtype, {1, 1, 1, 1}),
                 {.strides = {2, 2}}, {1, 1, 2, 2}, {14, 22, 46, 54});
    // Different strides per axis: height 1, width 2.
    CheckForward("strides_hw", Iota({1, 1, 3, 4}, dtype), Values({1, 1, 1, 2}, dtype, {1, 10}),
                 {.strides = {1, 2}}, {1, 1, 3, 2}, {21, 43, 65, 87, 109, 131});
    // Dilation 2: the 2x2 kernel reads the four corners of the 3x3 input.
    CheckForward("dilation", x33, Values({1, 1, 2, 2}, dtype, {1, 1, 1, 1}), {.dilations = {2, 2}}, {1, 1, 1, 1},
                 {20});
    // SAME with dilation 2: extent 3, pads 1 on each side.
    CheckForward("same_dilation", x33, Values({1, 1, 2, 2}, dtype, {1, 0, 0, 0}),
                 {.dilations = {2, 2}, .padding = SamePadding()}, {1, 1, 3, 3}, {0, 0, 0, 0, 1, 2, 0, 4, 5});
    // groups 2: each filter reads only its own channel.
    CheckForward("groups", Iota({1, 2, 2, 2}, dtype), Values({2, 1, 1, 1}, dtype, {2, 3}), {.groups = 2},
                 {1, 2, 2, 2}, {2, 4, 6, 8, 15, 18, 21, 24});
    // Depthwise with multiplier 2: filters 0,1 read channel 0; filters 2,3 read channel 1.
    CheckForward("depthwise", Iota({1, 2, 1, 3}, dtype), Values({4, 1, 1, 2}, dtype, {1, 0, 0, 1, 1, 1, 1, -1}),
                 {.groups = 2}, {1, 4, 1, 2}, {1, 2, 2, 3, 9, 11, -1, -1});
    // Two images, two input and two output channels: y[n,o] = sum_c w[o,c] x[n,c] (1x1 kernel).
    CheckForward("batch_channels", Iota({2, 2, 1, 2}, dtype), Values({2, 2, 1, 1}, dtype, {1, 10, -1, 1}), {},
                 {2, 2, 1, 2}, {31, 42, 2, 2, 75, 86, 2, 2});
    // NHWC: x pixels (c0, c1) = (1,5) (2,6) (3,7) (4,8); weight (out, kh, kw, C).
    const Tensor x_nhwc = Values({1, 2, 2, 2}, dtype, {1, 5, 2, 6, 3, 7, 4, 8});
    CheckForward("nhwc_1x1", x_nhwc, Values({1, 1, 1, 2}, dtype, {1, 10}), {.data_format = DataFormat::kNHWC},
                 {1, 2, 2, 1}, {51, 62, 73, 84});
    std::vector<double> w2 = {1, 2, 3, 4, 5, 6, 7, 8};
    w2.resize(16, 1.0);  // filter 1: all ones
    CheckForward("nhwc_2x2", x_nhwc, Values({2, 2, 2, 2}, dtype, w2), {.data_format = DataFormat::kNHWC},
                 {1, 1, 1, 2}, {190, 36});
    CheckForward("nhwc_same_even", Values({1, 3, 3, 1}, dtype, {1, 2, 3, 4, 5, 6, 7, 8, 9}),
                 Values({1, 2, 2, 1}, dtype, {1, 1, 1, 1}),
                 {.padding = SamePadding(), .data_format = DataFormat::kNHWC}, {1, 3, 3, 1},
                 {12, 16, 9, 24, 28, 15, 15, 17, 9});
  }
}

TEST_CASE("conv2d backward kernels on a hand-computed case, f32 and f64") {
  for (const DType dtype : {DType::kF32, DType::kF64}) {
    INFO(dtype);
    const Conv2DAttrs attrs{};
    const Tensor x = Iota({1, 1, 3, 3}, dtype);
    const Tensor weight = Values({1, 1, 2, 2}, dtype, {1, 0, 0, 1});
    const Tensor dy = Values({1, 1, 2, 2}, dtype, {1, 1, 1, 1});
    // Each tap of the diagonal kernel scatters dy onto a shifted 2x2 window of dx.
    const Tensor dx = RunOp("conv2d_grad_data", Conv2DGradAttrs{attrs, Shape{1, 1, 3, 3}}, {dy, weight})[0];
    CHECK(dx.GetShape() == Shape{1, 1, 3, 3});
    CHECK(AsDoubles(dx) == std::vector<double>{1, 1, 0, 1, 2, 1, 0, 1, 1});
    // dweight[kh,kw] = sum of the 2x2 window of x at (kh, kw).
    const Tensor dw = RunOp("conv2d_grad_filter", Conv2DGradAttrs{attrs, Shape{1, 1, 2, 2}}, {dy, x})[0];
    CHECK(AsDoubles(dw) == std::vector<double>{12, 16, 24, 28});
    // Stride 2 on a 5x5 input: the last row and column take no part, so their gradient is 0.
    const Conv2DAttrs strided{.strides = {2, 2}};
    const Tensor dx5 = RunOp("conv2d_grad_data", Conv2DGradAttrs{strided, Shape{1, 1, 5, 5}},
                             {Values({1, 1, 2, 2}, dtype, {1, 2, 3, 4}), Values({1, 1, 2, 2}, dtype, {1, 1, 1, 1})})[0];
    CHECK(AsDoubles(dx5) == std::vector<double>{1, 1, 2, 2, 0, 1, 1, 2, 2, 0, 3, 3, 4, 4, 0, 3, 3, 4, 4, 0,
                                                0, 0, 0, 0, 0});
  }
}

TEST_CASE("conv2d on an empty batch: empty y and dx, a zero dweight") {
  for (const DType dtype : {DType::kF32, DType::kF64}) {
    INFO(dtype);
    const Conv2DAttrs attrs{.padding = SamePadding()};
    const Tensor x(Shape{0, 2, 4, 4}, dtype);
    const Tensor weight = Iota({3, 2, 3, 3}, dtype);
    CHECK(RunOp("conv2d", attrs, {x, weight})[0].GetShape() == Shape{0, 3, 4, 4});
    const Tensor dy(Shape{0, 3, 4, 4}, dtype);
    CHECK(RunOp("conv2d_grad_data", Conv2DGradAttrs{attrs, Shape{0, 2, 4, 4}}, {dy, weight})[0].GetShape() ==
          Shape{0, 2, 4, 4});
    const Tensor dw = RunOp("conv2d_grad_filter", Conv2DGradAttrs{attrs, Shape{3, 2, 3, 3}}, {dy, x})[0];
    CHECK(AsDoubles(dw) == std::vector<double>(54, 0.0));
  }
}

TEST_CASE("conv2d output shapes follow OneFlow's SAME/VALID rules") {
  JobBuilder builder("conv_shapes");
  const Blob x = builder.Placeholder("x", Shape{2, 3, 7, 8});
  const Blob w = builder.Placeholder("w", Shape{5, 3, 3, 2});
  CHECK(Conv2D(x, w).GetShape() == Shape{2, 5, 5, 7});
  CHECK(Conv2D(x, w, {.padding = SamePadding()}).GetShape() == Shape{2, 5, 7, 8});
  CHECK(Conv2D(x, w, {.strides = {2, 3}, .padding = SamePadding()}).GetShape() == Shape{2, 5, 4, 3});
  CHECK(Conv2D(x, w, {.strides = {2, 2}}).GetShape() == Shape{2, 5, 3, 4});
  CHECK(Conv2D(x, w, {.dilations = {2, 3}}).GetShape() == Shape{2, 5, 3, 5});
  CHECK(Conv2D(x, w, {.padding = ExplicitPadding(1, 2, 0, 3)}).GetShape() == Shape{2, 5, 8, 10});
  const Blob x_nhwc = builder.Placeholder("x_nhwc", Shape{2, 7, 8, 3});
  const Blob w_nhwc = builder.Placeholder("w_nhwc", Shape{5, 3, 2, 3});
  CHECK(Conv2D(x_nhwc, w_nhwc, {.strides = {2, 2}, .padding = SamePadding(), .data_format = DataFormat::kNHWC})
            .GetShape() == Shape{2, 4, 4, 5});
}

TEST_CASE("conv2d f32 (oneDNN) matches the f64 reference: layouts, paddings, strides, dilations, groups") {
  std::mt19937 rng(7);
  const std::vector<Padding> paddings = {ValidPadding(), SamePadding(), ExplicitPadding(2, 0, 1, 3)};
  for (const DataFormat format : {DataFormat::kNCHW, DataFormat::kNHWC}) {
    for (const Padding& padding : paddings) {
      for (const std::int64_t stride : {1, 2}) {
        for (const std::int64_t dilation : {1, 2}) {
          for (const std::int64_t groups : {1, 2}) {
            const bool nchw = format == DataFormat::kNCHW;
            // Odd and even spatial sizes, a non-square kernel, more filters than channels.
            const Shape x = nchw ? Shape{2, 4, 9, 8} : Shape{2, 9, 8, 4};
            const Shape weight = nchw ? Shape{6, 4 / groups, 3, 2} : Shape{6, 3, 2, 4 / groups};
            const Conv2DAttrs attrs{.strides = {stride, stride},
                                    .dilations = {dilation, dilation},
                                    .padding = padding,
                                    .data_format = format,
                                    .groups = groups};
            CompareWithReference(fmt::format("{} {} stride {} dilation {} groups {}", nchw ? "NCHW" : "NHWC",
                                             Describe(padding), stride, dilation, groups),
                                 x, weight, attrs, rng);
          }
        }
      }
    }
  }
  // Mixed per-axis strides and dilations, and depthwise.
  CompareWithReference("mixed", {1, 3, 10, 7}, {4, 3, 2, 3},
                       {.strides = {1, 2}, .dilations = {3, 1}, .padding = SamePadding()}, rng);
  CompareWithReference("depthwise", {2, 8, 6, 6}, {16, 1, 3, 3}, {.padding = SamePadding(), .groups = 8}, rng);
  // Grouped NHWC (OneFlow refuses it on the GPU only): weight (out, kh, kw, C/groups).
  CompareWithReference("depthwise_nhwc", {2, 6, 6, 8}, {16, 3, 3, 1},
                       {.padding = SamePadding(), .data_format = DataFormat::kNHWC, .groups = 8}, rng);
}

TEST_CASE("conv2d f32 matches the reference on large convolutions (the batch split over the intra-op pool)") {
  std::mt19937 rng(11);
  // The docs' LeNet convolutions.
  CompareWithReference("lenet_conv1", {4, 1, 28, 28}, {32, 1, 5, 5}, {.padding = SamePadding()}, rng);
  CompareWithReference("lenet_conv2", {4, 32, 14, 14}, {64, 32, 5, 5}, {.padding = SamePadding()}, rng);
  // Odd batches (uneven chunks), NHWC, groups with dilation.
  CompareWithReference("large_nhwc", {3, 24, 24, 16}, {32, 5, 5, 16},
                       {.padding = SamePadding(), .data_format = DataFormat::kNHWC}, rng);
  CompareWithReference("large_groups", {5, 8, 32, 32}, {16, 4, 3, 3},
                       {.strides = {1, 2}, .dilations = {2, 2}, .padding = SamePadding(), .groups = 2}, rng);
}

TEST_CASE("conv2d_transpose is conv2d's adjoint: <convT(x, w), y> = <x, conv(y, w)>, and its gradients match finite differences") {
  Session session;
  struct Case {
    const char* name;
    Shape x, weight, out;
    Conv2DAttrs attrs;
  };
  // (x is the convolution's output shape; out the transposed convolution's, the convolution's input.)
  const std::vector<Case> cases{
      {"same_stride2", {1, 3, 3, 4}, {3, 2, 3, 3}, {1, 2, 6, 8}, {.strides = {2, 2}, .padding = SamePadding()}},
      {"same_odd_pad", {2, 2, 3, 3}, {2, 3, 2, 2}, {2, 3, 5, 5}, {.strides = {2, 2}, .padding = SamePadding()}},
      {"valid_output_padding", {1, 2, 2, 2}, {2, 1, 3, 3}, {1, 1, 6, 6}, {.strides = {2, 2}}},
      {"nhwc", {1, 2, 2, 3}, {3, 2, 2, 2}, {1, 4, 4, 2}, {.strides = {2, 2}, .padding = SamePadding(), .data_format = DataFormat::kNHWC}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const Tensor x = Random(c.x), w = Random(c.weight), y = Random(c.out);
    JobBuilder builder(std::string("adjoint_") + c.name, JobType::kPredict, JobConfig{.default_dtype = DType::kF64});
    const Blob bx = builder.Placeholder("x", c.x), bw = builder.Placeholder("w", c.weight), by = builder.Placeholder("y", c.out);
    const Blob transposed = Conv2DTranspose(bx, bw, c.out, c.attrs);
    CHECK(transposed.GetShape() == c.out);
    builder.Output("left", ReduceSum(Mul(transposed, by)));
    builder.Output("right", ReduceSum(Mul(bx, Conv2D(by, bw, c.attrs))));
    const Outputs both = session.Call(builder.Build(), {x, w, y});
    CHECK(both["left"].ToVector<double>()[0] == doctest::Approx(both["right"].ToVector<double>()[0]).epsilon(1e-12));
    CheckGradients(session, std::string("conv_transpose_") + c.name, {x, w},
                   Binary([&c](const Blob& a, const Blob& b) { return Conv2DTranspose(a, b, c.out, c.attrs); }));
  }
}

TEST_CASE("conv2d gradients match finite differences") {
  Session session;
  const auto conv = [](Conv2DAttrs attrs) {
    return Binary([attrs](const Blob& x, const Blob& w) { return Conv2D(x, w, attrs); });
  };
  CheckGradients(session, "conv_valid", {Random({2, 3, 5, 4}), Random({2, 3, 3, 2})}, conv({}));
  CheckGradients(session, "conv_same_stride2", {Random({1, 2, 6, 5}), Random({3, 2, 3, 3})},
                 conv({.strides = {2, 2}, .padding = SamePadding()}));
  CheckGradients(session, "conv_same_even", {Random({1, 2, 4, 4}), Random({2, 2, 2, 2})},
                 conv({.padding = SamePadding()}));
  CheckGradients(session, "conv_dilation_explicit", {Random({1, 2, 6, 6}), Random({2, 2, 2, 3})},
                 conv({.strides = {2, 1}, .dilations = {2, 2}, .padding = ExplicitPadding(1, 0, 2, 1)}));
  CheckGradients(session, "conv_groups", {Random({2, 4, 4, 4}), Random({4, 2, 2, 2})}, conv({.groups = 2}));
  CheckGradients(session, "conv_depthwise", {Random({1, 3, 4, 4}), Random({6, 1, 3, 3})},
                 conv({.padding = SamePadding(), .groups = 3}));
  CheckGradients(session, "conv_nhwc", {Random({2, 5, 4, 3}), Random({2, 3, 2, 3})},
                 conv({.strides = {2, 2}, .padding = SamePadding(), .data_format = DataFormat::kNHWC}));
  CheckGradients(session, "conv_nhwc_groups", {Random({2, 4, 4, 4}), Random({6, 2, 2, 2})},
                 conv({.padding = SamePadding(), .data_format = DataFormat::kNHWC, .groups = 2}));
  // Only one operand needs a gradient: the other backward op is left out.
  const Tensor fixed_weight = Random({2, 3, 2, 2});
  CheckGradients(session, "conv_x_only", {Random({1, 3, 4, 4})}, Unary([&](const Blob& x) {
                   return Conv2D(x, weir::internal::AddConstant(x.Graph(), fixed_weight, "fixed_weight"), {});
                 }));
}

TEST_CASE("the conv2d layer creates <name>-weight and <name>-bias in the data format's layout") {
  JobBuilder builder("conv_layer");
  const Blob x = builder.Placeholder("x", Shape{2, 4, 5, 5});
  const Blob y = Conv2DLayer(x, 6, {.kernel_size = {3, 3}, .groups = 2, .activation = Activation::kRelu,
                                    .kernel_initializer = ConstantInitializer(0.5),
                                    .bias_initializer = ConstantInitializer(-8.0), .name = "conv_a"});
  CHECK(y.GetShape() == Shape{2, 6, 3, 3});
  const Blob x_nhwc = builder.Placeholder("x_nhwc", Shape{2, 5, 5, 4});
  const Blob z = Conv2DLayer(x_nhwc, 8, {.kernel_size = {3, 2}, .padding = SamePadding(),
                                         .data_format = DataFormat::kNHWC, .name = "conv_b"});
  CHECK(z.GetShape() == Shape{2, 5, 5, 8});
  const Blob u = Conv2DLayer(x, 3, {.kernel_size = {2, 2}, .use_bias = false, .name = "conv_c"});
  builder.Output("y", y);
  builder.Output("z", z);
  builder.Output("u", u);
  const Job job = builder.Build();
  Session session;
  std::vector<float> ones(2 * 4 * 5 * 5, 1.0f);
  const Outputs out = session.Call(job, {Tensor::FromVector<float>({2, 4, 5, 5}, ones),
                                         Tensor::FromVector<float>({2, 5, 5, 4}, ones)});
  // Each output sums 2 channels x 9 taps of 0.5 = 9, plus the bias -8: relu(1) = 1.
  for (float v : out["y"].ToVector<float>()) CHECK(v == doctest::Approx(1.0));
  CHECK(session.GetVariable("conv_a-weight").GetShape() == Shape{6, 2, 3, 3});
  CHECK(session.GetVariable("conv_a-bias").GetShape() == Shape{6});
  CHECK(session.GetVariable("conv_b-weight").GetShape() == Shape{8, 3, 2, 4});
  CHECK(session.GetVariable("conv_b-bias").GetShape() == Shape{8});
  CHECK(session.GetVariable("conv_c-weight").GetShape() == Shape{3, 4, 2, 2});
  CHECK_THROWS_AS(session.GetVariable("conv_c-bias"), std::exception);
  CHECK(session.GetVariable("conv_b-bias").ToVector<float>() == std::vector<float>(8, 0.0f));

  // The default kernel initializer is glorot uniform with the layout's fans: U(±sqrt(6 / (fan_in + fan_out))),
  // fan_in = prod(shape[1:]), fan_out = filters × the kernel's spatial size.
  const auto check_glorot = [](const Tensor& weight, double fan_in, double fan_out) {
    const double bound = std::sqrt(6.0 / (fan_in + fan_out));
    double largest = 0;
    for (float v : weight.ToVector<float>()) largest = std::max(largest, std::abs(static_cast<double>(v)));
    INFO("weight ", weight.GetShape(), " bound ", bound, " largest ", largest);
    CHECK(largest <= bound);
    CHECK(largest >= 0.9 * bound);
  };
  check_glorot(session.GetVariable("conv_b-weight"), 3 * 2 * 4, 8 * 3 * 2);  // (8, 3, 2, 4) channels last
  check_glorot(session.GetVariable("conv_c-weight"), 4 * 2 * 2, 3 * 2 * 2);  // (3, 4, 2, 2) channels first
}

TEST_CASE("a train job with conv2d, dense and cross entropy lowers its loss") {
  // 16 noisy 6x6 images; the class is the bright bar each holds: row 1, column 4 or the diagonal.
  std::mt19937 rng(3);
  std::normal_distribution<float> noise(0.0f, 0.1f);
  std::vector<float> images(16 * 36);
  std::vector<std::int32_t> labels(16);
  for (int n = 0; n < 16; ++n) {
    labels[n] = n % 3;
    for (int i = 0; i < 36; ++i) {
      const int row = i / 6, col = i % 6;
      const bool bar = (labels[n] == 0 && row == 1) || (labels[n] == 1 && col == 4) || (labels[n] == 2 && row == col);
      images[n * 36 + i] = (bar ? 1.0f : 0.0f) + noise(rng);
    }
  }
  JobBuilder builder("conv_train", JobType::kTrain);
  const Blob x = builder.Placeholder("x", Shape{16, 1, 6, 6});
  const Blob label = builder.Placeholder("labels", Shape{16}, DType::kI32);
  const Blob conv = Conv2DLayer(x, 4, {.kernel_size = {3, 3}, .padding = SamePadding(),
                                       .activation = Activation::kRelu, .name = "train_conv"});
  const Blob logits = Dense(Reshape(conv, {{16, -1}}), 3,
                            {.kernel_initializer = TruncatedNormalInitializer(0.0, 0.1), .name = "train_dense"});
  const Blob loss = ReduceMean(SparseSoftmaxCrossEntropy(label, logits));
  builder.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.9), loss);
  builder.Output("loss", loss);
  const Job job = builder.Build();
  Session session;
  const Tensor x_value = Tensor::FromVector<float>({16, 1, 6, 6}, images);
  const Tensor label_value = Tensor::FromVector<std::int32_t>({16}, labels);
  std::vector<float> losses;
  for (int step = 0; step < 40; ++step) losses.push_back(session.Call(job, {x_value, label_value})["loss"].Data<float>()[0]);
  INFO("first loss ", losses.front(), ", last ", losses.back());
  CHECK(losses.front() == doctest::Approx(std::log(3.0)).epsilon(0.2));
  CHECK(losses.back() < 0.25 * losses.front());
}

TEST_CASE("conv2d rejects bad inputs with messages that show the shapes") {
  JobBuilder builder("conv_errors");
  const Blob x = builder.Placeholder("x", Shape{2, 6, 5, 5});
  const auto throws = [](const std::function<void()>& fn, const std::string& message) {
    INFO("expected: ", message);
    CHECK_THROWS_WITH_AS(fn(), doctest::Contains(message.c_str()), std::invalid_argument);
  };
  throws([&] { Conv2D(builder.Placeholder("x3", Shape{6, 5, 5}), builder.Placeholder("w0", Shape{2, 6, 3, 3})); },
         "[conv2d] expects a 4-D x (N,C,H,W), got (6,5,5)");
  throws([&] { Conv2D(x, builder.Placeholder("w1", Shape{2, 6, 3})); },
         "[conv2d] expects a 4-D weight (out,C/groups,kh,kw), got (2,6,3)");
  throws([&] { Conv2D(x, builder.Placeholder("w2", Shape{2, 5, 3, 3})); },
         "[conv2d] weight (2,5,3,3) has 5 input channels, expected 6 for x (2,6,5,5) (NCHW) with groups 1");
  throws([&] { Conv2D(x, builder.Placeholder("w3", Shape{4, 2, 3, 3}), {.groups = 4}); },
         "[conv2d] x (2,6,5,5) (NCHW) has 6 channels, not divisible by groups 4");
  throws([&] { Conv2D(x, builder.Placeholder("w4", Shape{4, 2, 3, 3}), {.groups = 3}); },
         "[conv2d] weight (4,2,3,3) has 4 output channels, not divisible by groups 3");
  throws([&] { Conv2D(x, builder.Placeholder("w5", Shape{2, 6, 3, 3}, DType::kF64)); },
         "[conv2d] dtypes differ: x f32 vs weight f64");
  throws([&] { Conv2D(x, builder.Placeholder("w6", Shape{2, 6, 7, 3})); },
         "[conv2d] the window (7 with dilation 1) is larger than the padded height 5 (x (2,6,5,5), weight (2,6,7,3), NCHW)");
  throws([&] { Conv2D(x, builder.Placeholder("w7", Shape{2, 6, 3, 3}), {.dilations = {1, 3}}); },
         "[conv2d] the window (3 with dilation 3) is larger than the padded width 5");
  throws([&] { Conv2D(x, builder.Placeholder("w8", Shape{2, 6, 3, 3}), {.strides = {0, 1}}); },
         "[conv2d] stride along the height must be positive, got 0");
  throws([&] { Conv2D(x, builder.Placeholder("w9", Shape{2, 6, 3, 3}), {.padding = ExplicitPadding(-1, 0, 0, 0)}); },
         "[conv2d] explicit padding along the height must be >= 0, got (-1, 0)");
  throws([&] { Conv2D(x, builder.Placeholder("w10", Shape{2, 6, 3, 3}), {.groups = 0}); },
         "[conv2d] groups must be positive, got 0");
  throws([&] {
    Conv2D(builder.Placeholder("x_nhwc", Shape{2, 5, 5, 6}), builder.Placeholder("w11", Shape{2, 3, 3, 6}),
           {.data_format = DataFormat::kNHWC, .groups = 2});
  }, "[conv2d] weight (2,3,3,6) has 6 input channels, expected 3 for x (2,5,5,6) (NHWC) with groups 2");
  throws([&] {
    Conv2D(builder.Placeholder("xi", Shape{2, 6, 5, 5}, DType::kI32), builder.Placeholder("wi", Shape{2, 6, 3, 3}, DType::kI32));
  }, "[conv2d] expects floating inputs, got i32");
  throws([&] { Conv2DLayer(x, 0); }, "[conv2d_layer] 'filters' must be positive, got 0");
  throws([&] { Conv2DLayer(x, 2, {.kernel_size = {3, 0}}); }, "[conv2d_layer] 'kernel_size' must be positive, got (3, 0)");
  throws([&] { Conv2DLayer(builder.Placeholder("x2", Shape{6, 5}), 3); }, "[conv2d_layer] expects a 4-D input, got (6,5)");
  throws([&] { Conv2DLayer(x, 3, {.groups = 4}); },
         "[conv2d_layer] 'groups' must be a positive divisor of the 6 input channels, got 4");
  // As OneFlow's reuse=False: a layer name is used once per job.
  Conv2DLayer(x, 3, {.name = "twice"});
  throws([&] { Conv2DLayer(x, 3, {.name = "twice"}); }, "[conv2d] op name 'twice' is already used in job 'conv_errors'");
  // The backward ops check that dy fits the forward convolution they stand for.
  throws([&] {
    weir::testing::RunOp("conv2d_grad_data", Conv2DGradAttrs{{}, Shape{1, 1, 3, 3}},
                         {Tensor(Shape{1, 1, 3, 3}, DType::kF32), Tensor(Shape{1, 1, 2, 2}, DType::kF32)});
  }, "[conv2d_grad_data] dy f32(1,1,3,3) does not match conv2d's output f32(1,1,2,2) for x (1,1,3,3) and weight (1,1,2,2)");
}

TEST_CASE("kernels plan for one thread: convolutions start no OpenMP team beside Weir's pool") {
  // Regression: oneDNN bakes the OpenMP thread count into a primitive when it is created. Kernels
  // were created on the compiling thread with its default setting, so every convolution run started
  // an OpenMP team next to the intra-op pool and the actor threads, oversubscribing the cores.
  const auto thread_count = [] {
    return std::distance(std::filesystem::directory_iterator("/proc/self/task"), std::filesystem::directory_iterator{});
  };
  omp_set_num_threads(4);  // the caller's own setting, which kernels must not inherit
  Session session;
  {
    // Starts the intra-op pool and the actor threads.
    JobBuilder warm("warm");
    warm.Output("y", Relu(warm.Placeholder("x", Shape{1 << 17})));
    session.Call(warm.Build(), {Tensor(Shape{1 << 17}, DType::kF32)});
  }
  const auto before = thread_count();
  JobBuilder builder("conv_threads");
  const Blob x = builder.Placeholder("x", Shape{8, 16, 16, 16});
  const Blob w = builder.Constant(Iota(Shape{32, 16, 3, 3}, DType::kF32));
  builder.Output("y", Conv2D(x, w, {.padding = SamePadding()}));
  const Job job = builder.Build();
  session.Compile(job);
  CHECK(omp_get_max_threads() == 4);  // compiling left the caller's setting as it was
  for (int i = 0; i < 3; ++i) session.Call(job, {Iota(Shape{8, 16, 16, 16}, DType::kF32)});
  CHECK(thread_count() == before);
  omp_set_num_threads(static_cast<int>(std::thread::hardware_concurrency()));
}
