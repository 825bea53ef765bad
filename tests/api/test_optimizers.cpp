// Adam, AdamW, RMSProp and LAMB updates and clipping by global norm, end to end: train jobs run a few
// steps and every variable and optimizer slot is compared with the formulas of OneFlow's update
// kernels, written again here in double precision.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "weir/optimizers.hpp"
#include "weir/weir.hpp"

using namespace weir;

namespace {

constexpr int kElements = 10;  // every variable is (2,5)

// The state of one variable under the reference optimizer.
struct Reference {
  std::vector<double> p;
  std::vector<double> m = std::vector<double>(kElements, 0.0);
  std::vector<double> v = std::vector<double>(kElements, 0.0);
  std::vector<double> mean_square = std::vector<double>(kElements, 0.0);
  std::vector<double> mean_gradient = std::vector<double>(kElements, 0.0);
};

double Sign(double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }

// One update of `ref` by `grad` (already divided by the loss elements and clipped) at train step
// `step` with learning rate `lr`, as OneFlow's adam/rmsprop/lamb update kernels.
void ReferenceStep(const Optimizer& opt, const Regularizer& reg, double lr, std::int64_t step,
                   const std::vector<double>& grad, Reference& ref) {
  std::vector<double> g(kElements);
  for (int i = 0; i < kElements; ++i) g[i] = grad[i] + reg.l1 * Sign(ref.p[i]) + reg.l2 * ref.p[i];
  const double t = static_cast<double>(step + 1);
  switch (opt.kind) {
    case Optimizer::Kind::kSgd:
      for (int i = 0; i < kElements; ++i) ref.p[i] -= lr * g[i];
      break;
    case Optimizer::Kind::kAdam:
    case Optimizer::Kind::kAdamW: {
      const double lr_t =
          opt.do_bias_correction ? lr * std::sqrt(1 - std::pow(opt.beta2, t)) / (1 - std::pow(opt.beta1, t)) : lr;
      for (int i = 0; i < kElements; ++i) {
        ref.m[i] = opt.beta1 * ref.m[i] + (1 - opt.beta1) * g[i];
        ref.v[i] = opt.beta2 * ref.v[i] + (1 - opt.beta2) * g[i] * g[i];
        ref.p[i] = ref.p[i] - lr_t * (ref.m[i] / (std::sqrt(ref.v[i]) + opt.epsilon) + opt.weight_decay * ref.p[i]);
      }
      break;
    }
    case Optimizer::Kind::kRmsProp:
      for (int i = 0; i < kElements; ++i) {
        ref.mean_square[i] = opt.decay_rate * ref.mean_square[i] + (1 - opt.decay_rate) * g[i] * g[i];
        double denominator = ref.mean_square[i];
        if (opt.centered) {
          ref.mean_gradient[i] = opt.decay_rate * ref.mean_gradient[i] + (1 - opt.decay_rate) * g[i];
          denominator -= ref.mean_gradient[i] * ref.mean_gradient[i];
        }
        ref.p[i] -= lr * g[i] / std::sqrt(denominator + opt.epsilon);
      }
      break;
    case Optimizer::Kind::kLamb: {
      std::vector<double> u(kElements);
      double p_norm = 0;
      double u_norm = 0;
      for (int i = 0; i < kElements; ++i) {
        ref.m[i] = opt.beta1 * ref.m[i] + (1 - opt.beta1) * g[i];
        ref.v[i] = opt.beta2 * ref.v[i] + (1 - opt.beta2) * g[i] * g[i];
        const double m_hat = ref.m[i] / (1 - std::pow(opt.beta1, t));
        const double v_hat = ref.v[i] / (1 - std::pow(opt.beta2, t));
        u[i] = m_hat / std::sqrt(v_hat + opt.epsilon);
        p_norm += ref.p[i] * ref.p[i];
        u_norm += u[i] * u[i];
      }
      p_norm = std::sqrt(p_norm);
      u_norm = std::sqrt(u_norm);
      const double ratio = p_norm > 0 && u_norm > 0 ? p_norm / u_norm : 1.0;
      for (int i = 0; i < kElements; ++i) ref.p[i] -= lr * ratio * (u[i] + opt.weight_decay * ref.p[i]);
      break;
    }
    case Optimizer::Kind::kLars: {  // the momentum in ref.m
      double p_norm = 0;
      double g_norm = 0;
      for (int i = 0; i < kElements; ++i) {
        p_norm += ref.p[i] * ref.p[i];
        g_norm += g[i] * g[i];
      }
      const double rate = lr * opt.lars_coefficient * std::sqrt(p_norm) / (opt.epsilon + std::sqrt(g_norm));
      for (int i = 0; i < kElements; ++i) {
        ref.m[i] = opt.momentum * ref.m[i] - rate * g[i];
        ref.p[i] += ref.m[i];
      }
      break;
    }
  }
}

std::vector<double> Values(const Tensor& t) {
  if (t.GetDType() == DType::kF64) return t.ToVector<double>();
  const std::vector<float> values = t.ToVector<float>();
  return {values.begin(), values.end()};
}

Tensor Make(const std::vector<double>& values, DType dtype) {
  if (dtype == DType::kF64) return Tensor::FromVector<double>(Shape{2, 5}, values);
  return Tensor::FromVector<float>(Shape{2, 5}, std::vector<float>(values.begin(), values.end()));
}

void CheckClose(const std::string& what, const std::vector<double>& got, const std::vector<double>& want,
                double rtol, double atol) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO(what << "[" << i << "]: got " << got[i] << ", want " << want[i]);
    CHECK(std::fabs(got[i] - want[i]) <= rtol * std::fabs(want[i]) + atol);
  }
}

