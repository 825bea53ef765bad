#pragma once
// What the MNIST training examples share: their flags, batching, evaluation with async calls, and
// the train / evaluate / save loop. Each example supplies its model's train and eval jobs.
//
// Usage of an example: <program> [--epochs N] [--max-steps S] [--data DIR] [--save DIR] [--load DIR]
//   --max-steps limits training steps per epoch (a quick demo); --load evaluates a saved model.
// The data comes from `make data` (or --data: a folder with the IDX files, or OneFlow's mnist.npz).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "weir/weir.hpp"

namespace mnist_example {

inline constexpr int kBatch = 100;

struct Args {
  int epochs = 1;
  int max_steps = -1;
  std::string data;
  std::string save;
  std::string load;
};

inline Args Parse(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(fmt::format("flag {} needs a value", flag));
    const std::string value = argv[++i];
    if (flag == "--epochs") args.epochs = std::stoi(value);
    else if (flag == "--max-steps") args.max_steps = std::stoi(value);
    else if (flag == "--data") args.data = value;
    else if (flag == "--save") args.save = value;
    else if (flag == "--load") args.load = value;
    else throw std::invalid_argument(fmt::format("unknown flag {}", flag));
  }
  return args;
}

// Batch `index` of a (batches, B, ...) tensor, as its own tensor.
inline weir::Tensor Batch(const weir::Tensor& all, std::int64_t index) {
  std::vector<std::int64_t> dims(all.GetShape().Dims().begin() + 1, all.GetShape().Dims().end());
  weir::Tensor batch(weir::Shape(dims), all.GetDType());
  std::memcpy(batch.RawData(), static_cast<const std::byte*>(all.RawData()) + index * batch.NumBytes(),
              batch.NumBytes());
  return batch;
}

inline double Evaluate(weir::Session& session, const weir::Job& eval, const weir::MnistSplit& test) {
  const std::int64_t batches = test.images.GetShape()[0];
  std::int64_t correct = 0;
  for (std::int64_t b = 0; b < batches; ++b) {
    weir::Tensor labels = Batch(test.labels, b);
    session.CallAsync(eval, {Batch(test.images, b)}, [&correct, labels](weir::CallResult result) {
      result.ThrowIfError();
      const std::int32_t* predicted = result.outputs["predictions"].Data<std::int32_t>();
      for (int i = 0; i < kBatch; ++i) correct += predicted[i] == labels.Data<std::int32_t>()[i];
    });
  }
  session.Sync();
  return static_cast<double>(correct) / static_cast<double>(batches * kBatch);
}

/// The example's main: trains `train_job()` with sync calls for --epochs epochs, evaluates
/// `eval_job()` on the test set after each (async calls), saves or loads a checkpoint. Returns the
/// exit status; errors are printed as "<program>: <what>".
inline int Run(const char* program, int argc, char** argv, const std::function<weir::Job()>& train_job,
               const std::function<weir::Job()>& eval_job) try {
  const Args args = Parse(argc, argv);
  const auto start = std::chrono::steady_clock::now();
  const weir::Mnist mnist = weir::LoadMnist(kBatch, args.data);
  const weir::Job train = train_job();
  const weir::Job eval = eval_job();
  weir::Session session;
  session.Compile(train);
  session.Compile(eval);

  if (!args.load.empty()) {
    session.LoadCheckpoint(args.load);
    fmt::print("loaded {}: test accuracy {:.2f}%\n", args.load, 100 * Evaluate(session, eval, mnist.test));
    return 0;
  }

  const std::int64_t batches = mnist.train.images.GetShape()[0];
  const std::int64_t steps = args.max_steps > 0 ? std::min<std::int64_t>(args.max_steps, batches) : batches;
  double train_seconds = 0;
  for (int epoch = 0; epoch < args.epochs; ++epoch) {
    const auto epoch_start = std::chrono::steady_clock::now();
    double loss_sum = 0;
    for (std::int64_t step = 0; step < steps; ++step) {
      const weir::Outputs out = session.Call(train, {Batch(mnist.train.images, step), Batch(mnist.train.labels, step)});
      const float* loss = out["loss"].Data<float>();
      for (int i = 0; i < kBatch; ++i) loss_sum += loss[i];
      if ((step + 1) % 20 == 0) {
        fmt::print("epoch {} step {:4d}: mean loss {:.4f}\n", epoch, step + 1, loss_sum / (20.0 * kBatch));
        std::fflush(stdout);
        loss_sum = 0;
      }
    }
    const double epoch_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start).count();
    train_seconds += epoch_seconds;
    const double accuracy = Evaluate(session, eval, mnist.test);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print("epoch {}: test accuracy {:.2f}% ({} steps in {:.1f} s, {:.1f} ms/step; {:.1f} s since start)\n", epoch,
               100 * accuracy, steps, epoch_seconds, 1e3 * epoch_seconds / static_cast<double>(steps), seconds);
  }
  fmt::print("{} epochs: {:.1f} s training, {:.1f} s per epoch\n", args.epochs, train_seconds,
             args.epochs > 0 ? train_seconds / args.epochs : 0.0);
  if (!args.save.empty()) {
    session.SaveCheckpoint(args.save, {.overwrite = true});
    fmt::print("saved the model to {}\n", args.save);
  }
  return 0;
} catch (const std::exception& error) {
  std::fprintf(stderr, "%s: %s\n", program, error.what());
  return 1;
}

}  // namespace mnist_example
