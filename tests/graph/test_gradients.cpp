// Gradients of every differentiable op against central finite differences (tests/gradient_check.hpp).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gradient_check.hpp"
#include "graph/op_registry.hpp"
#include "kernels/attrs/dropout_attrs.hpp"
#include "weir/weir.hpp"

using namespace weir;
using namespace weir::testing;

namespace {

// logits = relu(x·W1 + b1)·W2 + b2; loss = mean cross entropy. W1 is also read by an L2 penalty,
// so two partial gradients meet in it.
Blob Mlp(const std::vector<Blob>& in) {
  const Blob& x = in[0];
  const Blob& w1 = in[1];
  const Blob& b1 = in[2];
  const Blob& w2 = in[3];
  const Blob& b2 = in[4];
  const Blob& labels = in[5];
  const Blob hidden = Relu(BiasAdd(MatMul(x, w1), b1));
  const Blob logits = BiasAdd(MatMul(hidden, w2), b2);
  const Blob cross_entropy = ReduceMean(SparseSoftmaxCrossEntropy(labels, logits));
  return Add(cross_entropy, ScalarMul(ReduceSum(Mul(w1, w1)), 0.01));
}

std::vector<Tensor> MlpInputs() {
  return {Random({4, 5}), Random({5, 6}), Random({6}), Random({6, 3}), Random({3}), Labels({0, 2, 1, 2})};
}

}  // namespace

TEST_CASE("identity reshape and transpose move gradients back unchanged in value") {
  Session session;
  CheckGradients(session, "identity", {Random({2, 3})}, Unary([](const Blob& x) { return Identity(x); }));
  CheckGradients(session, "reshape", {Random({2, 3, 2})}, Unary([](const Blob& x) {
                   return Reshape(x, {.shape = {3, -1}});
                 }));
  CheckGradients(session, "reshape_to_scalar", {Random({1, 1})},
                 Unary([](const Blob& x) { return Reshape(x, {.shape = {}}); }));
  CheckGradients(session, "transpose_2d", {Random({2, 3})}, Unary([](const Blob& x) {
                   return Transpose(x, {.perm = {1, 0}});
                 }));
  CheckGradients(session, "transpose_3d", {Random({2, 3, 4})}, Unary([](const Blob& x) {
                   return Transpose(x, {.perm = {2, 0, 1}});
                 }));
}

TEST_CASE("slice puts the gradient back where it took its elements, zeros elsewhere") {
  Session session;
  CheckGradients(session, "slice_steps", {Random({4, 5})}, Unary([](const Blob& x) {
                   return Slice(x, {.start = {1, -1}, .stop = {4, -6}, .step = {2, -2}});
                 }));
  CheckGradients(session, "slice_3d", {Random({2, 3, 4})}, Unary([](const Blob& x) {
                   return Slice(x, {.start = {0, 1, 1}, .stop = {2, 3, 3}, .step = {1, 1, 1}});
                 }));
}

TEST_CASE("matmul: every pair of transpose flags with alpha") {
  Session session;
  for (const bool transpose_a : {false, true}) {
    for (const bool transpose_b : {false, true}) {
      for (const double alpha : {1.0, -0.5}) {
        const MatMulAttrs attrs{.transpose_a = transpose_a, .transpose_b = transpose_b, .alpha = alpha};
        // op(a) (2,3), op(b) (3,4)
        const Shape a = transpose_a ? Shape{3, 2} : Shape{2, 3};
        const Shape b = transpose_b ? Shape{4, 3} : Shape{3, 4};
        CheckGradients(session, fmt::format("matmul_{}{}_{}", transpose_a, transpose_b, alpha), {Random(a), Random(b)},
                       Binary([attrs](const Blob& x, const Blob& y) { return MatMul(x, y, attrs); }));
      }
    }
  }
  // One operand used twice: both partial gradients accumulate into it.
  CheckGradients(session, "matmul_square", {Random({3, 3})},
                 Unary([](const Blob& x) { return MatMul(x, x, {.transpose_b = true}); }));
}

