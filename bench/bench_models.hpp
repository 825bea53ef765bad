#pragma once
// The models of the benchmarks in bench/, each identical to its PyTorch peer (bench/pytorch_models.py):
// the seeds' MNIST models (batch 100, truncated_normal(0.1) kernels, SGD lr 0.1 momentum 0; no dropout,
// so that both sides stay deterministic) and ResNet-50 (batch 64, 224x224 images, 1000 classes, SGD lr
// 0.1 momentum 0.9), all with sparse softmax cross entropy.
//   mlp:      784 -> 512 relu -> 10
//   lenet:    conv 32 5x5 SAME relu, max pool 2, conv 64 5x5 SAME relu, max pool 2, dense 512 relu, dense 10
//   resnet50: torchvision's ResNet-50 (v1.5: the stride on the 3x3 convolution of a bottleneck; pads of
//             k/2 on both sides, as PyTorch's, where the model-zoo program writes OneFlow's SAME)
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

// A convolution without bias (pads k/2 on each side), batch normalization over channels, relu.
inline weir::Blob ResnetConvBn(const weir::Blob& x, std::int64_t filters, std::int64_t kernel, std::int64_t stride,
                               const std::string& name, bool relu = true) {
  const std::int64_t pad = kernel / 2;
  const weir::Blob y = weir::Conv2DLayer(
      x, filters,
      {.kernel_size = {kernel, kernel}, .strides = {stride, stride}, .padding = weir::ExplicitPadding(pad, pad, pad, pad),
       .use_bias = false,
       .kernel_initializer = weir::VarianceScalingInitializer(2.0, weir::Initializer::FanMode::kFanIn,
                                                              weir::Initializer::Distribution::kRandomNormal),
       .name = name});
  const weir::Blob normalized =
      weir::BatchNormalization(y, {.axis = 1, .momentum = 0.9, .epsilon = 1e-5, .name = name + "-bn"});
  return relu ? weir::Relu(normalized) : normalized;
}

inline weir::Blob Resnet50Logits(const weir::Blob& images, std::int64_t classes) {
  weir::Blob x = ResnetConvBn(images, 64, 7, 2, "stem");
  x = weir::MaxPool2D(x, {.ksize = {3, 3}, .strides = {2, 2}, .padding = weir::ExplicitPadding(1, 1, 1, 1)}, "stem-pool");
  constexpr std::int64_t kStages[4][2] = {{3, 64}, {4, 128}, {6, 256}, {3, 512}};  // blocks, bottleneck width
  std::int64_t channels = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const auto [blocks, width] = kStages[stage];
    for (std::int64_t block = 0; block < blocks; ++block) {
      const std::int64_t stride = block == 0 && stage > 0 ? 2 : 1;
      const std::string name = fmt::format("res{}{}", stage + 2, static_cast<char>('a' + block));
      weir::Blob shortcut = x;
      if (stride != 1 || channels != 4 * width) shortcut = ResnetConvBn(x, 4 * width, 1, stride, name + "-proj", false);
      weir::Blob y = ResnetConvBn(x, width, 1, 1, name + "-a");
      y = ResnetConvBn(y, width, 3, stride, name + "-b");
      y = ResnetConvBn(y, 4 * width, 1, 1, name + "-c", false);
      x = weir::Relu(weir::Add(y, shortcut));
      channels = 4 * width;
    }
  }
  x = weir::ReduceMean(x, {.axes = {2, 3}});
  return weir::Dense(x, classes, {.kernel_initializer = weir::RandomNormalInitializer(0.0, 0.01), .name = "fc"});
}

/// A benchmark model and its inputs: images f32 (batch, channels, size, size), labels i32 in [0, classes).
struct ModelSpec {
  std::string model;
  std::int64_t batch = kBatch;
  std::int64_t channels = 1;
  std::int64_t image_size = 28;
  std::int64_t classes = 10;
  double momentum = 0.0;
};

