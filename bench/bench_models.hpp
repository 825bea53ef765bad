#pragma once
// The models of the benchmarks in bench/, each identical to its PyTorch peer (bench/pytorch_models.py):
// the seeds' MNIST models (batch 100, truncated_normal(0.1) kernels, SGD lr 0.1 momentum 0; no dropout,
// so that both sides stay deterministic) and ResNet-50 (batch 64, 224x224 images, 1000 classes, SGD lr
// 0.1 momentum 0.9), all with sparse softmax cross entropy.
//   mlp:      784 -> 512 relu -> 10
//   lenet:    conv 32 5x5 SAME relu, max pool 2, conv 64 5x5 SAME relu, max pool 2, dense 512 relu, dense 10
//   resnet50: torchvision's ResNet-50 (v1.5: the stride on the 3x3 convolution of a bottleneck; pads of
//             k/2 on both sides, as PyTorch's, where the model-zoo program writes OneFlow's SAME)
//   bert:     BERT-base pretraining as examples/python/zoo/bert.py builds it (batch 32 of sequences of
//             128, 20 masked-LM predictions each, next-sentence prediction, dropout 0.1, AdamW lr 1e-4
//             with weight decay 0.01 but on biases and layer norms); its inputs are BertBatch's
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>
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

// BERT-base's sizes (the layers may be fewer, for quick checks).
struct BertSizes {
  std::int64_t vocab = 30522, hidden = 768, layers = 12, heads = 12, intermediate = 3072, max_position = 512;
  std::int64_t predictions = 20;  // masked-LM predictions per sequence
  double dropout = 0.1;
};

// Builds BERT's pretraining loss in one job (the variables named as the zoo's bert.py names them).
class BertBuilder {
 public:
  BertBuilder(weir::JobBuilder& job, BertSizes sizes, bool training) : job_(job), sizes_(sizes), training_(training) {}

  /// (sequence output (batch, seq, hidden), pooled output (batch, hidden)) of i32 ids, mask and segments.
  std::pair<weir::Blob, weir::Blob> Encode(const weir::Blob& ids, const weir::Blob& mask, const weir::Blob& segments) {
    const weir::Shape shape = ids.GetShape();
    const std::int64_t batch = shape[0], seq = shape[1], hidden = sizes_.hidden;
    words_ = Table("bert-embeddings-word_embeddings", sizes_.vocab);
    const weir::Blob positions = weir::Slice(Table("bert-embeddings-position_embeddings", sizes_.max_position),
                                             {.start = {0, 0}, .stop = {seq, hidden}, .step = {1, 1}});
    weir::Blob x = weir::Add(weir::Gather(words_, ids), weir::Gather(Table("bert-embeddings-token_type_embeddings", 2), segments));
    x = weir::Add(x, weir::Reshape(positions, {{1, seq, hidden}}));
    x = Dropout(LayerNorm(x, "bert-embeddings-LayerNorm"));
    // Padding gets -10000 added to its scores: no attention to it after the softmax.
    const weir::Blob mask_addend = weir::ScalarMul(
        weir::ScalarAdd(weir::Reshape(weir::Cast(mask, {weir::DType::kF32}), {{batch, 1, 1, seq}}), -1.0), 10000.0);
    x = weir::Reshape(x, {{batch * seq, hidden}});
    for (std::int64_t layer = 0; layer < sizes_.layers; ++layer) {
      x = Layer(x, mask_addend, batch, seq, fmt::format("bert-encoder-layer{}", layer));
    }
    const weir::Blob sequence = weir::Reshape(x, {{batch, seq, hidden}});
    const weir::Blob first = weir::Reshape(
        weir::Slice(sequence, {.start = {0, 0, 0}, .stop = {batch, 1, hidden}, .step = {1, 1, 1}}), {{batch, hidden}});
    return {sequence, weir::Tanh(Dense(first, hidden, "bert-pooler-dense"))};
  }