TEST_CASE("bias_add: bias gradient sums every axis but the bias axis") {
  Session session;
  const auto bias_add = [](int axis) {
    return Binary([axis](const Blob& x, const Blob& b) { return BiasAdd(x, b, {.axis = axis}); });
  };
  CheckGradients(session, "bias_add_2d", {Random({4, 3}), Random({3})}, bias_add(1));
  CheckGradients(session, "bias_add_axis0", {Random({4, 3}), Random({4})}, bias_add(0));
  CheckGradients(session, "bias_add_3d_axis1", {Random({2, 3, 4}), Random({3})}, bias_add(1));
  CheckGradients(session, "bias_add_3d_axis_minus1", {Random({2, 3, 4}), Random({4})}, bias_add(-1));
  CheckGradients(session, "bias_add_1d", {Random({3}), Random({3})}, bias_add(0));
}

TEST_CASE("add sub mul and div with numpy broadcasting reduce gradients to each operand's shape") {
  Session session;
  const std::vector<std::pair<Shape, Shape>> shape_pairs = {
      {{2, 3}, {2, 3}}, {{2, 3}, {3}},    {{3}, {2, 3}},       {{2, 1}, {1, 3}},    {{2, 3}, {}},
      {{}, {2, 3}},     {{1, 3}, {2, 3}}, {{2, 3, 4}, {3, 1}}, {{2, 1, 3}, {4, 1}}, {{}, {}},
  };
  const std::vector<std::pair<std::string, std::function<Blob(const Blob&, const Blob&)>>> ops = {
      {"add", [](const Blob& a, const Blob& b) { return Add(a, b); }},
      {"sub", [](const Blob& a, const Blob& b) { return Sub(a, b); }},
      {"mul", [](const Blob& a, const Blob& b) { return Mul(a, b); }},
      {"div", [](const Blob& a, const Blob& b) { return Div(a, b); }},
  };
  for (const auto& [op_name, op] : ops) {
    for (const auto& [a, b] : shape_pairs) {
      CheckGradients(session, op_name + "_" + a.ToString() + "_" + b.ToString(), {Random(a), Random(b)}, Binary(op));
    }
  }
  // One blob on both sides: the two partial gradients add up.
  CheckGradients(session, "mul_self", {Random({2, 3})}, Unary([](const Blob& x) { return Mul(x, x); }));
  CheckGradients(session, "div_self_row", {Random({2, 3})}, Unary([](const Blob& x) {
                   return Div(x, Reshape(ReduceSum(x, {.axes = {0}}), {.shape = {1, 3}}));
                 }));
}

TEST_CASE("mod: da = dy, db = -dy floor(a / b), with broadcasting") {
  Session session;
  // Quotients away from integers, where a mod b jumps and finite differences would straddle the jump.
  const auto values = &Tensor::FromVector<double>;
  const Tensor a = values({2, 3}, {2.3, -1.7, 0.4, 3.9, -2.45, 1.1});
  CheckGradients(session, "mod", {a, values({2, 3}, {0.9, 1.3, -0.8, 1.7, 0.7, -1.2})},
                 Binary([](const Blob& x, const Blob& y) { return Mod(x, y); }));
  CheckGradients(session, "mod_row", {a, values({3}, {0.9, 1.3, -0.8})},
                 Binary([](const Blob& x, const Blob& y) { return Mod(x, y); }));
}

TEST_CASE("pow: da = dy b a^(b-1), db = dy y ln a, with broadcasting") {
  Session session;
  const auto values = &Tensor::FromVector<double>;
  const Tensor a = values({2, 3}, {0.3, 1.7, 2.4, 0.9, 1.45, 3.1});
  CheckGradients(session, "pow", {a, values({2, 3}, {0.9, 2.3, -0.8, 1.7, 0.5, -1.2})},
                 Binary([](const Blob& x, const Blob& y) { return Pow(x, y); }));
  CheckGradients(session, "pow_row", {a, values({3}, {1.5, -0.7, 2.0})},
                 Binary([](const Blob& x, const Blob& y) { return Pow(x, y); }));
}

