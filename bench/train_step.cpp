// Train steps and inference calls per second of the seeds' MNIST MLP or LeNet, of ResNet-50 or of BERT
// (bench_models.hpp), through Weir's C++ API, on random data (MNIST models: batch 100; ResNet-50: batch
// 64 of 224x224 images; BERT-base: batch 32 of sequences of 128). Timed loops: sync train calls (1 in
// flight), async train calls (up to 8 in flight, then Sync) and sync inference calls (logits -> argmax;
// BERT: the pooled output).
// The PyTorch peer is bench/pytorch_models.py; bench/compare_pytorch.py runs both on the CPU,
// bench/gpu_step.py on a GPU.
//
// Usage: train_step [--model mlp|lenet|resnet50|bert] [--batch B] [--image-size S] (resnet50)
//                   [--seq L] [--bert-layers N] (bert: sequences of L tokens, default 128; N layers, default 12)
//                   [--steps N] [--repeats R] [--warmup W]
//                   [--scheduler-threads T] (0 = default) [--no-async] [--profile]
//                   [--gpu] [--no-stream-graphs] [--no-lend] [--no-commit] [--copy-streams] [--nchw | --nhwc] [--amp] [--tf32]
//                   [--no-infer]
//                   [--trace FILE]
//                   [--cpu-device-streams]
// --gpu: the jobs run on one GPU (SessionOptions::gpu_devices = 1; fails rather than fall back to the CPU);
// --no-stream-graphs: an actor and a launch per kernel instead of one CUDA graph per stream.
// --no-lend: every executor an actor of the runtime's threads (SessionOptions::lend_executors off), where
// by default a GPU job's executors run on the threads that hand them work.
// --no-commit: the updates do not wait for a commit (SessionOptions::commit_before_writes off): on a GPU
// the step is one CUDA graph instead of two with a hand-off to the host between, and a failed call may
// have applied its updates.
// --copy-streams: every copy between host and GPU on the copy streams (SessionOptions::copy_stream_bytes
// = 0) instead of the small ones in the compute stream's graph.
// --no-infer: train steps only (a profiler's view of the train step, bench/kernel_times.py).
// --cpu-device-streams: on the CPU, kernels run the way GPU kernels do (SessionOptions::async_cpu_streams):
// submitted to a stream, completed through its poller (with WEIR_CPU_STREAM_LATENCY_US, a stand-in for
// a GPU's device time).
// --nchw / --nhwc: the convolutions run in NCHW as written / in NHWC (JobConfig::channels_last_convolutions
// off / on); by default NHWC on the CPU, NCHW on a GPU, as the Python front end chooses.
// --amp: mixed precision (JobConfig::mixed_precision: bf16 on a CPU that has it, f16 on a GPU).
// --tf32: on a GPU, f32 matmuls and convolutions may use TF32 tensor cores (SessionOptions::tensor_float_32).
// --profile: after the timed runs, one more sync train run and one inference run under the
// session's profiler, whose tables (per-actor busy time, call latency; then per op type: actors,
// busy ms a call and share, the view that shows which kind of op a step waits on) go to stderr.
// --trace FILE: after the timed runs, 20 more sync train steps under the session's timeline trace,
// written to FILE (Chrome trace format: each actor's firings, a device act's submission, device
// work and completion, the calls).
// Each repeat times N calls of each kind; the figures are medians over the repeats. Last line: JSON.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench_models.hpp"
#include "weir/weir.hpp"

