#pragma once
// The seeds' MNIST models for the benchmarks in bench/ (batch 100, truncated_normal(0.1) kernels,
// sparse softmax cross entropy, SGD lr 0.1 momentum 0). No dropout: the benchmarks keep Weir's and
// PyTorch's models deterministic and identical.
//   mlp:   784 -> 512 relu -> 10
//   lenet: conv 32 5x5 SAME relu, max pool 2, conv 64 5x5 SAME relu, max pool 2, dense 512 relu, dense 10
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "weir/weir.hpp"

namespace bench {

constexpr int kBatch = 100;

inline weir::Blob MlpLogits(const weir::Blob& images) {
  const weir::Blob flat = weir::Reshape(images, {{kBatch, -1}});
  const weir::Initializer init = weir::TruncatedNormalInitializer(0.0, 0.1);
  const weir::Blob hidden = weir::Dense(
      flat, 512, {.activation = weir::Activation::kRelu, .kernel_initializer = init, .name = "hidden"});
  return weir::Dense(hidden, 10, {.kernel_initializer = init, .name = "output"});
}

inline weir::Blob LenetLogits(const weir::Blob& images) {
  const weir::Initializer init = weir::TruncatedNormalInitializer(0.0, 0.1);
  const auto conv = [&init](const weir::Blob& x, std::int64_t filters, const char* name) {
    return weir::Conv2DLayer(x, filters,
                             {.kernel_size = {5, 5}, .padding = weir::SamePadding(),
                              .activation = weir::Activation::kRelu, .kernel_initializer = init, .name = name});
  };
  const weir::Pool2DAttrs pool{.ksize = {2, 2}, .strides = {2, 2}, .padding = weir::SamePadding()};
  const weir::Blob pool1 = weir::MaxPool2D(conv(images, 32, "conv1"), pool, "pool1");
  const weir::Blob pool2 = weir::MaxPool2D(conv(pool1, 64, "conv2"), pool, "pool2");
  const weir::Blob flat = weir::Reshape(pool2, {{kBatch, -1}});
  const weir::Blob hidden = weir::Dense(
      flat, 512, {.activation = weir::Activation::kRelu, .kernel_initializer = init, .name = "dense1"});
  return weir::Dense(hidden, 10, {.kernel_initializer = init, .name = "dense2"});
}

// The train and inference jobs of one model share its variables through their names.
inline weir::Blob Logits(const std::string& model, const weir::Blob& images) {
  if (model == "mlp") return MlpLogits(images);
  if (model == "lenet") return LenetLogits(images);
  throw std::invalid_argument(fmt::format("--model: expected mlp or lenet, got {}", model));
}

/// The jobs' config: channels_last is JobConfig::channels_last_convolutions (the convolutions run in
/// NHWC internally); `mixed`: JobConfig::mixed_precision (unset: f32).
inline weir::JobConfig BenchConfig(bool channels_last, std::optional<weir::JobConfig::MixedPrecision> mixed) {
  weir::JobConfig config{.channels_last_convolutions = channels_last};
  config.mixed_precision = mixed;
  return config;
}

/// Inputs images f32 (100, 1, 28, 28) and labels i32 (100); output "loss" f32 (100).
inline weir::Job TrainJob(const std::string& model, bool channels_last = true,
                          std::optional<weir::JobConfig::MixedPrecision> mixed = std::nullopt) {
  weir::JobBuilder builder("train_job", weir::JobType::kTrain, BenchConfig(channels_last, mixed));
  const weir::Blob images = builder.Placeholder("images", weir::Shape{kBatch, 1, 28, 28});
  const weir::Blob labels = builder.Placeholder("labels", weir::Shape{kBatch}, weir::DType::kI32);
  const weir::Blob loss = weir::SparseSoftmaxCrossEntropy(labels, Logits(model, images), "softmax_loss");
  builder.Minimize(weir::Sgd(weir::PiecewiseConstantScheduler({}, {0.1}), /*momentum=*/0.0), loss);
  builder.Output("loss", loss);
  return builder.Build();
}

/// Input images f32 (100, 1, 28, 28); output "predictions" i32 (100), the argmax of the logits.
inline weir::Job InferJob(const std::string& model, bool channels_last = true,
                          std::optional<weir::JobConfig::MixedPrecision> mixed = std::nullopt) {
  weir::JobBuilder builder("infer_job", weir::JobType::kPredict, BenchConfig(channels_last, mixed));
  const weir::Blob images = builder.Placeholder("images", weir::Shape{kBatch, 1, 28, 28});
  builder.Output("predictions", weir::ArgMax(Logits(model, images)));
  return builder.Build();
}

inline double MeanLoss(const weir::Outputs& outputs) {
  const float* loss = outputs["loss"].Data<float>();
  double sum = 0;
  for (int i = 0; i < kBatch; ++i) sum += loss[i];
  return sum / kBatch;
}

}  // namespace bench
