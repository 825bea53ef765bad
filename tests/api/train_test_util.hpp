#pragma once
// What the multi-device and multi-process training tests share: random data, row slices, a small MLP or
// conv-net train job, the check that two sessions ended with the same variables, and the check that
// failed train calls write nothing.
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <random>
#include <string>

#include "kernels/kernel.hpp"
#include "weir/optimizers.hpp"
#include "weir/weir.hpp"

namespace weir::testing {

constexpr std::int64_t kFeatures = 12;
constexpr std::int64_t kClasses = 4;

inline Tensor RandomImages(Shape shape, std::uint32_t seed) {
  Tensor t(std::move(shape), DType::kF32);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) t.Data<float>()[i] = dist(gen);
  return t;
}

inline Tensor RandomLabels(std::int64_t n, std::uint32_t seed) {
  Tensor t(Shape{n}, DType::kI32);
  std::mt19937 gen(seed);
  for (std::int64_t i = 0; i < n; ++i) t.Data<std::int32_t>()[i] = static_cast<std::int32_t>(gen() % kClasses);
  return t;
}

// Rows [begin, end) of a tensor (its first axis).
inline Tensor Rows(const Tensor& t, std::int64_t begin, std::int64_t end) {
  std::vector<std::int64_t> dims = t.GetShape().Dims();
  const std::int64_t row = t.NumElements() / dims[0] * static_cast<std::int64_t>(SizeOf(t.GetDType()));
  dims[0] = end - begin;
  Tensor out(Shape(dims), t.GetDType());
  std::memcpy(out.RawData(), static_cast<const std::byte*>(t.RawData()) + begin * row,
              static_cast<std::size_t>((end - begin) * row));
  return out;
}

enum class Model { kMlp, kConv };

// The seeds' MLP shape in small, or a LeNet-like conv net; `batch` is the batch each replica sees.
inline Job TrainJob(const std::string& name, Model model, std::int64_t batch, LogicalView view, const Optimizer& optimizer) {
  JobConfig config;
  config.view = view;
  JobBuilder builder(name, JobType::kTrain, config);
  const Initializer init = TruncatedNormalInitializer(0, 0.3);
  Blob features;
  if (model == Model::kMlp) {
    features = builder.Placeholder("images", Shape{batch, kFeatures});
  } else {
    Blob images = builder.Placeholder("images", Shape{batch, 1, 8, 8});
    Blob conv = Conv2DLayer(images, 4, {.kernel_size = {3, 3}, .padding = SamePadding(),
                                        .activation = Activation::kRelu, .kernel_initializer = init, .name = "conv"});
    features = Flatten(MaxPool2D(conv));
  }
  Blob labels = builder.Placeholder("labels", Shape{batch}, DType::kI32);
  Blob hidden = Dense(features, 16, {.activation = Activation::kRelu, .kernel_initializer = init, .name = "hidden"});
  Blob logits = Dense(hidden, kClasses, {.kernel_initializer = init, .name = "output"});
  Blob loss = SparseSoftmaxCrossEntropy(labels, logits, "loss");
  builder.Minimize(optimizer, loss);
  builder.Output("loss", loss);
  return builder.Build();
}

inline Shape ImageShape(Model model, std::int64_t batch) {
  return model == Model::kMlp ? Shape{batch, kFeatures} : Shape{batch, 1, 8, 8};
}

inline void CheckSameVariables(const std::map<std::string, Tensor>& a, const std::map<std::string, Tensor>& b) {
  REQUIRE(a.size() == b.size());
  for (const auto& [name, value] : a) {
    CAPTURE(name);
    REQUIRE(b.count(name) == 1);
    if (value.GetDType() != DType::kF32) {
      CHECK(b.at(name).ToVector<std::int64_t>() == value.ToVector<std::int64_t>());
      continue;
    }
    const std::vector<float> x = value.ToVector<float>();
    const std::vector<float> y = b.at(name).ToVector<float>();
    for (std::size_t i = 0; i < x.size(); ++i) CHECK(y[i] == doctest::Approx(x[i]).epsilon(1e-4).scale(1e-3));
  }
}

// Train calls that fail (a label out of range in the loss; an index out of range in a metric no update
// reads), sync and async, leave every variable as it was, the train step included, in a session with
// `options`; the session then trains on.
inline void CheckFailedTrainCallsWriteNothing(const SessionOptions& options) {
  JobBuilder builder("fails", JobType::kTrain);
  Blob images = builder.Placeholder("images", Shape{4, 3});
  Blob labels = builder.Placeholder("labels", Shape{4}, DType::kI32);
  Blob logits = Dense(images, 5, {.kernel_initializer = RandomNormalInitializer(0, 1, 3), .name = "fc"});
  Blob loss = SparseSoftmaxCrossEntropy(labels, logits);
  // A metric no update depends on fails too: its failure must stop the updates as well.
  builder.Output("picked", Gather(logits, Slice(labels, {.start = {0}, .stop = {2}, .step = {1}})));
  builder.Minimize(Sgd(PiecewiseConstantScheduler({}, {0.1}), 0.9), loss);
  builder.Output("loss", loss);
  const Job job = builder.Build();
  const Tensor ones = Tensor::FromVector<float>({4, 3}, std::vector<float>(12, 1.f));
  const Tensor good = Tensor::FromVector<std::int32_t>({4}, {0, 1, 2, 3});
  const Tensor bad_loss = Tensor::FromVector<std::int32_t>({4}, {0, 1, 2, 9});  // out of range for 5 classes
  const Tensor bad_metric = Tensor::FromVector<std::int32_t>({4}, {0, 7, 2, 3});  // and for the gather's 4 rows
  Session session(options);
  session.Call(job, {ones, good});
  const std::map<std::string, Tensor> before = session.GetVariables();
  for (const Tensor& bad : {bad_loss, bad_metric, bad_loss}) {
    CHECK_THROWS_AS(session.Call(job, {ones, bad}), internal::KernelError);
  }
  std::vector<bool> ok;
  for (const Tensor& value : {bad_loss, bad_metric}) {
    session.CallAsync(job, {ones, value}, [&](CallResult result) { ok.push_back(result.Ok()); });
  }
  session.Sync();
  CHECK(ok == std::vector<bool>{false, false});
  const std::map<std::string, Tensor> after = session.GetVariables();
  REQUIRE(after.size() == before.size());
  for (const auto& [name, value] : before) {
    INFO(name);
    CHECK(std::memcmp(after.at(name).RawData(), value.RawData(), value.NumBytes()) == 0);
  }
  CHECK(session.GetVariable("System-Train-TrainStep-fails").ToVector<std::int64_t>() == std::vector<std::int64_t>{1});
  session.Call(job, {ones, good});  // and the session trains on
  CHECK(session.GetVariable("System-Train-TrainStep-fails").ToVector<std::int64_t>() == std::vector<std::int64_t>{2});
}

}  // namespace weir::testing