// The input of step `step`: mixed signs, a zero, a different pattern every step.
std::vector<double> Input(int step) {
  std::vector<double> x(kElements);
  for (int i = 0; i < kElements; ++i) x[i] = ((i * 7 + step * 3) % 11 - 5) * 0.1;
  return x;
}

// Initial values: mixed signs and a zero (sign(0) = 0 for the L1 term).
std::vector<double> Initial(double offset) {
  std::vector<double> p(kElements);
  for (int i = 0; i < kElements; ++i) p[i] = 0.1 * (i - 4) + offset;
  return p;
}

struct Case {
  Optimizer optimizer;
  Regularizer regularizer;
  DType dtype = DType::kF32;
  int steps = 5;
  /// Learning rate by train step, as the optimizer's schedule gives it.
  std::function<double(std::int64_t)> lr;
  /// Also a second variable "w" with the same gradient, for the global norm.
  bool two_variables = false;
  /// Start from zeros rather than Initial().
  bool zero_init = false;
  /// The loss is reduce_sum(var * x) times this (so gradients are x times it).
  double loss_multiplier = 1.0;
};

// Trains loss = reduce_sum(var * x) [+ reduce_sum(w * x)] for `c.steps` steps and compares the
// variables and their slots with the reference after every step.
void RunCase(const std::string& name, const Case& c) {
  JobBuilder builder(name, JobType::kTrain);
  Blob x = builder.Placeholder("x", Shape{2, 5}, c.dtype);
  const VariableSpec spec{.shape = Shape{2, 5}, .dtype = c.dtype, .regularizer = c.regularizer};
  Blob loss = ReduceSum(Mul(builder.Variable("var", spec), x));
  if (c.two_variables) loss = Add(loss, ReduceSum(Mul(builder.Variable("w", spec), x)));
  if (c.loss_multiplier != 1.0) loss = ScalarMul(loss, c.loss_multiplier);
  builder.Minimize(c.optimizer, loss);
  const Job job = builder.Build();

  std::vector<std::string> names = {"var"};
  if (c.two_variables) names.push_back("w");
  std::vector<Reference> refs(names.size());
  Session session;
  session.Compile(job);
  for (std::size_t k = 0; k < names.size(); ++k) {
    refs[k].p = c.zero_init ? std::vector<double>(kElements, 0.0) : Initial(0.05 * static_cast<double>(k));
    session.SetVariables({{names[k], Make(refs[k].p, c.dtype)}});
  }

  const double rtol = c.dtype == DType::kF64 ? 1e-12 : 2e-5;
  const double atol = c.dtype == DType::kF64 ? 1e-15 : 1e-7;
  const Optimizer& opt = c.optimizer;
  for (int step = 0; step < c.steps; ++step) {
    const std::vector<double> x_values = Input(step);
    session.Call(job, {Make(x_values, c.dtype)});

    std::vector<double> grad(kElements);
    // The input as the job saw it (rounded to f32), times the loss multiplier.
    const std::vector<double> x_seen = Values(Make(x_values, c.dtype));
    for (int i = 0; i < kElements; ++i) grad[i] = x_seen[i] * c.loss_multiplier;
    if (opt.clip_norm) {
      double square_sum = 0;
      for (double g : grad) square_sum += g * g;
      const double global_norm = std::sqrt(square_sum * static_cast<double>(names.size()));
      const double factor = *opt.clip_norm / std::max(global_norm, *opt.clip_norm);
      for (double& g : grad) g *= factor;
    }
    // The learning rate is an f32 value in the job.
    const double lr = static_cast<float>(c.lr(step));
    for (std::size_t k = 0; k < names.size(); ++k) {
      ReferenceStep(opt, c.regularizer, lr, step, grad, refs[k]);
      const std::string& var = names[k];
      INFO("step " << step);
      CheckClose(var, Values(session.GetVariable(var)), refs[k].p, rtol, atol);
      if (opt.kind == Optimizer::Kind::kAdam || opt.kind == Optimizer::Kind::kAdamW ||
          opt.kind == Optimizer::Kind::kLamb) {
        CheckClose(var + "-m", Values(session.GetVariable(var + "-m")), refs[k].m, rtol, atol);
        CheckClose(var + "-v", Values(session.GetVariable(var + "-v")), refs[k].v, rtol, atol);
      }
      if (opt.kind == Optimizer::Kind::kLars) {
        CheckClose(var + "-momentum", Values(session.GetVariable(var + "-momentum")), refs[k].m, rtol, atol);
      }
      if (opt.kind == Optimizer::Kind::kRmsProp) {
        CheckClose(var + "-mean_square", Values(session.GetVariable(var + "-mean_square")), refs[k].mean_square, rtol,
                   atol);
        if (opt.centered) {
          CheckClose(var + "-mean_gradient", Values(session.GetVariable(var + "-mean_gradient")),
                     refs[k].mean_gradient, rtol, atol);
        } else {
          CHECK_THROWS_AS(session.GetVariable(var + "-mean_gradient"), std::invalid_argument);
        }
      }
    }
  }
  CHECK(session.GetVariable(std::string("System-Train-TrainStep-") + name).ToVector<std::int64_t>() ==
        std::vector<std::int64_t>{c.steps});
}

