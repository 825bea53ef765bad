// Mixed precision (graph/mixed_precision_pass.hpp): what the pass rewrites, that the bf16 product
// kernels match f32 within bf16's precision, and that training under it follows f32 training.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "graph/job_graph.hpp"
#include "graph/planner.hpp"
#include "op_test_util.hpp"
#include "weir/weir.hpp"

using namespace weir;

namespace {

Tensor Random(Shape shape, unsigned seed, float scale = 1.f) {
  Tensor t(std::move(shape), DType::kF32);
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> uniform(-scale, scale);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) t.Data<float>()[i] = uniform(random);
  return t;
}

JobConfig Mixed(bool on) {
  JobConfig config;
  if (on) config.mixed_precision = JobConfig::MixedPrecision{.dtype = DType::kBF16, .device = Device::Kind::kCpu};
  return config;
}

// Whether this CPU runs bf16 products (oneDNN needs AVX512 for them at all).
bool CpuRunsBFloat16() { return MixedPrecisionDType(Device::Kind::kCpu).has_value(); }

// Live nodes (the passes leave the replaced ones unread: mixed precision's f32 ops, the layout pass's
// NCHW ones) of `type` whose output has `dtype`.
int CountOps(const Job& job, const std::string& type, DType dtype) {
  const internal::JobGraph& graph = *job.Graph();
  int count = 0;
  for (const internal::OpNode& node : graph.nodes) {
    if (node.type != type || node.name.ends_with("/f32_op") || node.name.ends_with("/nchw")) continue;
    if (graph.values[static_cast<std::size_t>(node.outputs[0])].meta.dtype == dtype) ++count;
  }
  return count;
}

// A small CNN and MLP head: conv-bias-relu-pool, flatten, two dense layers, the second weight also
// read by a second matmul (so its bf16 copy has two readers).
struct Net {
  Blob images, logits, hidden;
};

Net Build(JobBuilder& builder) {
  Net net;
  net.images = builder.Placeholder("images", Shape{8, 3, 8, 8});
  const Initializer init = TruncatedNormalInitializer(0.0, 0.2);
  Conv2DOptions conv{.kernel_size = {3, 3}, .padding = SamePadding(), .activation = Activation::kRelu,
                     .kernel_initializer = init};
  conv.name = "conv1";
  const Blob pool = MaxPool2D(Conv2DLayer(net.images, 4, conv), {.ksize = {2, 2}, .strides = {2, 2}}, "pool1");
  net.hidden = Dense(Reshape(pool, {{8, -1}}), 16, {.activation = Activation::kRelu, .kernel_initializer = init, .name = "dense1"});
  const Blob w = builder.Variable("w2", {.shape = Shape{16, 5}, .initializer = init});
  net.logits = Add(MatMul(net.hidden, w), MatMul(Relu(net.hidden), w));
  return net;
}

double WorstRelative(const Tensor& got, const Tensor& want) {
  REQUIRE(got.GetShape() == want.GetShape());
  double scale = 1e-6, worst = 0;
  for (std::int64_t i = 0; i < want.NumElements(); ++i) scale = std::max(scale, std::fabs(double{want.Data<float>()[i]}));
  for (std::int64_t i = 0; i < want.NumElements(); ++i) {
    worst = std::max(worst, std::fabs(double{got.Data<float>()[i]} - double{want.Data<float>()[i]}) / scale);
  }
  return worst;
}

}  // namespace

TEST_CASE("mixed precision runs products in bf16, casts each value once and keeps outputs f32") {
  JobBuilder builder("mixed", JobType::kPredict, Mixed(true));
  const Net net = Build(builder);
  builder.Output("logits", net.logits);
  builder.Output("hidden", net.hidden);
  const Job job = builder.Build();
  CHECK(job.MixedPrecisionOps() >= 4);
  CHECK(CountOps(job, "conv2d", DType::kBF16) == 1);
  CHECK(CountOps(job, "matmul", DType::kBF16) == 3);
  CHECK(CountOps(job, "matmul", DType::kF32) == 0);
  const internal::JobGraph& graph = *job.Graph();
  // w2 is read by two bf16 products through one cast; each product's result is cast back once.
  int w2_casts = 0;
  for (const internal::OpNode& node : graph.nodes) {
    if (node.type != "cast" || node.inputs.empty()) continue;
    const internal::OpNode& producer = graph.nodes[static_cast<std::size_t>(graph.values[static_cast<std::size_t>(node.inputs[0])].producer)];
    if (producer.type == "variable" && std::any_cast<const internal::VariableAttrs&>(producer.attrs).name == "w2") ++w2_casts;
  }
  CHECK(w2_casts == 1);
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    for (int input : graph.nodes[n].inputs) CHECK(graph.values[static_cast<std::size_t>(input)].producer < static_cast<int>(n));
  }
  for (const auto& [name, value] : graph.outputs) CHECK(graph.values[static_cast<std::size_t>(value)].meta.dtype == DType::kF32);

  JobBuilder off("f32", JobType::kPredict, Mixed(false));
  off.Output("logits", Build(off).logits);
  const Job unchanged = off.Build();
  CHECK(unchanged.MixedPrecisionOps() == 0);
  CHECK(CountOps(unchanged, "matmul", DType::kBF16) == 0);
  CHECK(CountOps(unchanged, "cast", DType::kBF16) == 0);
}

