// A training loop fed by a host data loader, with sync calls vs async calls: the seeds' MNIST MLP
// (bench_models.hpp) trained on real MNIST batches that the loader augments on the main thread, as a
// data pipeline would: per image a random shift of up to 2 pixels; for a share of the images also an
// elastic distortion (Simard et al. 2003: a random displacement field smoothed by a Gaussian of
// sigma 4, scaled by 34, bilinear resampling) and Gaussian pixel noise (sigma 0.05), clamped to
// [0, 1]. That share is calibrated so that loading one batch takes about one train step.
//   sync:  loop { batch = loader.Next(); session.Call(train, batch) }        load and step alternate
//   async: loop { batch = loader.Next(); session.CallAsync(train, batch, cb) } the next batch loads
//          while the runtime trains on the previous ones; Sync() at the end
// The two modes alternate within each repeat; figures are medians. Last line: JSON.
//
// Usage: async_pipeline [--steps N] [--repeats R] [--data DIR] [--elastic-share P] (0..1; default:
//        calibrated) [--scheduler-threads T] (0 = default)
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench_models.hpp"
#include "weir/weir.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using bench::kBatch;

constexpr int kSide = 28;
constexpr int kPixels = kSide * kSide;

struct Args {
  int steps = 200;
  int repeats = 3;
  std::string data;
  double elastic_share = -1;  // -1: calibrate
  int scheduler_threads = 0;
};

Args Parse(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(fmt::format("flag {} needs a value", flag));
    const std::string value = argv[++i];
    if (flag == "--steps") args.steps = std::stoi(value);
    else if (flag == "--repeats") args.repeats = std::stoi(value);
    else if (flag == "--data") args.data = value;
    else if (flag == "--elastic-share") args.elastic_share = std::stod(value);
    else if (flag == "--scheduler-threads") args.scheduler_threads = std::stoi(value);
    else throw std::invalid_argument(fmt::format("unknown flag {}", flag));
  }
  if (args.steps < 1 || args.repeats < 1 || args.scheduler_threads < 0 || args.elastic_share > 1) {
    throw std::invalid_argument(
        fmt::format("--steps, --repeats must be >= 1, --scheduler-threads >= 0, --elastic-share <= 1; got {}, {}, {}, {}",
                    args.steps, args.repeats, args.scheduler_threads, args.elastic_share));
  }
  return args;
}

struct Batch {
  weir::Tensor images;
  weir::Tensor labels;
};

// Augments real MNIST batches (in file order, cycled) into fresh tensors, one batch per Next().
class AugmentingLoader {
 public:
  explicit AugmentingLoader(const weir::MnistSplit& train) : train_(train), random_(42) {
    // Gaussian of sigma 4, truncated at 3 sigma, normalised.
    constexpr double kSigma = 4.0;
    double sum = 0;
    for (int k = -kRadius; k <= kRadius; ++k) {
      kernel_[static_cast<std::size_t>(k + kRadius)] = static_cast<float>(std::exp(-0.5 * k * k / (kSigma * kSigma)));
      sum += kernel_[static_cast<std::size_t>(k + kRadius)];
    }
    for (float& weight : kernel_) weight = static_cast<float>(weight / sum);
  }

  void SetElasticShare(double share) { elastic_share_ = share; }
  double ElasticShare() const { return elastic_share_; }

  Batch Next() {
    const std::int64_t batches = train_.images.GetShape()[0];
    const std::int64_t index = next_++ % batches;
    Batch batch{weir::Tensor(weir::Shape{kBatch, 1, kSide, kSide}, weir::DType::kF32),
                weir::Tensor(weir::Shape{kBatch}, weir::DType::kI32)};
    const float* source = train_.images.Data<float>() + index * kBatch * kPixels;
    float* images = batch.images.Data<float>();
    for (int i = 0; i < kBatch; ++i) Augment(source + i * kPixels, images + i * kPixels);
    std::memcpy(batch.labels.Data<std::int32_t>(), train_.labels.Data<std::int32_t>() + index * kBatch,
                kBatch * sizeof(std::int32_t));
    return batch;
  }

 private:
  static constexpr int kRadius = 12;
  static constexpr float kAlpha = 34.f;
  static constexpr float kNoise = 0.05f;