LrSchedule Constant(double lr) { return PiecewiseConstantScheduler({}, {lr}); }
std::function<double(std::int64_t)> ConstantLr(double lr) {
  return [lr](std::int64_t) { return lr; };
}

}  // namespace

TEST_CASE("Adam without bias correction (OneFlow's default): p -= lr m / (sqrt(v) + eps)") {
  RunCase("adam", {.optimizer = Adam(Constant(0.0625)), .lr = ConstantLr(0.0625)});
  // A large epsilon tells sqrt(v) + eps from sqrt(v + eps).
  RunCase("adam_eps", {.optimizer = Adam(Constant(0.0625), 0.8, 0.9, 1e-2), .lr = ConstantLr(0.0625)});
  RunCase("adam_f64", {.optimizer = Adam(Constant(0.0625)), .dtype = DType::kF64, .lr = ConstantLr(0.0625)});
  // The slots exist once the job is compiled, zero-initialised, and only for trainable variables.
  JobBuilder builder("adam_slots", JobType::kTrain);
  Blob x = builder.Placeholder("x", Shape{2, 5});
  Blob frozen = builder.Variable("frozen", {.shape = Shape{2, 5}, .trainable = false});
  Blob var = builder.Variable("var", {.shape = Shape{2, 5}});
  builder.Minimize(Adam(Constant(0.1)), ReduceSum(Mul(Add(var, frozen), x)));
  const Job job = builder.Build();
  Session session;
  session.Compile(job);
  CHECK(session.GetVariable("var-m").ToVector<float>() == std::vector<float>(kElements, 0.f));
  CHECK(session.GetVariable("var-v").ToVector<float>() == std::vector<float>(kElements, 0.f));
  CHECK_THROWS_AS(session.GetVariable("frozen-m"), std::invalid_argument);
}