namespace {

using Clock = std::chrono::steady_clock;

using bench::MeanLoss;
// Distinct random batches, cycled, so consecutive steps do not see the same data.
constexpr int kPoolBatches = 8;
constexpr int kMaxCallsInFlight = 8;

struct Args {
  std::string model = "mlp";
  int batch = 0;       // 0: the model's
  int image_size = 0;  // 0: the model's
  int seq = 128;       // bert
  int bert_layers = 12;
  int steps = -1;    // -1: 200 for the MLP, 20 for LeNet, 10 for ResNet-50
  int repeats = 5;
  int warmup = -1;   // -1: max(steps / 5, 20 for the MLP, 3 otherwise)
  int scheduler_threads = 0;
  bool async = true;
  bool profile = false;
  bool gpu = false;
  bool stream_graphs = true;
  bool lend_executors = true;
  bool commit = true;
  bool copy_streams = false;
  bool cpu_device_streams = false;
  bool nchw = false;
  bool nhwc = false;
  bool amp = false;
  bool tf32 = false;
  bool infer = true;
  std::string trace;  // empty: no trace
};

// Per job, the kernels' busy time summed by op type, busiest first: how many actors of the type, busy
// ms a call, and the share of the job's busy time.
std::string ByOpType(const weir::Profile& profile) {
  std::string out;
  for (const weir::JobProfile& job : profile.jobs) {
    if (job.calls == 0) continue;
    std::map<std::string, std::pair<int, double>> types;  // op type -> (actors, busy seconds)
    for (const weir::ActorProfile& actor : job.actors) {
      if (actor.kind != "kernel" || actor.firings == 0) continue;
      auto& [actors, seconds] = types[actor.op_type];
      ++actors;
      seconds += actor.busy_seconds;
    }
    std::vector<std::pair<std::string, std::pair<int, double>>> rows(types.begin(), types.end());
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
    const double busy = job.BusySeconds();
    out += fmt::format("job '{}', kernels by op type:\n  {:<34} {:>7} {:>10} {:>7}\n", job.job, "op type", "actors",
                       "ms a call", "share");
    for (const auto& [type, figures] : rows) {
      out += fmt::format("  {:<34} {:>7} {:>10.3f} {:>6.1f}%\n", type, figures.first,
                         figures.second * 1e3 / static_cast<double>(job.calls), busy > 0 ? 100 * figures.second / busy : 0.0);
    }
  }
  return out;
}

Args Parse(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    // Switches: each sets one field of Args.
    struct Switch {
      const char* name;
      bool Args::*field;
      bool value;
    };
    static constexpr Switch kSwitches[] = {
        {"--no-async", &Args::async, false},         {"--profile", &Args::profile, true},
        {"--gpu", &Args::gpu, true},                 {"--no-stream-graphs", &Args::stream_graphs, false},
        {"--no-infer", &Args::infer, false},         {"--copy-streams", &Args::copy_streams, true},
        {"--nchw", &Args::nchw, true},               {"--nhwc", &Args::nhwc, true},     {"--cpu-device-streams", &Args::cpu_device_streams, true},
        {"--amp", &Args::amp, true},                 {"--tf32", &Args::tf32, true},
        {"--no-lend", &Args::lend_executors, false}, {"--no-commit", &Args::commit, false},
    };
    const auto it = std::find_if(std::begin(kSwitches), std::end(kSwitches), [&](const Switch& s) { return flag == s.name; });
    if (it != std::end(kSwitches)) {
      args.*(it->field) = it->value;
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument(fmt::format("flag {} needs a value", flag));
    const std::string value = argv[++i];
    if (flag == "--model") args.model = value;
    else if (flag == "--batch") args.batch = std::stoi(value);
    else if (flag == "--image-size") args.image_size = std::stoi(value);
    else if (flag == "--seq") args.seq = std::stoi(value);
    else if (flag == "--bert-layers") args.bert_layers = std::stoi(value);
    else if (flag == "--steps") args.steps = std::stoi(value);
    else if (flag == "--repeats") args.repeats = std::stoi(value);
    else if (flag == "--warmup") args.warmup = std::stoi(value);
    else if (flag == "--scheduler-threads") args.scheduler_threads = std::stoi(value);
    else if (flag == "--trace") args.trace = value;
    else throw std::invalid_argument(fmt::format("unknown flag {}", flag));
  }
  if (args.nchw && args.nhwc) throw std::invalid_argument("--nchw and --nhwc: expected one of them, got both");
  bench::SpecOf(args.model, args.batch, args.image_size);  // throws on a bad model, batch or size
  const bench::BertSizes bert;
  if (args.model == "bert" && (args.seq <= bert.predictions || args.seq > bert.max_position || args.bert_layers < 1)) {
    throw std::invalid_argument(fmt::format("--seq: expected ({}, {}], --bert-layers >= 1; got {}, {}", bert.predictions,
                                            bert.max_position, args.seq, args.bert_layers));
  }
  const bool mlp = args.model == "mlp";
  if (args.steps == -1) args.steps = mlp ? 200 : args.model == "lenet" ? 20 : 10;
  if (args.steps < 1 || args.repeats < 1 || args.scheduler_threads < 0) {
    throw std::invalid_argument(fmt::format("--steps, --repeats must be >= 1, --scheduler-threads >= 0; got {}, {}, {}",
                                            args.steps, args.repeats, args.scheduler_threads));
  }
  if (args.warmup < 0) args.warmup = std::max(mlp ? 20 : 3, args.steps / 5);
  return args;
}

// A batch: the train job's inputs; the inference job takes the first bench::InferInputs of them.
using Batch = std::vector<weir::Tensor>;

std::vector<Batch> RandomBatches(const bench::ModelSpec& spec) {
  std::mt19937 random(1234);
  std::vector<Batch> batches;
  for (int b = 0; b < kPoolBatches; ++b) batches.push_back(bench::RandomInputs(spec, random));
  return batches;
}

// The three timed loops; each returns seconds for `calls` calls.
class Runner {
 public:
  Runner(weir::Session& session, const bench::ModelSpec& spec, const weir::Job& train, const weir::Job& infer)
      : session_(session), batch_(spec.batch), infer_inputs_(bench::InferInputs(spec)), train_(train), infer_(infer),
        batches_(RandomBatches(spec)) {}