/// The spec of `model` (mlp, lenet or resnet50); batch and image_size 0 keep the model's defaults
/// (the MNIST models take 28x28 only).
inline ModelSpec SpecOf(const std::string& model, std::int64_t batch = 0, std::int64_t image_size = 0) {
  ModelSpec spec{.model = model};
  if (model == "resnet50") {
    spec = {.model = model, .batch = 64, .channels = 3, .image_size = 224, .classes = 1000, .momentum = 0.9};
  } else if (model != "mlp" && model != "lenet") {
    throw std::invalid_argument(fmt::format("--model: expected mlp, lenet or resnet50, got {}", model));
  }
  if (batch < 0 || image_size < 0) {
    throw std::invalid_argument(fmt::format("--batch, --image-size: expected >= 0 (0: the model's default), got {}, {}",
                                            batch, image_size));
  }
  if (batch > 0) spec.batch = batch;
  if (image_size > 0) {
    if (model != "resnet50" && image_size != 28) {
      throw std::invalid_argument(fmt::format("--image-size: {} takes 28x28 images, got {}", model, image_size));
    }
    if (image_size < 32) throw std::invalid_argument(fmt::format("--image-size: resnet50 takes >= 32, got {}", image_size));
    spec.image_size = image_size;
  }
  return spec;
}

// The train and inference jobs of one model share its variables through their names.
inline weir::Blob Logits(const ModelSpec& spec, const weir::Blob& images) {
  if (spec.model == "resnet50") return Resnet50Logits(images, spec.classes);
  if (spec.batch != kBatch) throw std::invalid_argument(fmt::format("--batch: {} takes {}, got {}", spec.model, kBatch, spec.batch));
  return spec.model == "mlp" ? MlpLogits(images) : LenetLogits(images);
}

/// The jobs' config: channels_last is JobConfig::channels_last_convolutions (the convolutions run in
/// NHWC internally); `mixed`: JobConfig::mixed_precision (unset: f32).
inline weir::JobConfig BenchConfig(bool channels_last, std::optional<weir::JobConfig::MixedPrecision> mixed) {
  weir::JobConfig config{.channels_last_convolutions = channels_last};
  config.mixed_precision = mixed;
  return config;
}

inline weir::Shape ImagesShape(const ModelSpec& spec) {
  return weir::Shape{spec.batch, spec.channels, spec.image_size, spec.image_size};
}

/// Inputs images and labels (ModelSpec); output "loss" f32 (batch).
inline weir::Job TrainJob(const ModelSpec& spec, bool channels_last = true,
                          std::optional<weir::JobConfig::MixedPrecision> mixed = std::nullopt) {
  weir::JobBuilder builder("train_job", weir::JobType::kTrain, BenchConfig(channels_last, mixed));
  const weir::Blob images = builder.Placeholder("images", ImagesShape(spec));
  const weir::Blob labels = builder.Placeholder("labels", weir::Shape{spec.batch}, weir::DType::kI32);
  const weir::Blob loss = weir::SparseSoftmaxCrossEntropy(labels, Logits(spec, images), "softmax_loss");
  builder.Minimize(weir::Sgd(weir::PiecewiseConstantScheduler({}, {0.1}), spec.momentum), loss);
  builder.Output("loss", loss);
  return builder.Build();
}

inline weir::Job TrainJob(const std::string& model, bool channels_last = true,
                          std::optional<weir::JobConfig::MixedPrecision> mixed = std::nullopt) {
  return TrainJob(SpecOf(model), channels_last, mixed);
}

/// Input images (ModelSpec); output "predictions" i32 (batch), the argmax of the logits.
inline weir::Job InferJob(const ModelSpec& spec, bool channels_last = true,
                          std::optional<weir::JobConfig::MixedPrecision> mixed = std::nullopt) {
  weir::JobBuilder builder("infer_job", weir::JobType::kPredict, BenchConfig(channels_last, mixed));
  const weir::Blob images = builder.Placeholder("images", ImagesShape(spec));
  builder.Output("predictions", weir::ArgMax(Logits(spec, images)));
  return builder.Build();
}

inline double MeanLoss(const weir::Outputs& outputs) {
  const weir::Tensor& loss = outputs["loss"];
  const float* values = loss.Data<float>();
  double sum = 0;
  for (std::int64_t i = 0; i < loss.NumElements(); ++i) sum += values[i];
  return sum / static_cast<double>(loss.NumElements());
}

}  // namespace bench