TEST_CASE("Adam with bias correction scales lr by sqrt(1 - beta2^t) / (1 - beta1^t), t = step + 1") {
  const Optimizer adam = Adam(PiecewiseConstantScheduler({2}, {0.0625, 0.03125}), 0.9, 0.999, 1e-8,
                              /*do_bias_correction=*/true);
  // A step equal to a boundary belongs to the interval before it.
  const auto lr = [](std::int64_t step) { return step <= 2 ? 0.0625 : 0.03125; };
  RunCase("adam_bc", {.optimizer = adam, .steps = 6, .lr = lr});
  RunCase("adam_bc_f64", {.optimizer = adam, .dtype = DType::kF64, .steps = 6, .lr = lr});
}

TEST_CASE("AdamW adds decoupled weight decay: p -= lr_t (m / (sqrt(v) + eps) + weight_decay p)") {
  for (const bool bias_correction : {false, true}) {
    const Optimizer adamw = AdamW(Constant(0.0625), 0.5, 0.9, 0.999, 1e-8, bias_correction);
    const std::string suffix = bias_correction ? "_bc" : "";
    RunCase("adamw" + suffix, {.optimizer = adamw, .lr = ConstantLr(0.0625)});
    RunCase("adamw_f64" + suffix, {.optimizer = adamw, .dtype = DType::kF64, .lr = ConstantLr(0.0625)});
  }
}

TEST_CASE("weight decay applies to the variables its includes or excludes patterns pick, by name") {
  // A zero gradient leaves AdamW only its decay: p -= lr * weight_decay * p where the variable decays.
  const auto step = [](Optimizer optimizer) {
    JobBuilder builder("decay", JobType::kTrain);
    const Blob weight = builder.Variable("dense-weight", {.shape = Shape{2}, .initializer = ConstantInitializer(1.0)});
    const Blob bias = builder.Variable("dense-bias", {.shape = Shape{2}, .initializer = ConstantInitializer(1.0)});
    const Blob gamma = builder.Variable("LayerNorm/gamma", {.shape = Shape{2}, .initializer = ConstantInitializer(1.0)});
    builder.Minimize(optimizer, ScalarMul(ReduceSum(Add(Add(weight, bias), gamma)), 0.0));
    Session session;
    session.Call(builder.Build(), {});
    std::map<std::string, float> after;
    for (const char* name : {"dense-weight", "dense-bias", "LayerNorm/gamma"}) after[name] = session.GetVariable(name).ToVector<float>()[0];
    return after;
  };
  constexpr float kDecayed = 1.0f - 0.5f * 0.25f;
  Optimizer excludes = AdamW(Constant(0.5), 0.25);
  excludes.weight_decay_excludes = {"bias", "LayerNorm|layer_norm"};
  CHECK(step(excludes) == std::map<std::string, float>{{"dense-weight", kDecayed}, {"dense-bias", 1.f}, {"LayerNorm/gamma", 1.f}});
  Optimizer includes = AdamW(Constant(0.5), 0.25);
  includes.weight_decay_includes = {"-weight$", "gamma"};
  CHECK(step(includes) ==
        std::map<std::string, float>{{"dense-weight", kDecayed}, {"dense-bias", 1.f}, {"LayerNorm/gamma", kDecayed}});
  CHECK(step(AdamW(Constant(0.5), 0.25)) ==
        std::map<std::string, float>{{"dense-weight", kDecayed}, {"dense-bias", kDecayed}, {"LayerNorm/gamma", kDecayed}});
}