TEST_CASE("scalar: every ScalarOpKind") {
  Session session;
  const std::vector<std::pair<std::string, ScalarAttrs>> cases = {
      {"add", {ScalarOpKind::kAdd, 1.5}},         {"sub", {ScalarOpKind::kSub, 1.5}},
      {"rsub", {ScalarOpKind::kRSub, 1.5}},       {"mul", {ScalarOpKind::kMul, -2.5}},
      {"div", {ScalarOpKind::kDiv, -2.5}},        {"rdiv", {ScalarOpKind::kRDiv, 3.0}},
      {"pow2", {ScalarOpKind::kPow, 2.0}},        {"pow3", {ScalarOpKind::kPow, 3.0}},
      {"pow0", {ScalarOpKind::kPow, 0.0}},        {"pow1", {ScalarOpKind::kPow, 1.0}},
      {"pow_minus1", {ScalarOpKind::kPow, -1.0}},
  };
  for (const auto& [kind_name, attrs] : cases) {
    CheckGradients(session, "scalar_" + kind_name, {Random({2, 3})},
                   Unary([attrs](const Blob& x) { return Scalar(x, attrs); }));
  }
  // Fractional exponents need a positive base.
  for (const double exponent : {0.5, -1.5, 2.5}) {
    const ScalarAttrs attrs{ScalarOpKind::kPow, exponent};
    CheckGradients(session, fmt::format("scalar_pow_{}", exponent), {Random({2, 3}, true)},
                   Unary([attrs](const Blob& x) { return Scalar(x, attrs); }));
  }
}

TEST_CASE("relu sigmoid and tanh") {
  Session session;
  CheckGradients(session, "relu", {Random({3, 4})}, Unary([](const Blob& x) { return Relu(x); }));
  CheckGradients(session, "sigmoid", {Random({3, 4})}, Unary([](const Blob& x) { return Sigmoid(x); }));
  CheckGradients(session, "sigmoid_wide", {Random({3, 4})},
                 Unary([](const Blob& x) { return Sigmoid(ScalarMul(x, 4.0)); }));
  CheckGradients(session, "tanh", {Random({3, 4})}, Unary([](const Blob& x) { return Tanh(x); }));
  CheckGradients(session, "tanh_wide", {Random({3, 4})}, Unary([](const Blob& x) { return Tanh(ScalarMul(x, 2.0)); }));
}

TEST_CASE("softmax along any axis") {
  Session session;
  for (const int axis : {0, 1, -1}) {
    CheckGradients(session, fmt::format("softmax_2d_axis{}", axis), {Random({3, 4})},
                   Unary([axis](const Blob& x) { return Softmax(x, {.axis = axis}); }));
  }
  for (const int axis : {0, 1, 2, -2}) {
    CheckGradients(session, fmt::format("softmax_3d_axis{}", axis), {Random({2, 3, 4})},
                   Unary([axis](const Blob& x) { return Softmax(x, {.axis = axis}); }));
  }
}

TEST_CASE("reduce_sum and reduce_mean over any axes with and without keep_dims") {
  Session session;
  const std::vector<std::vector<int>> axes_cases = {{}, {0}, {1}, {-1}, {0, 2}, {2, 0, 1}, {-3, -2}};
  for (const bool keep_dims : {false, true}) {
    for (const std::vector<int>& axes : axes_cases) {
      const ReduceAttrs attrs{.axes = axes, .keep_dims = keep_dims};
      const std::string suffix = fmt::format("[{}]_{}", fmt::join(axes, ","), keep_dims);
      CheckGradients(session, "reduce_sum_" + suffix, {Random({2, 3, 4})},
                     Unary([attrs](const Blob& x) { return ReduceSum(x, attrs); }));
      CheckGradients(session, "reduce_mean_" + suffix, {Random({2, 3, 4})},
                     Unary([attrs](const Blob& x) { return ReduceMean(x, attrs); }));
    }
  }
  CheckGradients(session, "reduce_mean_1d", {Random({5})}, Unary([](const Blob& x) { return ReduceMean(x); }));
}

