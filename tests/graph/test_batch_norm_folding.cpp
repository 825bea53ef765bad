// Batch-norm folding (graph/batch_norm_folding.hpp): which normalizations a predict job folds into
// the convolution before them, that the job computes what the unfolded one does within float
// rounding, and that the folded weights are computed once and kept across calls until they change.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "graph/job_graph.hpp"
#include "graph/planner.hpp"
#include "weir/weir.hpp"

using namespace weir;

namespace {

Tensor Random(Shape shape, unsigned seed, float low, float high) {
  Tensor t(std::move(shape), DType::kF32);
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> uniform(low, high);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) t.Data<float>()[i] = uniform(random);
  return t;
}

// conv → batch norm → relu, conv → batch norm + the first block's output → relu, as a ResNet's
// blocks, in `format`. `keep_convolutions`: the job also returns each convolution's result, which
// then cannot be folded away (the reference). `projection`: the shortcut is a convolution and batch
// norm of its own (both sides of the sum then end in a folded convolution).
Job ResidualPredictJob(const std::string& name, DataFormat format, bool keep_convolutions, bool projection = false) {
  JobBuilder builder(name);
  const bool nchw = format == DataFormat::kNCHW;
  const Blob images = builder.Placeholder("images", nchw ? Shape{2, 3, 6, 6} : Shape{2, 6, 6, 3});
  const auto conv = [&](const Blob& x, const std::string& layer) {
    const Blob y = Conv2DLayer(x, 4, {.kernel_size = {3, 3}, .padding = SamePadding(), .data_format = format,
                                      .use_bias = false, .kernel_initializer = TruncatedNormalInitializer(0.0, 0.3),
                                      .name = layer});
    if (keep_convolutions) builder.Output(layer, y);
    return y;
  };
  const auto norm = [&](const Blob& x, const std::string& layer) {
    return BatchNormalization(x, {.axis = nchw ? 1 : -1, .epsilon = 1e-3, .name = layer});
  };
  const Blob first = Relu(norm(conv(images, "conv1"), "bn1"));
  const Blob shortcut = projection ? norm(conv(first, "proj"), "bn_proj") : first;
  builder.Output("y", Relu(Add(norm(conv(first, "conv2"), "bn2"), shortcut)));
  return builder.Build();
}

int LiveOps(const Job& job, std::string_view type) {
  int count = 0;
  const auto plan = internal::CompilePlan(job.Graph(), {});
  for (const internal::TaskDesc& task : plan->tasks) {
    if (task.kind == internal::TaskKind::kKernel && task.op_type == type) ++count;
  }
  return count;
}

// Moving statistics and parameters far from their initial values, so that folding them matters.
void SetStatistics(Session& session, unsigned seed) {
  for (const char* layer : {"bn1", "bn2", "bn_proj"}) {
    const std::string prefix = layer;
    session.SetVariables({{prefix + "-gamma", Random(Shape{4}, seed++, 0.5f, 2.f)},
                          {prefix + "-beta", Random(Shape{4}, seed++, -1.f, 1.f)},
                          {prefix + "-moving_mean", Random(Shape{4}, seed++, -1.f, 1.f)},
                          {prefix + "-moving_variance", Random(Shape{4}, seed++, 0.2f, 3.f)}});
  }
}

// The folded job's output against the unfolded one's: float rounding apart, the same.
void CheckSame(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5).scale(1.0));
  }
}

}  // namespace

TEST_CASE("a predict job folds each batch norm after a convolution into it: same outputs, no normalization left") {
  for (DataFormat format : {DataFormat::kNCHW, DataFormat::kNHWC}) {
    CAPTURE(static_cast<int>(format));
    const std::string suffix = format == DataFormat::kNCHW ? "_nchw" : "_nhwc";
    const Job folded = ResidualPredictJob("folded" + suffix, format, false);
    const Job reference = ResidualPredictJob("reference" + suffix, format, true);
    // The convolutions now add the folded bias and apply the relu in one kernel, the second one also
    // the sum with the shortcut (channels last on the CPU, whatever the job's layout).
    CHECK(LiveOps(folded, "batch_norm") == 0);
    CHECK(LiveOps(folded, "conv2d_bias_act") == 2);
    CHECK(LiveOps(folded, "add") == 0);
    CHECK(LiveOps(reference, "batch_norm") == 2);

    Session session;
    session.Compile(reference);
    SetStatistics(session, 7);
    const Tensor images = Random(format == DataFormat::kNCHW ? Shape{2, 3, 6, 6} : Shape{2, 6, 6, 3}, 3, -1.f, 1.f);
    const std::vector<float> want = session.Call(reference, {images})[2].ToVector<float>();
    for (int call = 0; call < 3; ++call) CheckSame(session.Call(folded, {images})[0].ToVector<float>(), want);
  }
}

