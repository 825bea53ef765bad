// The channels-last pass (graph/layout_pass.hpp): what it rewrites and that jobs compute the same
// results with it as without it, forward, backward and over training steps.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "graph/job_graph.hpp"
#include "kernels/attrs/conv2d_attrs.hpp"
#include "weir/weir.hpp"

using namespace weir;

namespace {

Tensor Random(Shape shape, unsigned seed) {
  Tensor t(std::move(shape), DType::kF32);
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) t.Data<float>()[i] = uniform(random);
  return t;
}

JobConfig Config(bool channels_last) {
  JobConfig config;
  config.channels_last_convolutions = channels_last;
  return config;
}

// A small LeNet: conv-bias-relu-pool twice, flatten, dense. Outputs the logits and, through a
// watch and an output, intermediate NCHW values that leave the chain.
struct Net {
  Blob images, logits, conv1, pool2;
};

Net Build(JobBuilder& builder) {
  Net net;
  net.images = builder.Placeholder("images", Shape{4, 3, 10, 10});
  const Initializer init = TruncatedNormalInitializer(0.0, 0.2);
  Conv2DOptions conv{.kernel_size = {3, 3}, .padding = SamePadding(), .activation = Activation::kRelu,
                     .kernel_initializer = init};
  conv.name = "conv1";
  net.conv1 = Conv2DLayer(net.images, 6, conv);
  const Pool2DAttrs pool{.ksize = {2, 2}, .strides = {2, 2}, .padding = SamePadding()};
  const Blob pool1 = MaxPool2D(net.conv1, pool, "pool1");
  conv.name = "conv2";
  conv.activation = Activation::kNone;
  const Blob conv2 = Tanh(Conv2DLayer(pool1, 8, conv), "conv2-tanh");
  net.pool2 = AvgPool2D(conv2, pool, "pool2");
  net.logits = Dense(Reshape(net.pool2, {{4, -1}}), 5, {.kernel_initializer = init, .name = "dense"});
  return net;
}

int CountOps(const Job& job, const std::string& type, DataFormat format) {
  int count = 0;
  for (const internal::OpNode& node : job.Graph()->nodes) {
    if (node.type != type || node.name.ends_with("/nchw")) continue;
    if (type == "conv2d" && std::any_cast<const Conv2DAttrs&>(node.attrs).data_format != format) continue;
    if (type != "conv2d" && std::any_cast<const Pool2DAttrs&>(node.attrs).data_format != format) continue;
    ++count;
  }
  return count;
}

void CheckClose(const Tensor& a, const Tensor& b, double tolerance) {
  REQUIRE(a.GetShape() == b.GetShape());
  double worst = 0;
  for (std::int64_t i = 0; i < a.NumElements(); ++i) {
    worst = std::max(worst, static_cast<double>(std::fabs(a.Data<float>()[i] - b.Data<float>()[i])));
  }
  CHECK(worst <= tolerance);
}

}  // namespace

TEST_CASE("the pass runs convolution chains in NHWC and keeps nodes in producer-first order") {
  JobBuilder builder("infer", JobType::kPredict);
  const Net net = Build(builder);
  builder.Output("logits", net.logits);
  builder.Output("conv1", net.conv1);  // leaves the chain: transposed back to NCHW
  const Job job = builder.Build();
  CHECK(CountOps(job, "conv2d", DataFormat::kNHWC) == 2);
  CHECK(CountOps(job, "conv2d", DataFormat::kNCHW) == 0);
  CHECK(CountOps(job, "max_pool2d", DataFormat::kNHWC) == 1);
  CHECK(CountOps(job, "avg_pool2d", DataFormat::kNHWC) == 1);
  const internal::JobGraph& graph = *job.Graph();
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    for (int input : graph.nodes[n].inputs) CHECK(graph.values[static_cast<std::size_t>(input)].producer < static_cast<int>(n));
    for (int output : graph.nodes[n].outputs) CHECK(graph.values[static_cast<std::size_t>(output)].producer == static_cast<int>(n));
  }
  // The outputs keep their NCHW shapes.
  for (const auto& [name, value] : graph.outputs) {
    if (name == "conv1") CHECK(graph.values[static_cast<std::size_t>(value)].meta.shape == Shape{4, 6, 10, 10});
  }

  JobBuilder off("infer_nchw", JobType::kPredict, Config(false));
  off.Output("logits", Build(off).logits);
  const Job unchanged = off.Build();
  CHECK(CountOps(unchanged, "conv2d", DataFormat::kNHWC) == 0);
}