  /// The masked-LM loss (weighted mean over the predictions) plus the next-sentence loss.
  weir::Blob PretrainingLoss(const weir::Blob& sequence, const weir::Blob& pooled, const weir::Blob& positions,
                             const weir::Blob& label_ids, const weir::Blob& label_weights,
                             const weir::Blob& next_sentence_labels) {
    const std::int64_t batch = positions.GetShape()[0], predictions = positions.GetShape()[1];
    const std::int64_t seq = sequence.GetShape()[1], hidden = sizes_.hidden, picked_rows = batch * predictions;
    const weir::Blob picked = weir::Reshape(
        weir::BatchMatMul(weir::OneHot(positions, {.depth = seq}), sequence), {{picked_rows, hidden}});
    const weir::Blob transformed = LayerNorm(Dense(picked, hidden, "cls-predictions-transform-dense", true),
                                             "cls-predictions-transform-LayerNorm");
    const weir::Blob bias = job_.Variable("cls-predictions-output_bias", {.shape = weir::Shape{sizes_.vocab}});
    const weir::Blob logits = weir::BiasAdd(weir::MatMul(transformed, words_, {.transpose_b = true}), bias);
    const weir::Blob per_prediction =
        weir::SparseSoftmaxCrossEntropy(weir::Reshape(label_ids, {{picked_rows}}), logits);
    const weir::Blob weights = weir::Reshape(label_weights, {{picked_rows}});
    const weir::Blob lm_loss = weir::Div(weir::ReduceSum(weir::Mul(per_prediction, weights)),
                                         weir::ScalarAdd(weir::ReduceSum(weights), 1e-5));
    const weir::Blob nsp = weir::SparseSoftmaxCrossEntropy(weir::Reshape(next_sentence_labels, {{batch}}),
                                                           Dense(pooled, 2, "cls-seq_relationship"));
    return weir::Add(lm_loss, weir::ReduceMean(nsp));
  }

 private:
  weir::Initializer Init() const { return weir::TruncatedNormalInitializer(0.0, 0.02); }

  weir::Blob Table(const std::string& name, std::int64_t rows) {
    return job_.Variable(name, {.shape = weir::Shape{rows, sizes_.hidden}, .initializer = Init()});
  }

  weir::Blob Dense(const weir::Blob& x, std::int64_t units, const std::string& name, bool gelu = false) {
    const weir::Blob y = weir::Dense(x, units, {.kernel_initializer = Init(), .name = name});
    return gelu ? weir::Unary(y, {weir::UnaryOpKind::kGelu}) : y;
  }

  weir::Blob Dropout(const weir::Blob& x) {
    if (!training_ || sizes_.dropout <= 0) return x;
    return weir::Dropout(x, {.rate = sizes_.dropout, .seed = ++dropouts_});
  }

  // Over the last axis, epsilon 1e-12: (x - mean) / sqrt(variance + epsilon) * gamma + beta.
  weir::Blob LayerNorm(const weir::Blob& x, const std::string& name) {
    const weir::Blob normalized = weir::LayerNorm(x, -1, 1e-12);
    const weir::Shape width{sizes_.hidden};
    const weir::Blob gamma = job_.Variable(name + "-gamma", {.shape = width, .initializer = weir::OnesInitializer()});
    const weir::Blob beta = job_.Variable(name + "-beta", {.shape = width});
    return weir::Add(weir::Mul(normalized, gamma), beta);
  }

  weir::Blob Layer(const weir::Blob& x, const weir::Blob& mask_addend, std::int64_t batch, std::int64_t seq,
                   const std::string& name) {
    const std::int64_t heads = sizes_.heads, hidden = sizes_.hidden, width = hidden / heads;
    // (batch·seq, hidden) -> (batch, heads, seq, width)
    const auto split = [&](const weir::Blob& t) {
      return weir::Transpose(weir::Reshape(t, {{batch, seq, heads, width}}), {{0, 2, 1, 3}});
    };
    const std::string self = name + "-attention-self";
    const weir::Blob query = split(Dense(x, hidden, self + "-query"));
    const weir::Blob key = split(Dense(x, hidden, self + "-key"));
    const weir::Blob value = split(Dense(x, hidden, self + "-value"));
    const weir::Blob scores = weir::Add(
        weir::BatchMatMul(query, key, {.transpose_b = true, .alpha = 1.0 / std::sqrt(static_cast<double>(width))}),
        mask_addend);
    const weir::Blob probabilities = Dropout(weir::Softmax(scores));
    const weir::Blob context = weir::Reshape(weir::Transpose(weir::BatchMatMul(probabilities, value), {{0, 2, 1, 3}}),
                                             {{batch * seq, hidden}});
    const weir::Blob attention = Dropout(Dense(context, hidden, name + "-attention-output-dense"));
    const weir::Blob normed = LayerNorm(weir::Add(attention, x), name + "-attention-output-LayerNorm");
    const weir::Blob inner = Dense(normed, sizes_.intermediate, name + "-intermediate-dense", true);
    const weir::Blob out = Dropout(Dense(inner, hidden, name + "-output-dense"));
    return LayerNorm(weir::Add(out, normed), name + "-output-LayerNorm");
  }