TEST_CASE("cast between float dtypes casts the gradient back") {
  Session session;
  CheckGradients(session, "cast_f64_f64", {Random({2, 3})},
                 Unary([](const Blob& x) { return Cast(x, {.dtype = DType::kF64}); }));

  // Through f32 a finite difference of 1e-6 drowns in rounding, so check the exact value instead:
  // loss = sum(cast(cast(x, f32), f64) * W) has the gradient W rounded to f32.
  JobBuilder builder("cast_round_trip", JobType::kPredict, JobConfig{.default_dtype = DType::kF64});
  const Blob x = builder.Placeholder("x", Shape{2, 3});
  const Blob x32 = builder.Placeholder("x32", Shape{2, 3}, DType::kF32);
  const Tensor weights = Random({2, 3});
  const Blob w = builder.Constant(weights);
  const Blob loss = Add(ReduceSum(Mul(Cast(Cast(x, {.dtype = DType::kF32}), {.dtype = DType::kF64}), w)),
                        ReduceSum(Mul(Cast(x32, {.dtype = DType::kF64}), w)));
  const std::vector<Blob> grads = Gradients(loss, {x, x32});
  REQUIRE(grads[0].GetDType() == DType::kF64);
  REQUIRE(grads[1].GetDType() == DType::kF32);
  builder.Output("dx", grads[0]);
  builder.Output("dx32", grads[1]);
  const Job job = builder.Build();
  const Outputs out = session.Call(job, {Random({2, 3}), Tensor(Shape{2, 3}, DType::kF32)});
  for (std::int64_t i = 0; i < 6; ++i) {
    const auto rounded = static_cast<float>(weights.Data<double>()[i]);
    CHECK(out["dx"].Data<double>()[i] == static_cast<double>(rounded));
    CHECK(out["dx32"].Data<float>()[i] == rounded);
  }
}

TEST_CASE("sparse_softmax_cross_entropy: gradient for the logits and none for the labels") {
  Session session;
  CheckGradients(
      session, "cross_entropy", {Labels({0, 4, 2}), Random({3, 5})},
      Binary([](const Blob& labels, const Blob& logits) { return SparseSoftmaxCrossEntropy(labels, logits); }));
  CheckGradients(session, "cross_entropy_i64", {Tensor::FromVector<std::int64_t>(Shape{2}, {1, 0}), Random({2, 3})},
                 Binary([](const Blob& labels, const Blob& logits) {
                   return ReduceMean(SparseSoftmaxCrossEntropy(labels, ScalarMul(logits, 3.0)));
                 }));

  JobBuilder builder("labels_have_no_gradient", JobType::kPredict, JobConfig{.default_dtype = DType::kF64});
  const Blob labels = builder.Placeholder("labels", Shape{3}, DType::kI32);
  const Blob logits = builder.Placeholder("logits", Shape{3, 5});
  const std::vector<Blob> grads = Gradients(ReduceSum(SparseSoftmaxCrossEntropy(labels, logits)), {labels, logits});
  CHECK_FALSE(grads[0].Defined());
  CHECK(grads[1].Defined());
}

TEST_CASE("composites: an MLP with cross entropy and reused blobs accumulate partial gradients") {
  Session session;
  CheckGradients(session, "mlp", MlpInputs(), Mlp);
  CheckGradients(session, "fan_out", {Random({3, 3}), Random({3})}, [](const std::vector<Blob>& in) {
    const Blob& x = in[0];
    const Blob h = Tanh(BiasAdd(x, in[1]));
    const Blob s = Reshape(Softmax(Reshape(x, {.shape = {9}})), {.shape = {3, 3}});
    // x reaches the output along five paths, the bias along two (both through h).
    return Add(Mul(Sigmoid(x), h), Sub(MatMul(x, h), s));
  });
}