TEST_CASE("RMSProp, non-centered and centered, with epsilon inside the square root") {
  for (const bool centered : {false, true}) {
    const std::string suffix = centered ? "_centered" : "";
    RunCase("rmsprop" + suffix,
            {.optimizer = RmsProp(Constant(0.0625), 0.9, 1e-8, centered), .lr = ConstantLr(0.0625)});
    // A large epsilon tells sqrt(r + eps) from sqrt(r) + eps.
    RunCase("rmsprop_eps" + suffix,
            {.optimizer = RmsProp(Constant(0.0625), 0.9, 1e-2, centered), .lr = ConstantLr(0.0625)});
    RunCase("rmsprop_f64" + suffix, {.optimizer = RmsProp(Constant(0.0625), 0.99, 1e-8, centered),
                                     .dtype = DType::kF64, .lr = ConstantLr(0.0625)});
  }
}

TEST_CASE("LAMB: bias-corrected direction, trust ratio ||p|| / ||u||, decoupled weight decay") {
  RunCase("lamb", {.optimizer = Lamb(Constant(0.0625)), .lr = ConstantLr(0.0625)});
  RunCase("lamb_wd", {.optimizer = Lamb(Constant(0.0625), 0.9, 0.999, 1e-6, 0.25), .lr = ConstantLr(0.0625)});
  RunCase("lamb_f64", {.optimizer = Lamb(Constant(0.0625), 0.8, 0.99, 1e-6, 0.25), .dtype = DType::kF64,
                       .lr = ConstantLr(0.0625)});
  // ||p|| = 0 on the first step: the trust ratio is 1 there.
  RunCase("lamb_zero", {.optimizer = Lamb(Constant(0.0625), 0.9, 0.999, 1e-6, 0.25), .lr = ConstantLr(0.0625),
                        .zero_init = true});
}

TEST_CASE("regularizers add l1 sign(p) + l2 p to the gradient of every optimizer") {
  const Regularizer reg = L1L2(0.03, 0.2);
  RunCase("reg_adam", {.optimizer = Adam(Constant(0.0625)), .regularizer = reg, .lr = ConstantLr(0.0625)});
  RunCase("reg_adamw", {.optimizer = AdamW(Constant(0.0625), 0.1, 0.9, 0.999, 1e-8, true), .regularizer = reg,
                        .lr = ConstantLr(0.0625)});
  RunCase("reg_rmsprop", {.optimizer = RmsProp(Constant(0.0625), 0.9, 1e-8, true), .regularizer = reg,
                          .lr = ConstantLr(0.0625)});
  RunCase("reg_lamb", {.optimizer = Lamb(Constant(0.0625), 0.9, 0.999, 1e-6, 0.1), .regularizer = reg,
                       .lr = ConstantLr(0.0625)});
  RunCase("reg_lamb_f64", {.optimizer = Lamb(Constant(0.0625), 0.9, 0.999, 1e-6, 0.1), .regularizer = L1(0.5),
                           .dtype = DType::kF64, .lr = ConstantLr(0.0625)});
}

TEST_CASE("clipping by global norm scales every gradient by clip_norm / max(global_norm, clip_norm)") {
  // ||x|| is about 0.9 to 1.0 per variable, so 1.3 per pair of variables: 0.5 clips, 10 does not.
  for (const double clip_norm : {0.5, 10.0}) {
    const std::string suffix = clip_norm < 1 ? "_clipped" : "_unclipped";
    RunCase("clip_sgd" + suffix, {.optimizer = ClipByGlobalNorm(Sgd(Constant(0.25), 0.0), clip_norm),
                                  .lr = ConstantLr(0.25), .two_variables = true});
    RunCase("clip_adam" + suffix, {.optimizer = ClipByGlobalNorm(Adam(Constant(0.0625), 0.9, 0.999, 1e-2), clip_norm),
                                   .regularizer = L2(0.5), .lr = ConstantLr(0.0625), .two_variables = true});
    RunCase("clip_rmsprop_f64" + suffix,
            {.optimizer = ClipByGlobalNorm(RmsProp(Constant(0.0625), 0.9, 1e-2, true), clip_norm),
             .dtype = DType::kF64, .lr = ConstantLr(0.0625), .two_variables = true});
    RunCase("clip_lamb" + suffix, {.optimizer = ClipByGlobalNorm(Lamb(Constant(0.0625), 0.9, 0.999, 0.1), clip_norm),
                                   .lr = ConstantLr(0.0625)});
  }
  // The norm is that of the loss's gradients (three times x here), whatever their source.
  RunCase("clip_scaled", {.optimizer = ClipByGlobalNorm(Sgd(Constant(0.25), 0.0), 2.0), .lr = ConstantLr(0.25),
                          .loss_multiplier = 3.0});
  RunCase("clip_scaled_off", {.optimizer = ClipByGlobalNorm(Sgd(Constant(0.25), 0.0), 4.0), .lr = ConstantLr(0.25),
                              .loss_multiplier = 3.0});
}