TEST_CASE("a job computes the same outputs, watched values and gradients with and without the pass") {
  std::map<std::string, Tensor> outputs[2];
  Tensor watched[2], watched_diff[2];
  std::map<std::string, Tensor> variables[2];
  const Tensor images = Random(Shape{4, 3, 10, 10}, 1);
  const Tensor labels = Tensor::FromVector<std::int32_t>({4}, {0, 3, 1, 4});
  for (int on = 0; on < 2; ++on) {
    JobBuilder builder("train", JobType::kTrain, Config(on == 1));
    const Net net = Build(builder);
    const Blob label_blob = builder.Placeholder("labels", Shape{4}, DType::kI32);
    const Blob loss = SparseSoftmaxCrossEntropy(label_blob, net.logits);
    builder.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.05}), 0.9), loss);
    builder.Output("loss", loss);
    builder.Output("pool2", net.pool2);
    Watch(net.conv1, [&watched, on](const Tensor& t) { watched[on] = t.Clone(); });
    WatchDiff(net.conv1, [&watched_diff, on](const Tensor& t) { watched_diff[on] = t.Clone(); });
    const Job job = builder.Build();
    SessionOptions options;
    options.seed = 7;  // the same initial variables in both sessions
    Session session(options);
    for (int step = 0; step < 3; ++step) {
      const Outputs out = session.Call(job, {images, labels});
      for (std::size_t i = 0; i < out.Size(); ++i) outputs[on][out.Names()[i]] = out[i].Clone();
    }
    variables[on] = session.GetVariables();
  }
  CheckClose(outputs[0]["loss"], outputs[1]["loss"], 1e-4);
  CheckClose(outputs[0]["pool2"], outputs[1]["pool2"], 1e-4);
  CheckClose(watched[0], watched[1], 1e-4);
  CheckClose(watched_diff[0], watched_diff[1], 1e-5);
  REQUIRE(variables[0].size() == variables[1].size());
  for (const auto& [name, value] : variables[0]) {
    if (value.GetDType() != DType::kF32) continue;
    CAPTURE(name);
    CheckClose(value, variables[1].at(name), 1e-4);
  }
}

// A residual block as ResNet's: conv-bn-relu, conv-bn, plus a projected shortcut (conv-bn), relu,
// then a global mean over height and width and a dense layer.
Blob BuildResidual(JobBuilder& builder, const Blob& images, bool training) {
  const Initializer init = TruncatedNormalInitializer(0.0, 0.3);
  auto conv_bn = [&](const Blob& x, std::int64_t filters, const std::string& name) {
    Conv2DOptions conv{.kernel_size = {3, 3}, .padding = SamePadding(), .use_bias = false, .kernel_initializer = init};
    conv.name = name;
    BatchNormOptions norm{.axis = 1, .momentum = 0.9};
    norm.training = training;
    norm.name = name + "-bn";
    return BatchNormalization(Conv2DLayer(x, filters, conv), norm);
  };
  const Blob a = Relu(conv_bn(images, 6, "a"));
  const Blob block = Relu(Add(conv_bn(a, 6, "b"), conv_bn(images, 6, "shortcut")));
  return Dense(ReduceMean(block, {{2, 3}}), 5, {.kernel_initializer = init, .name = "dense"});
}

TEST_CASE("residual blocks stay NHWC through batch norm, the shortcut's sum and the global mean") {
  const Tensor images = Random(Shape{4, 3, 8, 8}, 3);
  const Tensor labels = Tensor::FromVector<std::int32_t>({4}, {0, 3, 1, 4});
  std::map<std::string, Tensor> variables[2];
  Tensor losses[2], logits[2];
  for (int on = 0; on < 2; ++on) {
    JobBuilder builder("train", JobType::kTrain, Config(on == 1));
    const Blob x = builder.Placeholder("images", Shape{4, 3, 8, 8});
    const Blob label_blob = builder.Placeholder("labels", Shape{4}, DType::kI32);
    const Blob loss = SparseSoftmaxCrossEntropy(label_blob, BuildResidual(builder, x, true));
    builder.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.9), loss);
    builder.Output("loss", loss);
    const Job job = builder.Build();
    if (on == 1) {
      CHECK(CountOps(job, "conv2d", DataFormat::kNHWC) == 3);
      // Only the images go in through a transpose (and each weight); nothing comes back out.
      int out_transposes = 0;
      for (const internal::OpNode& node : job.Graph()->nodes) {
        if (node.type == "transpose" && node.name.ends_with("/nchw_out")) ++out_transposes;
      }
      CHECK(out_transposes == 0);
    }
    JobBuilder predict("predict", JobType::kPredict, Config(on == 1));
    predict.Output("logits", BuildResidual(predict, predict.Placeholder("images", Shape{4, 3, 8, 8}), false));
    const Job infer = predict.Build();
    SessionOptions options;
    options.seed = 11;
    Session session(options);
    for (int step = 0; step < 3; ++step) losses[on] = session.Call(job, {images, labels})[0].Clone();
    logits[on] = session.Call(infer, {images})[0].Clone();
    variables[on] = session.GetVariables();
  }
  CheckClose(losses[0], losses[1], 1e-4);
  CheckClose(logits[0], logits[1], 1e-4);
  REQUIRE(variables[0].size() == variables[1].size());
  for (const auto& [name, value] : variables[0]) {  // weights and the moving statistics
    if (value.GetDType() != DType::kF32) continue;
    CAPTURE(name);
    CheckClose(value, variables[1].at(name), 1e-4);
  }
}
