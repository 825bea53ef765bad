// A 784-512-10 MLP predict job with fixed weights, called synchronously and asynchronously.
// Usage: predict_mlp [--dot plan.dot]   (writes the compiled plan as Graphviz dot)
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include <fmt/format.h>

#include "weir/weir.hpp"

namespace {

// Deterministic pseudo-random weights in [-scale, scale].
weir::Tensor RandomTensor(weir::Shape shape, float scale, unsigned seed) {
  weir::Tensor tensor(std::move(shape), weir::DType::kF32);
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> uniform(-scale, scale);
  for (std::int64_t i = 0; i < tensor.NumElements(); ++i) tensor.Data<float>()[i] = uniform(random);
  return tensor;
}

}  // namespace

int main(int argc, char** argv) {
  constexpr int kBatch = 100;
  weir::JobBuilder builder("mlp_predict");
  weir::Blob images = builder.Placeholder("images", weir::Shape{kBatch, 784});
  weir::Blob w1 = builder.Constant(RandomTensor({784, 512}, 1.f / std::sqrt(784.f), 1), "hidden-weight");
  weir::Blob b1 = builder.Constant(RandomTensor({512}, 0.1f, 2), "hidden-bias");
  weir::Blob w2 = builder.Constant(RandomTensor({512, 10}, 1.f / std::sqrt(512.f), 3), "output-weight");
  weir::Blob b2 = builder.Constant(RandomTensor({10}, 0.1f, 4), "output-bias");
  weir::Blob hidden = weir::Relu(weir::BiasAdd(weir::MatMul(images, w1), b1));
  weir::Blob logits = weir::BiasAdd(weir::MatMul(hidden, w2), b2);
  builder.Output("probabilities", weir::Softmax(logits));
  builder.Output("predictions", weir::ArgMax(logits));
  const weir::Job job = builder.Build();

  weir::Session session;
  if (argc == 3 && std::string(argv[1]) == "--dot") {
    std::ofstream(argv[2]) << session.PlanDot(job);
    fmt::print("wrote the plan of '{}' to {}\n", job.Name(), argv[2]);
  }

  // Sync: one batch, block on the final actor.
  const weir::Outputs out = session.Call(job, {RandomTensor({kBatch, 784}, 1.f, 100)});
  const std::int32_t* predictions = out["predictions"].Data<std::int32_t>();
  fmt::print("sync call: predictions of the first 10 images: {}\n", fmt::join(predictions, predictions + 10, " "));
  const float* p = out["probabilities"].Data<float>();
  fmt::print("sync call: probabilities of image 0: [{:.3f}]\n", fmt::join(p, p + 10, ", "));

  // Async: 8 batches in flight, callbacks in call order on the callback thread.
  for (int call = 0; call < 8; ++call) {
    session.CallAsync(job, {RandomTensor({kBatch, 784}, 1.f, 200 + static_cast<unsigned>(call))},
                      [call](weir::CallResult result) {
                        result.ThrowIfError();
                        const auto predictions = result.outputs["predictions"].ToVector<std::int32_t>();
                        int histogram[10] = {};
                        for (std::int32_t label : predictions) ++histogram[label];
                        fmt::print("async call {}: class histogram of {} images: [{}]\n", call, predictions.size(),
                                   fmt::join(histogram, histogram + 10, " "));
                      });
  }
  session.Sync();
  return 0;
}