TEST_CASE("on the CPU the planner fuses each bf16 product with its cast back to f32 and what follows") {
  JobBuilder builder("fused", JobType::kTrain, Mixed(true));
  const Net net = Build(builder);
  const Blob labels = builder.Placeholder("labels", Shape{8}, DType::kI32);
  builder.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.0), ReduceMean(SparseSoftmaxCrossEntropy(labels, net.logits)));
  const Job job = builder.Build();
  const auto plan = internal::CompilePlan(job.Graph(), {});
  std::map<std::string, int> bf16_kernels;
  int casts_to_f32 = 0;
  for (const internal::TaskDesc& task : plan->tasks) {
    if (task.kind != internal::TaskKind::kKernel || task.input_metas.empty()) continue;
    const bool from_bf16 = task.input_metas[0].dtype == DType::kBF16;
    if (task.op_type == "cast" && from_bf16) ++casts_to_f32;
    if (from_bf16 && task.op_type != "cast") ++bf16_kernels[task.op_type];
  }
  // conv1 + bias + relu and dense1 + bias + relu in one kernel each; the weight gradient of dense1's
  // plain-SGD update in the update; every other product writes f32 itself. w2's two products sum
  // their bf16 gradients (an add) before the one cast back.
  CHECK(bf16_kernels["conv2d_bias_act"] == 1);
  CHECK(bf16_kernels["matmul_bias_act"] == 1);
  CHECK(bf16_kernels["matmul_sgd_update"] >= 1);
  CHECK(bf16_kernels["conv2d_grad_filter"] == 1);
  CHECK(bf16_kernels.count("bias_add") == 0);
  CHECK(casts_to_f32 <= 2);
}

TEST_CASE("in a predict job a bf16 convolution or matmul takes its bias and relu in and writes bf16") {
  if (!CpuRunsBFloat16()) {
    MESSAGE("skipped: this CPU has no native bf16 (AVX512_BF16 or AMX)");
    return;
  }
  Session session;
  Tensor logits[2];
  for (int on = 0; on < 2; ++on) {
    JobBuilder builder(on == 1 ? "bf16_predict" : "f32_predict", JobType::kPredict, Mixed(on == 1));
    const Net net = Build(builder);
    builder.Output("logits", net.logits);
    const Job job = builder.Build();
    if (on == 1) {
      // The biases follow the bf16 chain (an f32 bias added to bf16 values)...
      CHECK(CountOps(job, "bias_add", DType::kBF16) == 2);
      const auto plan = internal::CompilePlan(job.Graph(), {});
      std::map<std::string, int> fused;
      int casts = 0;
      for (const internal::TaskDesc& task : plan->tasks) {
        if (task.kind != internal::TaskKind::kKernel) continue;
        if (task.op_type == "cast") ++casts;
        if (task.op_type != "conv2d_bias_act" && task.op_type != "matmul_bias_act") continue;
        // ... into the product's kernel: bf16 operands, the f32 bias, a bf16 result.
        CHECK(task.input_metas[0].dtype == DType::kBF16);
        CHECK(task.input_metas[2].dtype == DType::kF32);
        CHECK(task.output_metas[0].dtype == DType::kBF16);
        ++fused[task.op_type];
      }
      CHECK(fused["conv2d_bias_act"] == 1);
      CHECK(fused["matmul_bias_act"] == 1);
      // In: the images and three weights; out: the logits. The pooled and hidden values stay bf16
      // (max pooling follows the chain).
      CHECK(casts == 5);
    }
    logits[on] = session.Call(job, {Random(Shape{8, 3, 8, 8}, 41)})[0];
  }
  CHECK(WorstRelative(logits[1], logits[0]) < 0.03);
}