  // A random field in [-1, 1), smoothed by the Gaussian along rows then columns (zero outside).
  void SmoothRandomField(std::array<float, kPixels>& field) {
    std::uniform_real_distribution<float> uniform(-1.f, 1.f);
    for (float& value : field) value = uniform(random_);
    for (int y = 0; y < kSide; ++y) {
      for (int x = 0; x < kSide; ++x) {
        float sum = 0;
        for (int k = std::max(-kRadius, -x); k <= std::min(kRadius, kSide - 1 - x); ++k) {
          sum += kernel_[static_cast<std::size_t>(k + kRadius)] * field[static_cast<std::size_t>(y * kSide + x + k)];
        }
        scratch_[static_cast<std::size_t>(y * kSide + x)] = sum;
      }
    }
    for (int y = 0; y < kSide; ++y) {
      for (int x = 0; x < kSide; ++x) {
        float sum = 0;
        for (int k = std::max(-kRadius, -y); k <= std::min(kRadius, kSide - 1 - y); ++k) {
          sum += kernel_[static_cast<std::size_t>(k + kRadius)] * scratch_[static_cast<std::size_t>((y + k) * kSide + x)];
        }
        field[static_cast<std::size_t>(y * kSide + x)] = kAlpha * sum;
      }
    }
  }

  static float Pixel(const float* image, int y, int x) {
    return (y < 0 || y >= kSide || x < 0 || x >= kSide) ? 0.f : image[y * kSide + x];
  }

  void Augment(const float* source, float* out) {
    std::uniform_int_distribution<int> shift(-2, 2);
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    std::normal_distribution<float> noise(0.f, kNoise);
    const int shift_x = shift(random_);
    const int shift_y = shift(random_);
    const bool elastic = coin(random_) < elastic_share_;
    if (elastic) {
      SmoothRandomField(dx_);
      SmoothRandomField(dy_);
    }
    for (int y = 0; y < kSide; ++y) {
      for (int x = 0; x < kSide; ++x) {
        const std::size_t at = static_cast<std::size_t>(y * kSide + x);
        float value;
        if (elastic) {
          // Bilinear sample at the displaced position.
          const float sx = static_cast<float>(x - shift_x) + dx_[at];
          const float sy = static_cast<float>(y - shift_y) + dy_[at];
          const int x0 = static_cast<int>(std::floor(sx));
          const int y0 = static_cast<int>(std::floor(sy));
          const float fx = sx - static_cast<float>(x0);
          const float fy = sy - static_cast<float>(y0);
          value = (1 - fy) * ((1 - fx) * Pixel(source, y0, x0) + fx * Pixel(source, y0, x0 + 1)) +
                  fy * ((1 - fx) * Pixel(source, y0 + 1, x0) + fx * Pixel(source, y0 + 1, x0 + 1));
        } else {
          value = Pixel(source, y - shift_y, x - shift_x);
        }
        out[at] = elastic ? std::clamp(value + noise(random_), 0.f, 1.f) : value;
      }
    }
  }

  const weir::MnistSplit& train_;
  std::mt19937 random_;
  std::array<float, 2 * kRadius + 1> kernel_{};
  std::array<float, kPixels> dx_{};
  std::array<float, kPixels> dy_{};
  std::array<float, kPixels> scratch_{};
  double elastic_share_ = 0;
  std::int64_t next_ = 0;
};

double Seconds(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Seconds per batch that the loader takes, over `batches` batches.
double LoaderSeconds(AugmentingLoader& loader, int batches) {
  const auto start = Clock::now();
  for (int i = 0; i < batches; ++i) loader.Next();
  return Seconds(start) / batches;
}

}  // namespace