TEST_CASE("f32 gradients of the MLP agree with f64 within 1e-4") {
  Session session;
  const std::vector<Tensor> inputs = MlpInputs();
  std::vector<std::vector<double>> results;
  for (const DType dtype : {DType::kF64, DType::kF32}) {
    JobBuilder builder(fmt::format("mlp_{}", dtype), JobType::kPredict, JobConfig{.default_dtype = dtype});
    std::vector<Blob> placeholders;
    std::vector<Tensor> call_inputs;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const bool floating = IsFloating(inputs[i].GetDType());
      placeholders.push_back(
          builder.Placeholder(fmt::format("x{}", i), inputs[i].GetShape(), floating ? dtype : inputs[i].GetDType()));
      if (!floating || dtype == DType::kF64) {
        call_inputs.push_back(inputs[i]);
        continue;
      }
      Tensor narrowed(inputs[i].GetShape(), DType::kF32);
      for (std::int64_t e = 0; e < narrowed.NumElements(); ++e) {
        narrowed.Data<float>()[e] = static_cast<float>(inputs[i].Data<double>()[e]);
      }
      call_inputs.push_back(narrowed);
    }
    const Blob loss = Mlp(placeholders);
    const std::vector<Blob> wrt(placeholders.begin(), placeholders.begin() + 5);
    const std::vector<Blob> grads = Gradients(loss, wrt);
    for (std::size_t i = 0; i < grads.size(); ++i) builder.Output(fmt::format("grad{}", i), grads[i]);
    const Outputs out = session.Call(builder.Build(), call_inputs);
    std::vector<double> flat;
    for (const Tensor& t : out.Tensors()) {
      for (std::int64_t e = 0; e < t.NumElements(); ++e) {
        flat.push_back(dtype == DType::kF64 ? t.Data<double>()[e] : static_cast<double>(t.Data<float>()[e]));
      }
    }
    results.push_back(std::move(flat));
  }
  REQUIRE(results[0].size() == results[1].size());
  for (std::size_t i = 0; i < results[0].size(); ++i) {
    INFO("element ", i, ": f64 ", results[0][i], ", f32 ", results[1][i]);
    CHECK(std::abs(results[0][i] - results[1][i]) <= 1e-4 * (1 + std::abs(results[0][i])));
  }
}

TEST_CASE("a loss that depends on an input only through argmax is an error naming argmax") {
  JobBuilder builder("through_argmax", JobType::kPredict, JobConfig{.default_dtype = DType::kF64});
  const Blob x = builder.Placeholder("x", Shape{3, 4});
  const Blob loss = ReduceSum(Cast(ArgMax(x, {}, "pick"), {.dtype = DType::kF64}));
  CHECK_THROWS_WITH_AS(Gradients(loss, {x}), doctest::Contains("op 'pick' has no gradient"), std::invalid_argument);
}

TEST_CASE("gradients flow through integer values: a cast's gradient is dy cast back (OneFlow's rule)") {
  Session session;
  JobBuilder builder("through_integers", JobType::kPredict, JobConfig{.default_dtype = DType::kF32});
  const Blob x = builder.Placeholder("x", Shape{2, 3});
  const Blob y = builder.Placeholder("y", Shape{1, 3});
  // f32 -> i8, an i8 product broadcast over rows, back to f32: d/dx = y (as i8), d/dy = column sums of x.
  const Blob xi = Cast(x, {.dtype = DType::kI8});
  const Blob yi = Cast(y, {.dtype = DType::kI8});
  const Blob product = Mul(xi, yi);
  const Blob loss = ReduceSum(Cast(product, {.dtype = DType::kF32}));
  std::vector<Blob> grads = Gradients(loss, {x, y, product});
  builder.Output("dx", grads[0]);
  builder.Output("dy", grads[1]);
  builder.Output("dproduct", grads[2]);
  // An integer loss: its seed is integer ones.
  const Blob int_loss = ReduceSum(Cast(product, {.dtype = DType::kI32}));
  builder.Output("dx_of_int_loss", Gradients(int_loss, {x})[0]);
  const Outputs out = session.Call(builder.Build(), {{"x", Tensor::FromVector<float>(Shape{2, 3}, {1, 2, 3, 4, 5, 6})},
                                                     {"y", Tensor::FromVector<float>(Shape{1, 3}, {2, -1, 3})}});
  CHECK(out["dx"].ToVector<float>() == std::vector<float>{2, -1, 3, 2, -1, 3});
  CHECK(out["dy"].ToVector<float>() == std::vector<float>{5, 7, 9});
  CHECK(out["dproduct"].GetDType() == DType::kI8);
  CHECK(out["dproduct"].ToVector<std::int8_t>() == std::vector<std::int8_t>{1, 1, 1, 1, 1, 1});
  CHECK(out["dx_of_int_loss"].ToVector<float>() == std::vector<float>{2, -1, 3, 2, -1, 3});
}