TEST_CASE("clipping sees the gradients divided by the loss elements (loss = var + x)") {
  // Every gradient element is 1/10: the global norm is sqrt(10)/10 ~ 0.316.
  for (const double clip_norm : {0.1, 1.0}) {
    JobBuilder builder("clip_mean", JobType::kTrain);
    Blob x = builder.Placeholder("x", Shape{2, 5});
    Blob var = builder.Variable("var", {.shape = Shape{2, 5}});
    builder.Variable("unused", {.shape = Shape{3}});  // no gradient: left out of the norm
    builder.Minimize(ClipByGlobalNorm(Sgd(Constant(0.5), 0.0), clip_norm), Add(var, x));
    const Job job = builder.Build();
    Session session;
    double p = 0;
    for (int step = 0; step < 3; ++step) {
      session.Call(job, {Make(std::vector<double>(kElements, 1.0), DType::kF32)});
      const double norm = std::sqrt(10.0) / 10;
      p -= 0.5 * 0.1 * clip_norm / std::max(norm, clip_norm);
    }
    for (double value : Values(session.GetVariable("var"))) CHECK(value == doctest::Approx(p).epsilon(1e-6));
  }
}

TEST_CASE("bad hyperparameters are rejected at Minimize, naming the optimizer and the parameter") {
  const auto rejects = [](const Optimizer& optimizer, const std::string& message) {
    JobBuilder builder("bad", JobType::kTrain);
    Blob var = builder.Variable("v", {.shape = Shape{1}});
    CHECK_THROWS_WITH_AS(builder.Minimize(optimizer, var), message.c_str(), std::invalid_argument);
  };
  rejects(Adam(Constant(0.1), 1.0), "[optimizer adam] 'beta1' must be in [0, 1), got 1");
  rejects(Adam(Constant(0.1), 0.9, -0.5), "[optimizer adam] 'beta2' must be in [0, 1), got -0.5");
  rejects(Adam(Constant(0.1), 0.9, 0.999, -1.0), "[optimizer adam] 'epsilon' must be non-negative, got -1");
  rejects(AdamW(Constant(0.1), -0.01), "[optimizer adamw] 'weight_decay' must be non-negative, got -0.01");
  rejects(RmsProp(Constant(0.1), 1.0), "[optimizer rmsprop] 'decay_rate' must be in [0, 1), got 1");
  rejects(RmsProp(Constant(0.1), 0.9, -1e-8), "[optimizer rmsprop] 'epsilon' must be non-negative, got -1e-08");
  rejects(Lamb(Constant(0.1), 0.9, 0.999, 1e-6, -1.0), "[optimizer lamb] 'weight_decay' must be non-negative, got -1");
  rejects(Lamb(Constant(0.1), 0.9, 1.5), "[optimizer lamb] 'beta2' must be in [0, 1), got 1.5");
  rejects(ClipByGlobalNorm(Adam(Constant(0.1)), 0.0), "[optimizer adam] 'clip_norm' must be positive, got 0");
  Optimizer lazy_sgd = Sgd(Constant(0.1));
  lazy_sgd.lazy = true;
  rejects(lazy_sgd, "[optimizer sgd] 'lazy' is LazyAdam's: Adam with bias correction");
  Optimizer both = AdamW(Constant(0.1), 0.01);
  both.weight_decay_includes = {"a"};
  both.weight_decay_excludes = {"b"};
  rejects(both, "[optimizer adamw] give 'weight_decay_includes' or 'weight_decay_excludes', not both");
  Optimizer unbalanced = AdamW(Constant(0.1), 0.01);
  unbalanced.weight_decay_excludes = {"bias("};
  const auto not_a_pattern = [&unbalanced] {
    JobBuilder builder("bad", JobType::kTrain);
    builder.Minimize(unbalanced, builder.Variable("v", {.shape = Shape{1}}));
  };
  CHECK_THROWS_WITH_AS(not_a_pattern(),
                       doctest::Contains("[optimizer adamw] 'weight_decay_excludes' pattern 'bias(' is not a regular expression"),
                       std::invalid_argument);
  rejects(ClipByGlobalNorm(Sgd(Constant(0.1)), -1.0), "[optimizer sgd] 'clip_norm' must be positive, got -1");
  rejects(Adam(Constant(0.1), std::nan("")), "[optimizer adam] 'beta1' must be in [0, 1), got nan");
  rejects(RmsProp(Constant(0.1), 0.9, std::nan("")), "[optimizer rmsprop] 'epsilon' must be non-negative, got nan");
  // epsilon 0 is the user's choice, as in OneFlow and Keras.
  JobBuilder builder("epsilon_zero", JobType::kTrain);
  CHECK_NOTHROW(builder.Minimize(RmsProp(Constant(0.1), 0.9, 0.0), builder.Variable("v", {.shape = Shape{1}})));
}

