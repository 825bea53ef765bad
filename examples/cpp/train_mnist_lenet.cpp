// Trains the seeds' MNIST LeNet (conv 32 5x5 SAME relu, max pool 2, conv 64 5x5 SAME relu, max pool 2,
// dense 512 relu, dropout 0.5 when training, dense 10; truncated_normal(0.1) kernels, SGD lr 0.1
// momentum 0, batch 100) with sync calls, evaluates the test set after each epoch with a predict job
// (async calls), saves a checkpoint. The docs report 99.3 % after 20 epochs.
// Flags: examples/cpp/mnist_training.hpp.
#include <cstdint>

#include "mnist_training.hpp"
#include "weir/weir.hpp"

namespace {

using mnist_example::kBatch;

// The model, shared by the train and the eval job through its variable names; dropout only in training.
weir::Blob Logits(const weir::Blob& images, bool train) {
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
  weir::Blob hidden = weir::Dense(
      flat, 512, {.activation = weir::Activation::kRelu, .kernel_initializer = init, .name = "dense1"});
  if (train) hidden = weir::Dropout(hidden, {.rate = 0.5, .name = "dropout"});
  return weir::Dense(hidden, 10, {.kernel_initializer = init, .name = "dense2"});
}

weir::Job TrainJob() {
  weir::JobBuilder builder("train_job", weir::JobType::kTrain);
  const weir::Blob images = builder.Placeholder("images", weir::Shape{kBatch, 1, 28, 28});
  const weir::Blob labels = builder.Placeholder("labels", weir::Shape{kBatch}, weir::DType::kI32);
  const weir::Blob loss = weir::SparseSoftmaxCrossEntropy(labels, Logits(images, /*train=*/true), "softmax_loss");
  builder.Minimize(weir::Sgd(weir::PiecewiseConstantScheduler({}, {0.1}), /*momentum=*/0.0), loss);
  builder.Output("loss", loss);
  return builder.Build();
}

weir::Job EvalJob() {
  weir::JobBuilder builder("eval_job");
  const weir::Blob images = builder.Placeholder("images", weir::Shape{kBatch, 1, 28, 28});
  builder.Output("predictions", weir::ArgMax(Logits(images, /*train=*/false)));
  return builder.Build();
}

}  // namespace

int main(int argc, char** argv) { return mnist_example::Run("train_mnist_lenet", argc, argv, TrainJob, EvalJob); }