TEST_CASE("the gradient of an input the loss does not depend on is undefined") {
  JobBuilder builder("unrelated", JobType::kPredict, JobConfig{.default_dtype = DType::kF64});
  const Blob x = builder.Placeholder("x", Shape{2, 3});
  const Blob unrelated = builder.Placeholder("unrelated", Shape{2, 3});
  const Blob side = Relu(unrelated);  // computed, but not part of the loss
  const Blob loss = ReduceSum(Tanh(x));
  const std::vector<Blob> grads = Gradients(loss, {x, unrelated, side, loss});
  CHECK(grads[0].Defined());
  CHECK_FALSE(grads[1].Defined());
  CHECK_FALSE(grads[2].Defined());
  CHECK(grads[3].Defined());  // d loss / d loss is the seed
}

TEST_CASE("broadcast_to, parallel_cast and pad (slice_grad) pass gradients back") {
  Session session;
  CheckGradients(session, "broadcast_to_rows", {Random({1, 3})}, Unary([](const Blob& x) {
                   return internal::AddOpByName("broadcast_to", {x}, {{"shape", std::vector<std::int64_t>{4, 3}}}, "")[0];
                 }));
  CheckGradients(session, "broadcast_to_new_axes", {Random({3})}, Unary([](const Blob& x) {
                   return internal::AddOpByName("broadcast_to", {x}, {{"shape", std::vector<std::int64_t>{2, 2, 3}}}, "")[0];
                 }));
  CheckGradients(session, "parallel_cast", {Random({2, 3})},
                 Unary([](const Blob& x) { return Tanh(ParallelCast(x, {.value = Distribute::Broadcast()})); }));
  // pad: x in the interior [1:3, 0:3:1] of a (4, 5) zero tensor, OneFlow's flow.pad.
  CheckGradients(session, "pad", {Random({2, 3})}, Unary([](const Blob& x) {
                   return internal::AddOpByName("slice_grad", {x},
                                                {{"shape", std::vector<std::int64_t>{4, 5}},
                                                 {"start", std::vector<std::int64_t>{1, 0}},
                                                 {"stop", std::vector<std::int64_t>{3, 3}},
                                                 {"step", std::vector<std::int64_t>{1, 1}}},
                                                "")[0];
                 }));
}

// Dropout draws a new mask at every call, so no finite difference can check it: its gradient must be
// the incoming one through the call's own mask, times the scale.
TEST_CASE("dropout's gradient is the incoming gradient through the call's mask, scaled") {
  JobBuilder builder("dropout_gradient", JobType::kPredict, JobConfig{.default_dtype = DType::kF64});
  const Blob x = builder.Placeholder("x", Shape{8, 16});
  const Blob w = builder.Placeholder("w", Shape{8, 16});
  const std::vector<Blob> dropped = internal::AddOp("dropout", {x}, internal::DropoutAttrs{.rate = 0.25, .seed = 7}, "drop");
  const Blob loss = ReduceSum(Mul(dropped[0], w));
  builder.Output("y", dropped[0]);
  builder.Output("mask", dropped[1]);
  builder.Output("dx", Gradients(loss, {x})[0]);
  Session session;
  const Job job = builder.Build();
  const Tensor xs = Random({8, 16});
  const Tensor ws = Random({8, 16});
  const Outputs out = session.Call(job, {xs, ws});
  const double scale = 1 / (1 - 0.25);
  int kept = 0;
  for (std::int64_t i = 0; i < xs.NumElements(); ++i) {
    const bool keep = out[1].Data<std::uint8_t>()[i] != 0;
    kept += keep ? 1 : 0;
    CHECK(out[0].Data<double>()[i] == doctest::Approx(keep ? xs.Data<double>()[i] * scale : 0.0));
    CHECK(out[2].Data<double>()[i] == doctest::Approx(keep ? ws.Data<double>()[i] * scale : 0.0));
  }
  CHECK(kept > 64);   // about 96 of 128 kept
  CHECK(kept < 128);
}
