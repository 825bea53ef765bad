// Trains the seeds' MNIST MLP (784 -> 512 relu -> 10, truncated_normal(0.1) kernels, SGD lr 0.1
// momentum 0, batch 100) with sync calls, evaluates with async calls, saves a checkpoint.
// Flags: examples/cpp/mnist_training.hpp.
#include <cstdint>

#include "mnist_training.hpp"
#include "weir/weir.hpp"

namespace {

using mnist_example::kBatch;

// The model, shared by the train and the eval job through its variable names.
weir::Blob Logits(const weir::Blob& images) {
  const weir::Blob flat = weir::Reshape(images, {{kBatch, -1}});
  const weir::Initializer init = weir::TruncatedNormalInitializer(0.0, 0.1);
  const weir::Blob hidden = weir::Dense(
      flat, 512, {.activation = weir::Activation::kRelu, .kernel_initializer = init, .name = "hidden"});
  return weir::Dense(hidden, 10, {.kernel_initializer = init, .name = "output"});
}

weir::Job TrainJob() {
  weir::JobBuilder builder("train_job", weir::JobType::kTrain);
  const weir::Blob images = builder.Placeholder("images", weir::Shape{kBatch, 1, 28, 28});
  const weir::Blob labels = builder.Placeholder("labels", weir::Shape{kBatch}, weir::DType::kI32);
  const weir::Blob loss = weir::SparseSoftmaxCrossEntropy(labels, Logits(images), "softmax_loss");
  builder.Minimize(weir::Sgd(weir::PiecewiseConstantScheduler({}, {0.1}), /*momentum=*/0.0), loss);
  builder.Output("loss", loss);
  return builder.Build();
}

weir::Job EvalJob() {
  weir::JobBuilder builder("eval_job");
  const weir::Blob images = builder.Placeholder("images", weir::Shape{kBatch, 1, 28, 28});
  builder.Output("predictions", weir::ArgMax(Logits(images)));
  return builder.Build();
}

}  // namespace

int main(int argc, char** argv) { return mnist_example::Run("train_mnist_mlp", argc, argv, TrainJob, EvalJob); }