TEST_CASE("LARS: the variable's rate lr * coefficient * |p| / (eps + |g|), then momentum (OneFlow's lars_update)") {
  RunCase("lars", {.optimizer = Lars(Constant(0.5), 0.9, 1e-9, 0.1), .lr = ConstantLr(0.5)});
  // A large epsilon and regularizers (in g and so in its norm), two variables (each its own rate).
  RunCase("lars_regularized", {.optimizer = Lars(Constant(0.5), 0.8, 0.5, 0.2), .regularizer = {0.01, 0.02},
                               .lr = ConstantLr(0.5), .two_variables = true});
  RunCase("lars_f64", {.optimizer = Lars(Constant(0.5), 0.9, 1e-9, 0.1), .dtype = DType::kF64, .lr = ConstantLr(0.5)});
  // A zero variable has no rate: it stays zero, as in OneFlow.
  RunCase("lars_zero", {.optimizer = Lars(Constant(0.5)), .lr = ConstantLr(0.5), .zero_init = true});
  JobBuilder builder("bad", JobType::kTrain);
  const Blob loss = ReduceSum(builder.Variable("var", {.shape = Shape{2}}));
  CHECK_THROWS_WITH_AS(builder.Minimize(Lars(Constant(0.1), 0.9, 1e-9, -1.0), loss),
                       doctest::Contains("[optimizer lars] 'lars_coefficient'"), std::invalid_argument);
}