TEST_CASE("mixed precision leaves ops without 16-bit kernels and values whose gradient is watched in f32") {
  // The CPU has no f16 product kernels: an f16 job on it keeps f32 and says it converted nothing.
  JobConfig f16 = Mixed(true);
  f16.mixed_precision->dtype = DType::kF16;
  JobBuilder half("half", JobType::kPredict, f16);
  half.Output("logits", Build(half).logits);
  const Job unconverted = half.Build();
  CHECK(unconverted.MixedPrecisionOps() == 0);
  CHECK(CountOps(unconverted, "matmul", DType::kF32) == 3);

  JobBuilder watched("watched", JobType::kTrain, Mixed(true));
  const Blob x = watched.Placeholder("x", Shape{4, 3});
  const Blob w = watched.Variable("w", {.shape = Shape{3, 2}, .initializer = ConstantInitializer(0.5)});
  const Blob product = MatMul(x, w);
  WatchDiff(product, [](const Tensor&) {});
  watched.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.1})), ReduceMean(MatMul(product, w, {.transpose_b = true})));
  const Job job = watched.Build();
  CHECK(CountOps(job, "matmul", DType::kF32) >= 1);  // the product whose gradient is watched
  CHECK(CountOps(job, "matmul", DType::kBF16) >= 1);  // the other one

  JobConfig bad = Mixed(true);
  bad.mixed_precision->dtype = DType::kF64;
  JobBuilder wrong("wrong", JobType::kPredict, bad);
  wrong.Output("logits", Build(wrong).logits);
  CHECK_THROWS_WITH_AS(wrong.Build(), "[build] job 'wrong': JobConfig::mixed_precision.dtype: expected bf16 or f16, got f64",
                       std::invalid_argument);
}

TEST_CASE("bf16 products match f32 on bf16-rounded inputs within bf16's precision") {
  if (!CpuRunsBFloat16()) {
    MESSAGE("skipped: this CPU has no native bf16 (AVX512_BF16 or AMX)");
    return;
  }
  // The same products in f32 on inputs rounded to bf16: the bf16 kernels accumulate in f32 and round
  // the result once, so they differ by at most a few bf16 ulps (2^-8 relative) of the largest output.
  const Tensor a = Random(Shape{37, 300}, 1), b = Random(Shape{300, 29}, 2);
  const Tensor x = Random(Shape{5, 7, 9, 6}, 3), w = Random(Shape{4, 3, 3, 6}, 4);  // NHWC data, OHWI filters
  const Tensor p = Random(Shape{3, 2, 40, 9}, 5), q = Random(Shape{3, 2, 11, 40}, 6);  // batched, both transposed
  Tensor results[2][3];
  for (int low = 0; low < 2; ++low) {
    JobBuilder builder(low ? "bf16" : "f32", JobType::kPredict);
    const DType dtype = low ? DType::kBF16 : DType::kF32;
    const auto in = [&](const char* name, const Tensor& t) {
      // Both jobs see the bf16-rounded inputs; only the product's dtype differs.
      const Blob rounded = Cast(builder.Placeholder(name, t.GetShape()), {.dtype = DType::kBF16});
      return Cast(rounded, {.dtype = dtype});
    };
    const Blob a_in = in("a", a), b_in = in("b", b), x_in = in("x", x), w_in = in("w", w);  // in call order
    const Blob p_in = in("p", p), q_in = in("q", q);
    const Blob product = MatMul(a_in, b_in);
    const Blob conv = Conv2D(x_in, w_in, {.padding = SamePadding(), .data_format = DataFormat::kNHWC});
    builder.Output("product", Cast(product, {.dtype = DType::kF32}));
    builder.Output("conv", Cast(conv, {.dtype = DType::kF32}));
    builder.Output("batched", Cast(BatchMatMul(p_in, q_in, {.transpose_a = true, .transpose_b = true, .alpha = 0.5}),
                                   {.dtype = DType::kF32}));
    Session session;
    const Outputs out = session.Call(builder.Build(), {a, b, x, w, p, q});
    for (int i = 0; i < 3; ++i) results[low][i] = out[i].Clone();
  }
  CHECK(WorstRelative(results[1][0], results[0][0]) < 1.0 / 128);
  CHECK(WorstRelative(results[1][1], results[0][1]) < 1.0 / 128);
  CHECK(WorstRelative(results[1][2], results[0][2]) < 1.0 / 128);
  CHECK(results[1][2].GetShape() == Shape{3, 2, 9, 11});
}