  weir::JobBuilder& job_;
  BertSizes sizes_;
  bool training_;
  weir::Blob words_;
  std::uint64_t dropouts_ = 0;
};

/// A benchmark model and its inputs: images f32 (batch, channels, size, size), labels i32 in [0, classes).
/// (bert: sequences of `seq` tokens, BertSizes; the image fields unused.)
struct ModelSpec {
  std::string model;
  std::int64_t batch = kBatch;
  std::int64_t channels = 1;
  std::int64_t image_size = 28;
  std::int64_t classes = 10;
  double momentum = 0.0;
  std::int64_t seq = 128;
  BertSizes bert;
};

/// The spec of `model` (mlp, lenet, resnet50 or bert); batch and image_size 0 keep the model's defaults
/// (the MNIST models take 28x28 only).
inline ModelSpec SpecOf(const std::string& model, std::int64_t batch = 0, std::int64_t image_size = 0) {
  ModelSpec spec{.model = model};
  if (model == "resnet50") {
    spec = {.model = model, .batch = 64, .channels = 3, .image_size = 224, .classes = 1000, .momentum = 0.9};
  } else if (model == "bert") {
    spec = {.model = model, .batch = 32};
  } else if (model != "mlp" && model != "lenet") {
    throw std::invalid_argument(fmt::format("--model: expected mlp, lenet, resnet50 or bert, got {}", model));
  }
  if (batch < 0 || image_size < 0) {
    throw std::invalid_argument(fmt::format("--batch, --image-size: expected >= 0 (0: the model's default), got {}, {}",
                                            batch, image_size));
  }
  if (batch > 0) spec.batch = batch;
  if (image_size > 0) {
    if (model == "bert") throw std::invalid_argument("--image-size: bert takes sequences (--seq), not images");
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

// BERT's three encoder inputs (ids, mask, segments: i32 (batch, seq)), then the pretraining heads' four
// (positions, label ids: i32 (batch, predictions); label weights f32 (batch, predictions); next-sentence
// labels i32 (batch, 1)).
inline std::vector<weir::Blob> BertPlaceholders(weir::JobBuilder& builder, const ModelSpec& spec, bool heads) {
  const weir::Shape tokens{spec.batch, spec.seq}, predicted{spec.batch, spec.bert.predictions};
  std::vector<weir::Blob> inputs;
  for (const char* name : {"ids", "mask", "segments"}) inputs.push_back(builder.Placeholder(name, tokens, weir::DType::kI32));
  if (!heads) return inputs;
  inputs.push_back(builder.Placeholder("positions", predicted, weir::DType::kI32));
  inputs.push_back(builder.Placeholder("label_ids", predicted, weir::DType::kI32));
  inputs.push_back(builder.Placeholder("label_weights", predicted, weir::DType::kF32));
  inputs.push_back(builder.Placeholder("next_sentence_labels", weir::Shape{spec.batch, 1}, weir::DType::kI32));
  return inputs;
}

/// Inputs images and labels (ModelSpec), or BERT's seven; output "loss" f32 ((batch), BERT's a scalar).
inline weir::Job TrainJob(const ModelSpec& spec, bool channels_last = true,
                          std::optional<weir::JobConfig::MixedPrecision> mixed = std::nullopt) {
  weir::JobBuilder builder("train_job", weir::JobType::kTrain, BenchConfig(channels_last, mixed));
  if (spec.model == "bert") {
    const std::vector<weir::Blob> in = BertPlaceholders(builder, spec, true);
    BertBuilder bert(builder, spec.bert, true);
    const auto [sequence, pooled] = bert.Encode(in[0], in[1], in[2]);
    const weir::Blob loss = bert.PretrainingLoss(sequence, pooled, in[3], in[4], in[5], in[6]);
    weir::Optimizer adamw = weir::AdamW(weir::PiecewiseConstantScheduler({}, {1e-4}), 0.01, 0.9, 0.999, 1e-6);
    adamw.weight_decay_excludes = {"bias", "LayerNorm"};
    builder.Minimize(adamw, loss);
    builder.Output("loss", loss);
    return builder.Build();
  }
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

/// Input images (ModelSpec); output "predictions" i32 (batch), the argmax of the logits. BERT: inputs
/// ids, mask and segments; output "predictions" f32 (batch, hidden), the pooled output.
inline weir::Job InferJob(const ModelSpec& spec, bool channels_last = true,
                          std::optional<weir::JobConfig::MixedPrecision> mixed = std::nullopt) {
  weir::JobBuilder builder("infer_job", weir::JobType::kPredict, BenchConfig(channels_last, mixed));
  if (spec.model == "bert") {
    const std::vector<weir::Blob> in = BertPlaceholders(builder, spec, false);
    builder.Output("predictions", BertBuilder(builder, spec.bert, false).Encode(in[0], in[1], in[2]).second);
    return builder.Build();
  }
  const weir::Blob images = builder.Placeholder("images", ImagesShape(spec));
  builder.Output("predictions", weir::ArgMax(Logits(spec, images)));
  return builder.Build();
}

/// Random inputs of the train job (the inference job takes the first InferInputs(spec) of them): images
/// uniform in [0, 1) and labels in [0, classes); BERT: random tokens (every one real, the second half of
/// each sequence segment 1), PREDICTIONS distinct positions per sequence, random labels.
inline std::vector<weir::Tensor> RandomInputs(const ModelSpec& spec, std::mt19937& random) {
  const auto ints = [&](weir::Shape shape, std::int32_t low, std::int32_t high) {
    weir::Tensor t(std::move(shape), weir::DType::kI32);
    std::uniform_int_distribution<std::int32_t> draw(low, high - 1);
    for (std::int64_t i = 0; i < t.NumElements(); ++i) t.Data<std::int32_t>()[i] = draw(random);
    return t;
  };
  if (spec.model != "bert") {
    weir::Tensor images(ImagesShape(spec), weir::DType::kF32);
    std::uniform_real_distribution<float> pixel(0.f, 1.f);
    for (std::int64_t i = 0; i < images.NumElements(); ++i) images.Data<float>()[i] = pixel(random);
    return {images, ints(weir::Shape{spec.batch}, 0, static_cast<std::int32_t>(spec.classes))};
  }
  const std::int64_t batch = spec.batch, seq = spec.seq, predictions = spec.bert.predictions;
  const auto vocab = static_cast<std::int32_t>(spec.bert.vocab);
  weir::Tensor mask(weir::Shape{batch, seq}, weir::DType::kI32), segments(weir::Shape{batch, seq}, weir::DType::kI32);
  weir::Tensor positions(weir::Shape{batch, predictions}, weir::DType::kI32);
  weir::Tensor weights(weir::Shape{batch, predictions}, weir::DType::kF32);
  std::vector<std::int32_t> candidates(static_cast<std::size_t>(seq - 1));
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t t = 0; t < seq; ++t) {
      mask.Data<std::int32_t>()[b * seq + t] = 1;
      segments.Data<std::int32_t>()[b * seq + t] = t >= seq / 2 ? 1 : 0;
    }
    for (std::size_t i = 0; i < candidates.size(); ++i) candidates[i] = static_cast<std::int32_t>(i + 1);
    std::shuffle(candidates.begin(), candidates.end(), random);
    std::sort(candidates.begin(), candidates.begin() + predictions);
    for (std::int64_t p = 0; p < predictions; ++p) {
      positions.Data<std::int32_t>()[b * predictions + p] = candidates[static_cast<std::size_t>(p)];
      weights.Data<float>()[b * predictions + p] = 1.f;
    }
  }
  return {ints(weir::Shape{batch, seq}, 4, vocab), mask, segments, positions,
          ints(weir::Shape{batch, predictions}, 4, vocab), weights, ints(weir::Shape{batch, 1}, 0, 2)};
}

inline std::size_t InferInputs(const ModelSpec& spec) { return spec.model == "bert" ? 3 : 1; }

inline double MeanLoss(const weir::Outputs& outputs) {
  const weir::Tensor& loss = outputs["loss"];
  const float* values = loss.Data<float>();
  double sum = 0;
  for (std::int64_t i = 0; i < loss.NumElements(); ++i) sum += values[i];
  return sum / static_cast<double>(loss.NumElements());
}

}  // namespace bench