TEST_CASE("a sum of two folded convolutions goes into one of them") {
  const Job folded = ResidualPredictJob("projection_folded", DataFormat::kNCHW, false, true);
  const Job reference = ResidualPredictJob("projection_reference", DataFormat::kNCHW, true, true);
  CHECK(LiveOps(folded, "batch_norm") == 0);
  CHECK(LiveOps(folded, "conv2d_bias_act") == 3);
  CHECK(LiveOps(folded, "add") == 0);
  Session session;
  session.Compile(reference);
  SetStatistics(session, 5);
  const Tensor images = Random(Shape{2, 3, 6, 6}, 3, -1.f, 1.f);
  const std::vector<float> want = session.Call(reference, {images})[3].ToVector<float>();
  CheckSame(session.Call(folded, {images})[0].ToVector<float>(), want);
}

TEST_CASE("folded weights are kept across calls and computed again once the statistics change") {
  const Job folded = ResidualPredictJob("kept_folded", DataFormat::kNCHW, false);
  const Job reference = ResidualPredictJob("kept_reference", DataFormat::kNCHW, true);
  Session session;
  session.Compile(reference);
  const Tensor images = Random(Shape{2, 3, 6, 6}, 3, -1.f, 1.f);
  for (unsigned seed : {11u, 23u}) {
    SetStatistics(session, seed);
    const std::vector<float> want = session.Call(reference, {images})[2].ToVector<float>();
    session.StartProfiling();
    for (int call = 0; call < 4; ++call) CheckSame(session.Call(folded, {images})[0].ToVector<float>(), want);
    const Profile profile = session.StopProfiling();
    for (const JobProfile& job : profile.jobs) {
      for (const ActorProfile& actor : job.actors) {
        if (job.job != "kept_folded" || actor.name != "conv1/folded_weight") continue;
        CHECK(actor.firings == 4);
        CHECK(actor.kept >= 2);  // each slot computes once after the change
      }
    }
  }
}

TEST_CASE("folding leaves training-mode normalizations, convolutions read elsewhere and CUDA mixed precision alone") {
  JobBuilder training_mode("training_mode");
  const Blob x = training_mode.Placeholder("x", Shape{2, 3, 4, 4});
  const Blob y = Conv2DLayer(x, 4, {.kernel_size = {1, 1}, .use_bias = false, .name = "c"});
  training_mode.Output("y", BatchNormalization(y, {.axis = 1, .training = true, .name = "n"}));
  CHECK(LiveOps(training_mode.Build(), "batch_norm") == 1);

  JobBuilder shared("shared_conv");
  const Blob x2 = shared.Placeholder("x", Shape{2, 3, 4, 4});
  const Blob y2 = Conv2DLayer(x2, 4, {.kernel_size = {1, 1}, .use_bias = false, .name = "c"});
  shared.Output("y", Add(BatchNormalization(y2, {.axis = 1, .name = "n"}), y2));
  CHECK(LiveOps(shared.Build(), "batch_norm") == 1);

  // CUDA mixed precision keeps batch norm and relu in float16 instead.
  JobConfig cuda_mixed;
  cuda_mixed.mixed_precision = JobConfig::MixedPrecision{.dtype = DType::kF16, .device = Device::Kind::kCuda};
  JobBuilder gpu("cuda_mixed", JobType::kPredict, cuda_mixed);
  const Blob x3 = gpu.Placeholder("x", Shape{2, 3, 4, 4});
  gpu.Output("y", BatchNormalization(Conv2DLayer(x3, 4, {.kernel_size = {1, 1}, .use_bias = false, .name = "c"}),
                                     {.axis = 1, .name = "n"}));
  CHECK(LiveOps(gpu.Build(), "batch_norm") == 1);
}