TEST_CASE("training under mixed precision follows f32 training: losses, gradients and weights") {
  if (!CpuRunsBFloat16()) {
    MESSAGE("skipped: this CPU has no native bf16 (AVX512_BF16 or AMX)");
    return;
  }
  const Tensor images = Random(Shape{8, 3, 8, 8}, 5);
  const Tensor labels = Tensor::FromVector<std::int32_t>({8}, {0, 3, 1, 4, 2, 2, 0, 1});
  std::vector<double> losses[2];
  std::map<std::string, Tensor> variables[2];
  Tensor hidden_grad[2];  // the first step's gradient of an f32 value between bf16 products
  for (int on = 0; on < 2; ++on) {
    JobBuilder builder("train", JobType::kTrain, Mixed(on == 1));
    const Net net = Build(builder);
    const Blob label_blob = builder.Placeholder("labels", Shape{8}, DType::kI32);
    const Blob loss = ReduceMean(SparseSoftmaxCrossEntropy(label_blob, net.logits));
    WatchDiff(net.hidden, [&hidden_grad, on](const Tensor& t) {
      if (!hidden_grad[on].Defined()) hidden_grad[on] = t.Clone();
    });
    builder.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.9), loss);
    builder.Output("loss", loss);
    const Job job = builder.Build();
    if (on == 1) CHECK(job.MixedPrecisionOps() >= 4);
    SessionOptions options;
    options.seed = 11;
    Session session(options);
    for (int step = 0; step < 20; ++step) {
      losses[on].push_back(session.Call(job, {images, labels})[0].Data<float>()[0]);
      if (step == 0) variables[on] = session.GetVariables();  // one update from the same weights
    }
  }
  // Over 20 steps the two trajectories drift apart (bf16 rounds each product), but the losses stay
  // within a few percent and both learn; one step from the same weights agrees to bf16's precision.
  CHECK(losses[1].back() < 0.5 * losses[1].front());
  for (std::size_t step = 0; step < losses[0].size(); ++step) {
    CAPTURE(step);
    CHECK(std::fabs(losses[1][step] - losses[0][step]) <= 0.03 * std::fabs(losses[0][step]) + 0.01);
  }
  CHECK(WorstRelative(hidden_grad[1], hidden_grad[0]) < 0.02);
  for (const auto& [name, value] : variables[0]) {
    if (value.GetDType() != DType::kF32) continue;
    CAPTURE(name);
    CHECK(variables[1].at(name).GetDType() == DType::kF32);  // master weights stay f32
    CHECK(WorstRelative(variables[1].at(name), value) < 0.02);
  }
}

TEST_CASE("a batch_matmul trains under mixed precision as in f32") {
  if (!CpuRunsBFloat16()) {
    MESSAGE("skipped: this CPU has no native bf16 (AVX512_BF16 or AMX)");
    return;
  }
  const Tensor x = Random(Shape{2, 4, 5}, 7), target = Random(Shape{2, 4, 3}, 8);
  Tensor updated[2];  // the change of v in one step
  for (int on = 0; on < 2; ++on) {
    JobBuilder builder("batched", JobType::kTrain, Mixed(on == 1));
    const Blob in = builder.Placeholder("x", x.GetShape());
    const Blob want = builder.Placeholder("target", target.GetShape());
    const Blob v = builder.Variable("v", {.shape = Shape{2, 5, 3}, .initializer = TruncatedNormalInitializer(0.0, 0.5)});
    const Blob error = Sub(BatchMatMul(in, v), want);
    builder.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.5}), 0.0), ReduceMean(Mul(error, error)));
    const Job job = builder.Build();
    if (on == 1) CHECK(job.MixedPrecisionOps() == 1);
    SessionOptions options;
    options.seed = 3;
    Session session(options);
    session.Call(job, {x, target});  // creates v; the step below is the one compared
    const Tensor before = session.GetVariables().at("v").Clone();
    session.Call(job, {x, target});
    const Tensor after = session.GetVariables().at("v");
    updated[on] = Tensor(before.GetShape(), DType::kF32);
    for (std::int64_t i = 0; i < before.NumElements(); ++i) {
      updated[on].Data<float>()[i] = after.Data<float>()[i] - before.Data<float>()[i];
    }
  }
  // The steps (the gradients times the learning rate) agree to bf16's precision.
  CHECK(WorstRelative(updated[1], updated[0]) < 0.02);
}