int main(int argc, char** argv) try {
  const Args args = Parse(argc, argv);
  const weir::Mnist mnist = weir::LoadMnist(kBatch, args.data);
  const weir::Job train = bench::TrainJob("mlp");
  weir::SessionOptions options;
  options.scheduler_threads = args.scheduler_threads;
  weir::Session session(options);
  session.Compile(train);
  AugmentingLoader loader(mnist.train);

  // Warm up, then calibrate: the train step alone (pre-loaded batches) and the loader alone at no
  // and at full elastic share; the share is interpolated so that a batch takes about one step.
  std::vector<Batch> preloaded;
  for (int i = 0; i < 8; ++i) preloaded.push_back(loader.Next());
  double loss = 0;
  for (int i = 0; i < 30; ++i) loss = bench::MeanLoss(session.Call(train, {preloaded[i % 8].images, preloaded[i % 8].labels}));
  std::vector<double> step_samples;
  for (int r = 0; r < 3; ++r) {
    const auto start = Clock::now();
    for (int i = 0; i < 50; ++i) session.Call(train, {preloaded[i % 8].images, preloaded[i % 8].labels});
    step_samples.push_back(Seconds(start) / 50);
  }
  const double step_s = Median(step_samples);
  if (args.elastic_share >= 0) {
    loader.SetElasticShare(args.elastic_share);
  } else {
    loader.SetElasticShare(0);
    const double plain_s = LoaderSeconds(loader, 20);
    loader.SetElasticShare(1);
    const double elastic_s = LoaderSeconds(loader, 20);
    loader.SetElasticShare(std::clamp((step_s - plain_s) / (elastic_s - plain_s), 0.0, 1.0));
  }
  const double loader_s = LoaderSeconds(loader, 50);

  std::vector<double> sync_s, async_s;
  int callbacks = 0;
  for (int r = 0; r < args.repeats; ++r) {
    auto start = Clock::now();
    for (int i = 0; i < args.steps; ++i) {
      const Batch batch = loader.Next();
      loss = bench::MeanLoss(session.Call(train, {batch.images, batch.labels}));
    }
    sync_s.push_back(Seconds(start));

    start = Clock::now();
    for (int i = 0; i < args.steps; ++i) {
      const Batch batch = loader.Next();  // fresh tensors: the call keeps them until it completes
      session.CallAsync(train, {batch.images, batch.labels}, [&loss, &callbacks](weir::CallResult result) {
        result.ThrowIfError();
        loss = bench::MeanLoss(result.outputs);  // callbacks run one at a time, in call order
        ++callbacks;
      });
    }
    session.Sync();
    async_s.push_back(Seconds(start));
  }
  if (callbacks != args.steps * args.repeats) {
    throw std::runtime_error(fmt::format("{} async calls, {} callbacks", args.steps * args.repeats, callbacks));
  }
  if (!std::isfinite(loss)) throw std::runtime_error(fmt::format("loss is {}", loss));

  const double sync_med = Median(sync_s);
  const double async_med = Median(async_s);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  fmt::print("weir async_pipeline: MLP, batch {}, real MNIST augmented on the host; {} steps per run, median of {}\n",
             kBatch, args.steps, args.repeats);
  fmt::print("  train step alone {:.3f} ms, loader alone {:.3f} ms per batch (elastic share {:.2f})\n", 1e3 * step_s,
             1e3 * loader_s, loader.ElasticShare());
  fmt::print("  sync  (Call):      {:8.1f} steps/s  {:.3f} ms/step\n", args.steps / sync_med, 1e3 * sync_med / args.steps);
  fmt::print("  async (CallAsync): {:8.1f} steps/s  {:.3f} ms/step\n", args.steps / async_med,
             1e3 * async_med / args.steps);
  fmt::print("  async speed-up {:.2f}x (target >= 1.3x; final loss {:.4f})\n", sync_med / async_med, loss);
  fmt::print(
      "{{\"bench\": \"async_pipeline\", \"impl\": \"weir_cpp\", \"steps\": {}, \"repeats\": {}, \"step_ms\": {:.4f}, "
      "\"loader_ms\": {:.4f}, \"elastic_share\": {:.3f}, \"sync_steps_per_s\": {:.2f}, \"async_steps_per_s\": {:.2f}, "
      "\"async_speedup\": {:.4f}, \"final_loss\": {:.4f}, \"peak_rss_mb\": {:.1f}}}\n",
      args.steps, args.repeats, 1e3 * step_s, 1e3 * loader_s, loader.ElasticShare(), args.steps / sync_med,
      args.steps / async_med, sync_med / async_med, loss, static_cast<double>(usage.ru_maxrss) / 1024.0);
  return 0;
} catch (const std::exception& error) {
  std::fprintf(stderr, "async_pipeline: %s\n", error.what());
  return 1;
}