  double TrainSync(int calls) {
    const auto start = Clock::now();
    for (int i = 0; i < calls; ++i) {
      const Batch& batch = batches_[static_cast<std::size_t>(i % kPoolBatches)];
      last_loss_ = MeanLoss(session_.Call(train_, batch));
    }
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  // The session admits at most kMaxCallsInFlight calls; CallAsync blocks while that many are pending.
  double TrainAsync(int calls) {
    int done = 0;
    const auto start = Clock::now();
    for (int i = 0; i < calls; ++i) {
      const Batch& batch = batches_[static_cast<std::size_t>(i % kPoolBatches)];
      session_.CallAsync(train_, batch, [this, &done](weir::CallResult result) {
        result.ThrowIfError();
        last_loss_ = MeanLoss(result.outputs);  // callbacks run one at a time, in call order
        ++done;
      });
    }
    session_.Sync();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (done != calls) throw std::runtime_error(fmt::format("{} async train calls, {} callbacks", calls, done));
    return seconds;
  }

  double Infer(int calls) {
    const auto start = Clock::now();
    for (int i = 0; i < calls; ++i) {
      const Batch& batch = batches_[static_cast<std::size_t>(i % kPoolBatches)];
      const weir::Outputs out = session_.Call(infer_, Batch(batch.begin(), batch.begin() + infer_inputs_));
      if (out["predictions"].GetShape()[0] != batch_) throw std::runtime_error("inference: wrong output size");
    }
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  double LastLoss() const { return last_loss_; }

 private:
  weir::Session& session_;
  std::int64_t batch_;
  std::ptrdiff_t infer_inputs_;
  const weir::Job& train_;
  const weir::Job& infer_;
  std::vector<Batch> batches_;
  double last_loss_ = 0;
};

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// CPU seconds of the whole process (every thread, spin-waits included) so far.
double ProcessCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double PeakRssMb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace

int main(int argc, char** argv) try {
  const Args args = Parse(argc, argv);
  std::optional<weir::JobConfig::MixedPrecision> mixed;
  if (args.amp) {
    const weir::Device::Kind device = args.gpu ? weir::Device::Kind::kCuda : weir::Device::Kind::kCpu;
    const std::optional<weir::DType> dtype = weir::MixedPrecisionDType(device);
    if (!dtype) throw std::invalid_argument("--amp: this CPU has no native bf16 (AVX512_BF16 or AMX)");
    mixed = weir::JobConfig::MixedPrecision{.dtype = *dtype, .device = device};
  }
  const bool channels_last = args.nhwc || (!args.nchw && !args.gpu);
  bench::ModelSpec spec = bench::SpecOf(args.model, args.batch, args.image_size);
  spec.seq = args.seq;
  spec.bert.layers = args.bert_layers;
  const weir::Job train = bench::TrainJob(spec, channels_last, mixed);
  const weir::Job infer = bench::InferJob(spec, channels_last, mixed);
  weir::SessionOptions options;
  options.scheduler_threads = args.scheduler_threads;
  options.max_calls_in_flight = kMaxCallsInFlight;
  options.gpu_devices = args.gpu ? 1 : 0;
  options.stream_graphs = args.stream_graphs;
  options.lend_executors = args.lend_executors;
  options.commit_before_writes = args.commit;
  options.async_cpu_streams = args.cpu_device_streams;
  options.tensor_float_32 = args.tf32;
  if (args.copy_streams) options.copy_stream_bytes = 0;
  if (args.gpu && weir::VisibleGpus() == 0) throw std::runtime_error("--gpu: no GPU visible to Weir");
  weir::Session session(options);
  session.Compile(train);
  if (args.infer) session.Compile(infer);
  Runner runner(session, spec, train, infer);

  runner.TrainSync(args.warmup);
  if (args.async) runner.TrainAsync(args.warmup);
  if (args.infer) runner.Infer(args.warmup);

  // Seconds per repeat for sync train, async train, inference; the kinds alternate within a repeat.
  // host_sync: process CPU seconds over the sync train runs (the host's cost of a step).
  std::vector<double> train_sync, train_async, inference, host_sync;
  for (int r = 0; r < args.repeats; ++r) {
    const double cpu_start = ProcessCpuSeconds();
    train_sync.push_back(runner.TrainSync(args.steps));
    host_sync.push_back(ProcessCpuSeconds() - cpu_start);
    if (args.async) train_async.push_back(runner.TrainAsync(args.steps));
    if (args.infer) inference.push_back(runner.Infer(args.steps));
  }
  if (args.profile) {
    session.StartProfiling();
    runner.TrainSync(args.steps);
    if (args.infer) runner.Infer(args.steps);
    const weir::Profile profile = session.StopProfiling();
    std::fputs(profile.Format().c_str(), stderr);
    std::fputs(ByOpType(profile).c_str(), stderr);
  }
  if (!args.trace.empty()) {
    session.StartTrace();
    runner.TrainSync(20);
    session.StopTrace(args.trace);
  }
  if (!std::isfinite(runner.LastLoss())) throw std::runtime_error(fmt::format("loss is {}", runner.LastLoss()));

  const double steps = args.steps;
  const double sync_s = Median(train_sync);
  const std::string threads = args.scheduler_threads == 0 ? "default" : std::to_string(args.scheduler_threads);
  const std::string examples = args.model == "bert" ? fmt::format("sequences of {}, {} layers", spec.seq, spec.bert.layers)
                                                   : fmt::format("{}x{}", spec.image_size, spec.image_size);
  fmt::print("weir train_step {}: batch {} of {}, {} steps per run, median of {} runs, scheduler threads {}\n",
             args.model, spec.batch, examples, args.steps, args.repeats, threads);
  fmt::print("{:<28} {:>10} {:>10}\n", "", "per s", "ms");
  const double host_s = Median(host_sync);
  fmt::print("{:<28} {:>10.1f} {:>10.3f}\n", "train step, sync", steps / sync_s, 1e3 * sync_s / steps);
  fmt::print("{:<28} {:>10} {:>10.3f}\n", "host CPU per sync step", "", 1e3 * host_s / steps);
  fmt::print("{:<28} {:>10.1f}\n", "examples per s, sync", steps * static_cast<double>(spec.batch) / sync_s);
  std::string async_json;
  if (args.async) {
    const double async_s = Median(train_async);
    fmt::print("{:<28} {:>10.1f} {:>10.3f}\n", "train step, async (8)", steps / async_s, 1e3 * async_s / steps);
    async_json = fmt::format("\"train_async_steps_per_s\": {:.2f}, \"train_async_ms_per_step\": {:.4f}, ",
                             steps / async_s, 1e3 * async_s / steps);
  }
  std::string infer_json;
  if (args.infer) {
    const double infer_s = Median(inference);
    fmt::print("{:<28} {:>10.1f} {:>10.3f}\n", "inference, sync", steps / infer_s, 1e3 * infer_s / steps);
    infer_json = fmt::format("\"infer_calls_per_s\": {:.2f}, \"infer_ms_per_call\": {:.4f}, ", steps / infer_s,
                             1e3 * infer_s / steps);
  }
  fmt::print(
      "{{\"bench\": \"train_step\", \"impl\": \"weir_cpp\", \"model\": \"{}\", \"batch\": {}, \"image_size\": {}, \"steps\": {}, "
      "\"repeats\": {}, \"scheduler_threads\": {}, \"device\": \"{}\", \"stream_graphs\": {}, \"lend_executors\": {}, \"commit\": {}, \"train_steps_per_s\": {:.2f}, "
      "\"train_ms_per_step\": {:.4f}, \"host_us_per_step\": {:.2f}, "
      "{}{}\"final_loss\": {:.4f}, \"peak_rss_mb\": {:.1f}}}\n",
      args.model, spec.batch, spec.image_size, args.steps, args.repeats, args.scheduler_threads, args.gpu ? "gpu" : "cpu",
      args.stream_graphs, args.lend_executors, args.commit, steps / sync_s, 1e3 * sync_s / steps, 1e6 * host_s / steps,
      async_json, infer_json, runner.LastLoss(), PeakRssMb());
  return 0;
} catch (const std::exception& error) {
  std::fprintf(stderr, "train_step: %s\n", error.what());
  return 1;
}