namespace {

// ResNet's pattern on 16 channels (enough for oneDNN's channel blocks): a stem conv - batch norm -
// relu, then a residual block (conv - batch norm - relu - conv - batch norm, added to the stem's
// output, relu), global average pooling and a dense head.
Blob ResidualNet(const Blob& images) {
  const Initializer init = TruncatedNormalInitializer(0.0, 0.2);
  const auto conv = [&](const Blob& x, const std::string& name) {
    return Conv2DLayer(x, 16, {.kernel_size = {3, 3}, .padding = SamePadding(), .use_bias = false, .kernel_initializer = init, .name = name});
  };
  const auto norm = [](const Blob& x, const std::string& name) { return BatchNormalization(x, {.axis = 1, .momentum = 0.9, .name = name}); };
  const Blob stem = Relu(norm(conv(images, "stem"), "stem_bn"));
  const Blob inner = Relu(norm(conv(stem, "conv1"), "bn1"));
  const Blob block = Relu(Add(norm(conv(inner, "conv2"), "bn2"), stem));
  const Blob pooled = ReduceMean(block, {.axes = {2, 3}});
  return Dense(pooled, 5, {.kernel_initializer = init, .name = "head"});
}

}  // namespace

TEST_CASE("batch norm, relu and a residual add continue a bf16 chain; statistics and parameters stay f32") {
  if (!CpuRunsBFloat16()) {
    MESSAGE("skipped: this CPU has no native bf16 (AVX512_BF16 or AMX)");
    return;
  }
  const Tensor images = Random(Shape{4, 3, 6, 6}, 21);
  const Tensor labels = Tensor::FromVector<std::int32_t>({4}, {0, 3, 1, 4});
  std::vector<double> losses[2];
  std::map<std::string, Tensor> variables[2];
  for (int on = 0; on < 2; ++on) {
    JobBuilder builder("residual", JobType::kTrain, Mixed(on == 1));
    const Blob logits = ResidualNet(builder.Placeholder("images", images.GetShape()));
    const Blob loss = ReduceMean(SparseSoftmaxCrossEntropy(builder.Placeholder("labels", Shape{4}, DType::kI32), logits));
    builder.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.05}), 0.9), loss);
    builder.Output("loss", loss);
    const Job job = builder.Build();
    if (on == 1) {
      // Three convolutions and the head's matmul; three batch norms, three relus and the add follow.
      CHECK(CountOps(job, "conv2d", DType::kBF16) == 3);
      CHECK(CountOps(job, "batch_norm", DType::kBF16) == 3);
      CHECK(CountOps(job, "batch_norm", DType::kF32) == 0);
      CHECK(CountOps(job, "unary", DType::kBF16) == 3);
      CHECK(CountOps(job, "add", DType::kBF16) >= 1);
      const auto plan = internal::CompilePlan(job.Graph(), {});
      int bf16_norms = 0, bf16_norm_grads = 0, casts = 0;
      for (const internal::TaskDesc& task : plan->tasks) {
        if (task.kind != internal::TaskKind::kKernel || task.input_metas.empty()) continue;
        if (task.op_type == "cast") ++casts;
        if (task.op_type != "batch_norm" && task.op_type != "batch_norm_grad") continue;
        const std::size_t x = task.op_type == "batch_norm" ? 0 : 1;
        // bf16 data, f32 gamma and statistics.
        CHECK(task.input_metas[x].dtype == DType::kBF16);
        CHECK(task.input_metas[x + 1].dtype == DType::kF32);
        for (std::size_t i = 1; i < task.output_metas.size(); ++i) CHECK(task.output_metas[i].dtype == DType::kF32);
        ++(task.op_type == "batch_norm" ? bf16_norms : bf16_norm_grads);
      }
      CHECK(bf16_norms == 3);
      CHECK(bf16_norm_grads == 3);
      // In: the images and the three conv weights (the head's matmul reads the pooled f32 value, cast
      // once, and its weight); out: the block's pooled output and the weight gradients.
      CHECK(casts <= 12);
    }
    SessionOptions options;
    options.seed = 5;
    Session session(options);
    for (int step = 0; step < 12; ++step) losses[on].push_back(session.Call(job, {images, labels})[0].Data<float>()[0]);
    variables[on] = session.GetVariables();
  }
  CHECK(losses[1].back() < 0.5 * losses[1].front());
  for (std::size_t step = 0; step < losses[0].size(); ++step) {
    CAPTURE(step);
    CHECK(std::fabs(losses[1][step] - losses[0][step]) <= 0.05 * std::fabs(losses[0][step]) + 0.02);
  }
  // The moving statistics, updated from f32 batch statistics of bf16 activations, and the f32 master
  // weights follow f32 training. (The momenta, sums of 16-bit gradients, drift further.)
  for (const auto& [name, value] : variables[0]) {
    if (value.GetDType() != DType::kF32 || name.ends_with("-momentum")) continue;  // and the train step
    CAPTURE(name);
    REQUIRE(variables[1].at(name).GetDType() == DType::kF32);
    CHECK(WorstRelative(variables[1].at(name), value) < 0.05);  // 0.03 for the betas, small sums of gradients
  }
}

