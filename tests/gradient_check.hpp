#pragma once
// Finite-difference gradient checks shared by the gradient suites, in float64: for
// y = op(inputs), loss = reduce_sum(y * W) with a fixed random W (so every output element counts),
// the analytic d loss / d input from weir::Gradients must match (loss(x + h) - loss(x - h)) / 2h.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "coverage.hpp"
#include "graph/job_graph.hpp"
#include "weir/weir.hpp"

namespace weir::testing {

constexpr double kStep = 1e-6;
constexpr double kTolerance = 1e-6;  // relative and absolute

using BuildFn = std::function<Blob(const std::vector<Blob>&)>;

inline std::mt19937& Rng() {
  static std::mt19937 rng(20261121);
  return rng;
}

/// f64 values with magnitudes in [0.5, 1.5) and random signs: away from relu's kink and from
/// zero divisors. `positive` drops the signs (for pow with fractional exponents).
inline Tensor Random(Shape shape, bool positive = false) {
  Tensor t(std::move(shape), DType::kF64);
  std::uniform_real_distribution<double> magnitude(0.5, 1.5);
  std::bernoulli_distribution negative(0.5);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) {
    const double value = magnitude(Rng());
    t.Data<double>()[i] = !positive && negative(Rng()) ? -value : value;
  }
  return t;
}

inline Tensor Labels(std::vector<std::int32_t> labels) {
  const auto count = static_cast<std::int64_t>(labels.size());
  return Tensor::FromVector<std::int32_t>(Shape{count}, labels);
}

/// The job computing loss = reduce_sum(fn(inputs) * weights), outputting either the loss or the
/// gradient of every floating input. `weights` is drawn on first use (y's shape is known then).
inline Job LossJob(const std::string& name, const std::vector<Tensor>& inputs, const BuildFn& fn, Tensor& weights,
            bool gradients) {
  JobBuilder builder(name, JobType::kPredict, JobConfig{.default_dtype = DType::kF64});
  std::vector<Blob> placeholders;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    placeholders.push_back(builder.Placeholder(fmt::format("x{}", i), inputs[i].GetShape(), inputs[i].GetDType()));
  }
  const Blob y = fn(placeholders);
  if (!weights.Defined()) weights = Random(y.GetShape());
  const Blob loss = ReduceSum(Mul(y, builder.Constant(weights, "weights")));
  if (!gradients) {
    builder.Output("loss", loss);
    return builder.Build();
  }
  std::vector<Blob> wrt;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (IsFloating(inputs[i].GetDType())) wrt.push_back(placeholders[i]);
  }
  const std::vector<Blob> grads = Gradients(loss, wrt);
  REQUIRE(grads.size() == wrt.size());
  for (std::size_t i = 0; i < wrt.size(); ++i) {
    REQUIRE(grads[i].Defined());
    CHECK(grads[i].GetShape() == wrt[i].GetShape());
    CHECK(grads[i].GetDType() == wrt[i].GetDType());
    builder.Output(fmt::format("grad{}", i), grads[i]);
  }
  return builder.Build();
}

inline double Loss(Session& session, const Job& job, const std::vector<Tensor>& inputs) {
  return session.Call(job, inputs)[0].Data<double>()[0];
}

/// Compares the analytic gradient of every element of every floating input with central
/// differences of the loss job.
inline void CheckGradients(Session& session, const std::string& name, const std::vector<Tensor>& inputs, const BuildFn& fn) {
  INFO("case: ", name);
  Tensor weights;
  const Job grad_job = LossJob(name + "_grad", inputs, fn, weights, true);
  const Job loss_job = LossJob(name + "_loss", inputs, fn, weights, false);
  // The ops of the checked job count as checked (tests/coverage.hpp).
  for (const auto& node : loss_job.Graph()->nodes) Coverage::Add("gradients", node.type);
  const Outputs grads = session.Call(grad_job, inputs);
  std::size_t grad_index = 0;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (!IsFloating(inputs[k].GetDType())) continue;
    const Tensor& grad = grads[grad_index++];
    std::vector<Tensor> perturbed = inputs;
    perturbed[k] = inputs[k].Clone();
    double* x = perturbed[k].Data<double>();
    for (std::int64_t e = 0; e < inputs[k].NumElements(); ++e) {
      const double original = x[e];
      x[e] = original + kStep;
      const double up = Loss(session, loss_job, perturbed);
      x[e] = original - kStep;
      const double down = Loss(session, loss_job, perturbed);
      x[e] = original;
      const double numeric = (up - down) / (2 * kStep);
      const double analytic = grad.Data<double>()[e];
      INFO("input ", k, " ", inputs[k].GetShape(), ", element ", e, ": analytic ", analytic, ", numeric ", numeric);
      CHECK(std::abs(analytic - numeric) <= kTolerance * (1 + std::abs(numeric)));
    }
  }
}

inline BuildFn Unary(std::function<Blob(const Blob&)> op) {
  return [op = std::move(op)](const std::vector<Blob>& x) { return op(x[0]); };
}

inline BuildFn Binary(std::function<Blob(const Blob&, const Blob&)> op) {
  return [op = std::move(op)](const std::vector<Blob>& x) { return op(x[0], x[1]); };
}

}  // namespace weir::testing