TEST_CASE("a combined optimizer trains each variable with its part: its own kind, learning rate and clipping") {
  JobBuilder builder("combined", JobType::kTrain);
  Blob x = builder.Placeholder("x", Shape{2, 5});
  const std::vector<std::string> names = {"var", "w", "frozen"};
  Blob loss;
  for (const std::string& name : names) {
    const Blob term = ReduceSum(Mul(builder.Variable(name, {.shape = Shape{2, 5}}), x));
    loss = loss.Defined() ? Add(loss, term) : term;
  }
  Optimizer adam = ClipByGlobalNorm(Adam(Constant(0.0625), 0.9, 0.999, 1e-2), 0.5);  // clips (||x|| ~ 0.95)
  adam.variables = {"var"};
  Optimizer rmsprop = RmsProp(Constant(0.125), 0.9, 1e-2);
  rmsprop.variables = {"w"};
  Optimizer combined = Combined({adam, rmsprop});
  combined.loss_scale_factor = 4;  // the combined one's: the seed is 4, the gradients divided by it again
  builder.Minimize(combined, loss);
  const Job job = builder.Build();

  Session session;
  session.Compile(job);
  std::vector<Reference> refs(names.size());
  for (std::size_t k = 0; k < names.size(); ++k) {
    refs[k].p = Initial(0.05 * static_cast<double>(k));
    session.SetVariables({{names[k], Make(refs[k].p, DType::kF32)}});
  }
  for (int step = 0; step < 4; ++step) {
    session.Call(job, {Make(Input(step), DType::kF32)});
    const std::vector<double> grad = Values(Make(Input(step), DType::kF32));
    // var's norm is its own part's: w's gradient is not in it.
    double square_sum = 0;
    for (double g : grad) square_sum += g * g;
    std::vector<double> clipped = grad;
    for (double& g : clipped) g *= 0.5 / std::max(std::sqrt(square_sum), 0.5);
    ReferenceStep(adam, {}, static_cast<float>(0.0625), step, clipped, refs[0]);
    ReferenceStep(rmsprop, {}, static_cast<float>(0.125), step, grad, refs[1]);
    INFO("step " << step);
    for (std::size_t k = 0; k < names.size(); ++k) CheckClose(names[k], Values(session.GetVariable(names[k])), refs[k].p, 2e-5, 1e-7);
    CheckClose("var-m", Values(session.GetVariable("var-m")), refs[0].m, 2e-5, 1e-7);
    CheckClose("w-mean_square", Values(session.GetVariable("w-mean_square")), refs[1].mean_square, 2e-5, 1e-7);
  }
  CHECK_THROWS_AS(session.GetVariable("frozen-m"), std::invalid_argument);  // no part trains it
}

TEST_CASE("a combined optimizer's parts name disjoint variables and leave the loss scale to it") {
  const auto rejects = [](const Optimizer& optimizer, const std::string& message) {
    JobBuilder builder("bad_combined", JobType::kTrain);
    const Blob loss = Add(ReduceSum(builder.Variable("a", {.shape = Shape{2}})), ReduceSum(builder.Variable("b", {.shape = Shape{2}})));
    CHECK_THROWS_WITH_AS(builder.Minimize(optimizer, loss), doctest::Contains(message.c_str()), std::invalid_argument);
  };
  Optimizer sgd_a = Sgd(Constant(0.1));
  sgd_a.variables = {"a"};
  Optimizer adam_ab = Adam(Constant(0.1));
  adam_ab.variables = {"b", "a"};
  rejects(Combined({sgd_a, adam_ab}), "[optimizer combined] part 1 (adam) names variable 'a' that another part names too");
  rejects(Combined({sgd_a, Adam(Constant(0.1))}), "[optimizer combined] part 1 (adam) names no variables");
  rejects(Combined({sgd_a, Combined({adam_ab})}), "[optimizer combined] part 1 (combined) is itself combined");
  Optimizer scaled = adam_ab;
  scaled.variables = {"b"};
  scaled.loss_scale_factor = 8;
  rejects(Combined({sgd_a, scaled}), "[optimizer combined] part 1 (adam) has a loss scale of its own");
  Optimizer bad_beta = Adam(Constant(0.1), 1.5);
  bad_beta.variables = {"b"};
  rejects(Combined({sgd_a, bad_beta}), "[optimizer adam] 'beta1' must be in [0, 1), got 1.5");
  Optimizer unknown = Sgd(Constant(0.1));
  unknown.variables = {"c"};
  const auto lowers = [&] {
    JobBuilder builder("unknown_part_variable", JobType::kTrain);
    const Blob loss = ReduceSum(builder.Variable("a", {.shape = Shape{2}}));
    builder.Minimize(Combined({sgd_a, unknown}), loss);
    Session().Compile(builder.Build());
  };
  CHECK_THROWS_WITH_AS(lowers(), doctest::Contains("[optimizer sgd] variables: 'c' is not a trainable floating variable"),
                       std::invalid_argument);
  Optimizer zero_scale = Combined({sgd_a});
  zero_scale.loss_scale_factor = 0;
  rejects(zero_scale, "[optimizer combined] 'loss_scale_factor' must be positive, got 0");
}