TEST_CASE("a predict job under mixed precision runs a residual network as bf16 convolutions with bias, sum and relu") {
  if (!CpuRunsBFloat16()) {
    MESSAGE("skipped: this CPU has no native bf16 (AVX512_BF16 or AMX)");
    return;
  }
  const Tensor images = Random(Shape{4, 3, 6, 6}, 21);
  Session session;
  Tensor logits[2];
  for (int on = 0; on < 2; ++on) {
    JobBuilder builder(on == 1 ? "residual_bf16" : "residual_f32", JobType::kPredict, Mixed(on == 1));
    builder.Output("logits", ResidualNet(builder.Placeholder("images", images.GetShape())));
    const Job job = builder.Build();
    const auto plan = internal::CompilePlan(job.Graph(), {});
    std::map<std::string, int> kernels;
    for (const internal::TaskDesc& task : plan->tasks) {
      // What runs at every call: not the weights' folding, casts and transposes (kept across calls).
      if (task.kind != internal::TaskKind::kKernel || !task.constant_over.empty()) continue;
      ++kernels[task.op_type];
      if (task.op_type == "conv2d_bias_act") {
        // The normalizations folded into the convolutions (bias, relu), the block's sum its last
        // convolution's residual: bf16 in, bf16 out.
        CHECK(task.output_metas[0].dtype == (on == 1 ? DType::kBF16 : DType::kF32));
        if (task.input_metas.size() == 4) CHECK(task.input_metas[3] == task.output_metas[0]);
      }
    }
    CHECK(kernels["conv2d_bias_act"] == 3);
    CHECK(kernels.count("batch_norm") == 0);
    CHECK(kernels.count("add") == 0);
    CHECK(kernels.count("unary") == 0);
    if (on == 0) {
      session.Compile(job);
      // Statistics away from their initial values, so that the folding shows.
      for (const char* layer : {"stem_bn", "bn1", "bn2"}) {
        const std::string prefix = layer;
        Tensor variance = Random(Shape{16}, 50, 1.f);
        for (std::int64_t i = 0; i < 16; ++i) variance.Data<float>()[i] = 0.5f + std::fabs(variance.Data<float>()[i]);
        session.SetVariables({{prefix + "-moving_mean", Random(Shape{16}, 51, 0.5f)}, {prefix + "-moving_variance", variance},
                              {prefix + "-gamma", Random(Shape{16}, 52, 2.f)}, {prefix + "-beta", Random(Shape{16}, 53, 0.5f)}});
      }
    }
    logits[on] = session.Call(job, {images})[0];
  }
  CHECK(WorstRelative(logits[1], logits[0]) < 0.03);
}

TEST_CASE("bf16 activations, sums, bias adds and max pooling are the f32 kernels' results rounded once") {
  const std::int64_t count = 70001;  // split over the intra-op pool, with a tail shorter than a block
  const Tensor x = Random(Shape{count}, 31, 4.f), dy = Random(Shape{count}, 32);
  const auto to_bf16 = [](const Tensor& t) {
    Tensor out(t.GetShape(), DType::kBF16);
    for (std::int64_t i = 0; i < t.NumElements(); ++i) out.Data<bfloat16>()[i] = bfloat16(t.Data<float>()[i]);
    return out;
  };
  const auto to_f32 = [](const Tensor& t) {
    Tensor out(t.GetShape(), DType::kF32);
    for (std::int64_t i = 0; i < t.NumElements(); ++i) out.Data<float>()[i] = static_cast<float>(t.Data<bfloat16>()[i]);
    return out;
  };
  const Tensor x16 = to_bf16(x), dy16 = to_bf16(dy);
  for (const UnaryOpKind kind : {UnaryOpKind::kRelu, UnaryOpKind::kGelu, UnaryOpKind::kSigmoid, UnaryOpKind::kTanh, UnaryOpKind::kExp}) {
    CAPTURE(kUnaryOpKindNames[static_cast<int>(kind)]);
    const UnaryAttrs attrs{.kind = kind};
    const Tensor y32 = testing::RunOp("unary", attrs, {to_f32(x16)})[0];
    const Tensor y16 = testing::RunOp("unary", attrs, {x16})[0];
    const Tensor dx32 = testing::RunOp("unary_grad", attrs, {to_f32(dy16), to_f32(x16)})[0];
    const Tensor dx16 = testing::RunOp("unary_grad", attrs, {dy16, x16})[0];
    REQUIRE(y16.GetDType() == DType::kBF16);
    int wrong = 0;
    for (std::int64_t i = 0; i < count; ++i) {
      wrong += y16.Data<bfloat16>()[i].bits != bfloat16(y32.Data<float>()[i]).bits;
      wrong += dx16.Data<bfloat16>()[i].bits != bfloat16(dx32.Data<float>()[i]).bits;
    }
    CHECK(wrong == 0);
  }
  // An f32 or bf16 bias added to bf16 rows (features last) and to bf16 planes (channels first).
  for (const Shape& shape : {Shape{70, 1001}, Shape{3, 13, 769}}) {
    CAPTURE(shape);
    const Tensor planes = to_bf16(Random(shape, 33, 4.f)), bias = Random(Shape{shape[1]}, 34);
    for (const Tensor& b : {bias, to_bf16(bias)}) {
      const Tensor y = testing::RunOp("bias_add", BiasAddAttrs{.axis = 1}, {planes, b})[0];
      REQUIRE(y.GetDType() == DType::kBF16);
      const std::int64_t inner = shape.Rank() == 3 ? shape[2] : 1;
      int wrong = 0;
      for (std::int64_t i = 0; i < planes.NumElements(); ++i) {
        const float widened_bias = b.GetDType() == DType::kF32 ? b.Data<float>()[i / inner % shape[1]]
                                                                : static_cast<float>(b.Data<bfloat16>()[i / inner % shape[1]]);
        wrong += y.Data<bfloat16>()[i].bits != bfloat16(static_cast<float>(planes.Data<bfloat16>()[i]) + widened_bias).bits;
      }
      CHECK(wrong == 0);
    }
  }
  // Max pooling selects values: the f32 kernel's results exactly. Its gradient sums the dy of the
  // windows that overlap at a maximum, rounded once.
  {
    const Pool2DAttrs pool{.ksize = {3, 3}, .strides = {2, 2}, .padding = SamePadding(), .data_format = DataFormat::kNHWC};
    const Tensor images = to_bf16(Random(Shape{9, 11, 13, 16}, 35, 4.f)), grads = to_bf16(Random(Shape{9, 6, 7, 16}, 36));
    const Tensor y16 = testing::RunOp("max_pool2d", pool, {images})[0];
    const Tensor dx16 = testing::RunOp("max_pool2d_grad", pool, {grads, images})[0];
    REQUIRE(y16.GetShape() == grads.GetShape());
    CHECK(to_f32(y16).ToVector<float>() == testing::RunOp("max_pool2d", pool, {to_f32(images)})[0].ToVector<float>());
    CHECK(to_f32(dx16).ToVector<float>() ==
          to_f32(to_bf16(testing::RunOp("max_pool2d_grad", pool, {to_f32(grads), to_f32(images)})[0])).ToVector<float>());
  }
  // The sum of two bf16 tensors of one shape (widened blocks over the pool).
  const Tensor sum = testing::RunOp("add", std::any(), {x16, dy16})[0];
  int wrong = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    const float a = static_cast<float>(x16.Data<bfloat16>()[i]), b = static_cast<float>(dy16.Data<bfloat16>()[i]);
    wrong += sum.Data<bfloat16>()[i].bits != bfloat16(a + b).bits;
  }
  CHECK(wrong == 0);
}

TEST_CASE("the CPU's f32 to bf16 cast rounds every value as the scalar conversion does, on any length") {
  // Long enough to split over the intra-op pool, with a tail the 16-wide instruction does not cover.
  const std::int64_t count = 100003;
  Tensor x(Shape{count}, DType::kF32);
  std::mt19937 random(9);
  std::uniform_int_distribution<std::uint32_t> bits(0, 0xffffffffu);
  for (std::int64_t i = 0; i < count; ++i) {
    std::uint32_t b = bits(random);
    if (((b >> 23) & 0xffu) == 0) b |= 0x00800000u;  // no denormals: the instruction reads them as zero
    std::memcpy(&x.Data<float>()[i], &b, sizeof b);
  }
  // Ties (to even, both ways), infinities, NaN, the largest float (rounds to infinity) at both ends.
  const float specials[] = {1.f + 1.f / 256, 1.f + 3.f / 256, std::numeric_limits<float>::infinity(), -0.f,
                            std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::max()};
  for (std::size_t i = 0; i < std::size(specials); ++i) {
    x.Data<float>()[i] = specials[i];
    x.Data<float>()[count - 1 - static_cast<std::int64_t>(i)] = specials[i];
  }
  JobBuilder builder("round", JobType::kPredict);
  builder.Output("y", Cast(builder.Placeholder("x", x.GetShape()), {.dtype = DType::kBF16}));
  Session session;
  const Tensor y = session.Call(builder.Build(), {x})[0].Clone();
  REQUIRE(y.GetDType() == DType::kBF16);
  int wrong = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    const float v = x.Data<float>()[i];
    const std::uint16_t want = bfloat16(v).bits, got = y.Data<bfloat16>()[i].bits;
    const bool both_nan = std::isnan(v) && std::isnan(static_cast<float>(y.Data<bfloat16>()[i]));
    if (got != want && !both_nan) ++wrong;
  }
  CHECK(wrong == 0);
}

TEST_CASE("float16 and bfloat16 ops without 16-bit CPU kernels run through their float32 kernels, rounded once") {
  // softmax, reduce_sum, scalar and clip_by_value have no 16-bit CPU kernels: each widens its input,
  // runs in float32 and rounds its output, which a float32 job then rounds the same way.
  const Tensor x = Random({6, 7}, 5, 3.f);
  for (const DType half : {DType::kF16, DType::kBF16}) {
    CAPTURE(half);
    auto build = [&](DType dtype) {
      JobBuilder builder(dtype == DType::kF32 ? "wide" : "narrow");
      const Blob in = Cast(builder.Placeholder("x", Shape{6, 7}), {.dtype = dtype});
      auto round = [&](const Blob& b) { return dtype == DType::kF32 ? Cast(Cast(b, {.dtype = half}), {.dtype = DType::kF32}) : b; };
      const Blob rounded_in = round(in);
      const Blob soft = round(Softmax(rounded_in));
      const Blob clipped = round(ClipByValue(round(ScalarMul(soft, 3.0)), {.min = 0.1, .max = 0.5}));
      const Blob total = round(ReduceSum(clipped, {.axes = {1}}));
      builder.Output("soft", Cast(soft, {.dtype = DType::kF32}));
      builder.Output("total", Cast(total, {.dtype = DType::kF32}));
      return builder.Build();
    };
    Session session;
    const Outputs narrow = session.Call(build(half), {x});
    const Outputs wide = session.Call(build(DType::kF32), {x});
    CHECK(narrow[0].ToVector<float>() == wide[0].ToVector<float>());
    CHECK(narrow[1].ToVector<float>() == wide[1].ToVector<float>());
  }
}

TEST_CASE("a bfloat16 matmul runs on every CPU: natively with AVX512, else through the float32 kernel") {
  // oneDNN has no bf16 primitives below AVX512; there the product widens its operands, multiplies
  // in float32 and rounds once, which is what the native kernel computes (float32 accumulation).
  const Tensor a = Random({5, 9}, 7, 2.f), b = Random({9, 4}, 8, 2.f);
  auto build = [](DType dtype) {
    JobBuilder builder(dtype == DType::kF32 ? "wide" : "narrow");
    auto operand = [&](const char* name, Shape shape) {
      return Cast(Cast(builder.Placeholder(name, std::move(shape)), {.dtype = DType::kBF16}), {.dtype = dtype});
    };
    const Blob left = operand("a", Shape{5, 9});  // placeholders in call order
    const Blob product = MatMul(left, operand("b", Shape{9, 4}));
    builder.Output("product", Cast(Cast(product, {.dtype = DType::kBF16}), {.dtype = DType::kF32}));
    return builder.Build();
  };
  Session session;
  const std::vector<float> narrow = session.Call(build(DType::kBF16), {a, b})[0].ToVector<float>();
  const std::vector<float> wide = session.Call(build(DType::kF32), {a, b})[0].ToVector<float>();
  REQUIRE(narrow.size() == wide.size());
  for (std::size_t i = 0; i < wide.size(); ++i) {
    CAPTURE(i);
    CHECK(narrow[i] == doctest::Approx(wide[i]).epsilon(1.0 / 128));  // a bf16 ulp: sums may round apart
  }
}
