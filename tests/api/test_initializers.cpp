// Initializers: OneFlow's fans, reproducible draws, sample statistics of every distribution,
// constants for every dtype, and an error for every bad parameter.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <stdexcept>
#include <vector>

#include "weir/initializers.hpp"

using namespace weir;
using Distribution = Initializer::Distribution;
using FanMode = Initializer::FanMode;
using DataFormat = Initializer::DataFormat;

namespace {

std::vector<double> Values(const Tensor& tensor) {
  if (tensor.GetDType() == DType::kF32) {
    std::vector<float> floats = tensor.ToVector<float>();
    return {floats.begin(), floats.end()};
  }
  return tensor.ToVector<double>();
}

// The draws of `init` over several seeds, so that small shapes still give large samples.
std::vector<double> Pooled(const Initializer& init, const Shape& shape, int seeds, DType dtype = DType::kF32) {
  std::vector<double> all;
  for (int seed = 0; seed < seeds; ++seed) {
    std::vector<double> values = Values(Initialize(init, shape, dtype, 1000 + seed));
    all.insert(all.end(), values.begin(), values.end());
  }
  return all;
}

double Mean(const std::vector<double>& values) {
  double sum = 0.0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

double Stddev(const std::vector<double>& values) {
  const double mean = Mean(values);
  double sum = 0.0;
  for (double v : values) sum += (v - mean) * (v - mean);
  return std::sqrt(sum / static_cast<double>(values.size()));
}

double MaxAbsDeviation(const std::vector<double>& values, double center) {
  double max = 0.0;
  for (double v : values) max = std::max(max, std::abs(v - center));
  return max;
}

// Sample mean within 4 standard errors, sample std within 1.5 % (the std's standard error is
// about 0.16 % at 200,000 draws, so both bounds leave wide margins while catching a wrong formula).
void CheckMoments(const std::vector<double>& values, double mean, double stddev) {
  REQUIRE(values.size() >= 100000);
  CHECK(std::abs(Mean(values) - mean) < 4.0 * stddev / std::sqrt(static_cast<double>(values.size())));
  CHECK(Stddev(values) == doctest::Approx(stddev).epsilon(0.015));
}

constexpr double kTruncatedRatio = 0.8796256610342398;

}  // namespace

TEST_CASE("fans follow OneFlow: linear, convolution channels-first and channels-last, rank 1 and 0") {
  const Shape dense{512, 784};
  CHECK(Fan(dense, FanMode::kFanIn) == 784);
  CHECK(Fan(dense, FanMode::kFanOut) == 512);
  CHECK(Fan(dense, FanMode::kFanAvg) == 648);
  CHECK(Fan(dense, FanMode::kFanOut, DataFormat::kChannelsLast) == 512);

  const Shape conv_nchw{32, 1, 5, 5};  // (out, in, h, w)
  CHECK(Fan(conv_nchw, FanMode::kFanIn) == 25);
  CHECK(Fan(conv_nchw, FanMode::kFanOut) == 800);
  CHECK(Fan(conv_nchw, FanMode::kFanAvg) == 412.5);

  const Shape conv_nhwc{32, 5, 5, 1};  // (out, h, w, in)
  CHECK(Fan(conv_nhwc, FanMode::kFanIn, DataFormat::kChannelsLast) == 25);
  CHECK(Fan(conv_nhwc, FanMode::kFanOut, DataFormat::kChannelsLast) == 800);
  // Read as channels-first, the receptive field would be 5·1.
  CHECK(Fan(conv_nhwc, FanMode::kFanOut, DataFormat::kChannelsFirst) == 160);

  CHECK(Fan(Shape{10}, FanMode::kFanIn) == 10);
  CHECK(Fan(Shape{10}, FanMode::kFanOut) == 10);
  CHECK(Fan(Shape{}, FanMode::kFanAvg) == 1);
}

TEST_CASE("the same initializer, shape, dtype and seed give the same values; another seed others") {
  const Shape shape{64, 33};
  for (const Initializer& init :
       {RandomUniformInitializer(-1, 1), RandomNormalInitializer(0, 1), TruncatedNormalInitializer(0, 0.1),
        GlorotUniformInitializer(), GlorotNormalInitializer(), VarianceScalingInitializer(), KaimingInitializer()}) {
    CAPTURE(Describe(init));
    const std::vector<double> first = Values(Initialize(init, shape, DType::kF32, 42));
    CHECK(Values(Initialize(init, shape, DType::kF32, 42)) == first);
    const std::vector<double> other = Values(Initialize(init, shape, DType::kF32, 43));
    CHECK(other != first);
    // Nearly all elements differ, not just the first few.
    int equal = 0;
    for (std::size_t i = 0; i < first.size(); ++i) equal += first[i] == other[i];
    CHECK(equal < 5);
    // f32 values are the f64 draws rounded: one stream for both dtypes.
    const std::vector<double> doubles = Values(Initialize(init, shape, DType::kF64, 42));
    for (std::size_t i = 0; i < first.size(); ++i) REQUIRE(first[i] == static_cast<double>(static_cast<float>(doubles[i])));
  }
}

TEST_CASE("an initializer's own seed overrides the session's default seed") {
  const Shape shape{100};
  const Initializer seeded = RandomNormalInitializer(0, 1, 7);
  CHECK(seeded.seed == 7u);
  const std::vector<double> a = Values(Initialize(seeded, shape, DType::kF64, 1));
  CHECK(Values(Initialize(seeded, shape, DType::kF64, 2)) == a);
  CHECK(Values(Initialize(RandomNormalInitializer(), shape, DType::kF64, 7)) == a);
  CHECK(WithSeed(RandomNormalInitializer(), 7) == seeded);
  CHECK(Values(Initialize(WithSeed(RandomNormalInitializer(), 8), shape, DType::kF64, 7)) != a);
}

TEST_CASE("draws are mt19937_64 through fixed mappings, so values agree across standard libraries") {
  // The first output of mt19937_64 with seed 5489 is fixed by the C++ standard's reference value list.
  const std::uint64_t first_output = 14514284786278117030ull;
  const double u = static_cast<double>(first_output >> 11) * 0x1.0p-53;
  CHECK(Values(Initialize(RandomUniformInitializer(0, 1), Shape{1}, DType::kF64, 5489))[0] == u);
  CHECK(Values(Initialize(RandomUniformInitializer(2, 6), Shape{1}, DType::kF64, 5489))[0] == 2.0 + 4.0 * u);

  // Box–Muller on consecutive pairs (1 - u1, u2): the cosine branch first, then the sine branch.
  std::mt19937_64 engine(99);
  std::vector<double> expected;
  for (int pair = 0; pair < 3; ++pair) {
    const double u1 = 1.0 - static_cast<double>(engine() >> 11) * 0x1.0p-53;
    const double u2 = static_cast<double>(engine() >> 11) * 0x1.0p-53;
    const double radius = std::sqrt(-2.0 * std::log(u1));
    expected.push_back(3.0 + 0.5 * radius * std::cos(2.0 * std::numbers::pi * u2));
    expected.push_back(3.0 + 0.5 * radius * std::sin(2.0 * std::numbers::pi * u2));
  }
  const std::vector<double> got = Values(Initialize(RandomNormalInitializer(3, 0.5), Shape{2, 3}, DType::kF64, 99));
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-14));
}

TEST_CASE("random_uniform stays within [minval, maxval) with the uniform mean and std") {
  const std::vector<double> values = Values(Initialize(RandomUniformInitializer(-1, 3), Shape{400, 500}, DType::kF64, 5));
  CHECK(*std::min_element(values.begin(), values.end()) >= -1.0);
  CHECK(*std::max_element(values.begin(), values.end()) < 3.0);
  CheckMoments(values, 1.0, 4.0 / std::sqrt(12.0));
  // minval == maxval is a constant, not an error.
  for (double v : Values(Initialize(RandomUniformInitializer(2, 2), Shape{10}, DType::kF32, 5))) CHECK(v == 2.0);
}

TEST_CASE("random_normal has the requested mean and std") {
  CheckMoments(Values(Initialize(RandomNormalInitializer(2, 0.5), Shape{400, 500}, DType::kF32, 11)), 2.0, 0.5);
  CheckMoments(Values(Initialize(RandomNormalInitializer(), Shape{200000}, DType::kF64, 12)), 0.0, 1.0);
}

TEST_CASE("truncated_normal never goes 2 stddev from the mean and has the truncated std") {
  const double mean = 1.0;
  const double stddev = 0.1;
  for (DType dtype : {DType::kF32, DType::kF64}) {
    const std::vector<double> values =
        Values(Initialize(TruncatedNormalInitializer(mean, stddev), Shape{400, 500}, dtype, 13));
    // f32 rounding may land a value on the bound itself, never beyond it.
    const double bound = 2.0 * stddev * (dtype == DType::kF32 ? 1.0 + 1e-6 : 1.0);
    const double max_deviation = MaxAbsDeviation(values, mean);
    CHECK(max_deviation <= bound);
    CHECK(max_deviation > 1.99 * stddev);  // the whole (-2σ, 2σ) range is used
    CheckMoments(values, mean, stddev * kTruncatedRatio);
  }
}

TEST_CASE("variance_scaling draws with std sqrt(scale / fan) for a (512,784) kernel") {
  const Shape dense{512, 784};
  // Truncated normal (the default): the pre-truncation std is divided by 0.8796 so the sample std is sqrt(s).
  {
    const std::vector<double> values = Values(Initialize(VarianceScalingInitializer(), dense, DType::kF32, 21));
    const double target = std::sqrt(1.0 / 784);
    CheckMoments(values, 0.0, target);
    CHECK(MaxAbsDeviation(values, 0.0) <= 2.0 * target / kTruncatedRatio * (1 + 1e-6));
  }
  CheckMoments(Values(Initialize(VarianceScalingInitializer(2.0, FanMode::kFanOut, Distribution::kRandomNormal), dense,
                                 DType::kF32, 22)),
               0.0, std::sqrt(2.0 / 512));
  {
    const std::vector<double> values = Values(Initialize(
        VarianceScalingInitializer(3.0, FanMode::kFanAvg, Distribution::kRandomUniform), dense, DType::kF64, 23));
    const double limit = std::sqrt(3.0 * 3.0 / 648);
    CHECK(MaxAbsDeviation(values, 0.0) <= limit);
    CHECK(MaxAbsDeviation(values, 0.0) > 0.999 * limit);
    CheckMoments(values, 0.0, std::sqrt(3.0 / 648));
  }
}

TEST_CASE("glorot / xavier are variance_scaling(1, fan_avg) uniform and normal") {
  CHECK(GlorotUniformInitializer() ==
        VarianceScalingInitializer(1.0, FanMode::kFanAvg, Distribution::kRandomUniform, DataFormat::kChannelsFirst));
  CHECK(XavierUniformInitializer() == GlorotUniformInitializer());
  CHECK(GlorotNormalInitializer() ==
        VarianceScalingInitializer(1.0, FanMode::kFanAvg, Distribution::kRandomNormal, DataFormat::kChannelsFirst));
  CHECK(XavierNormalInitializer() == GlorotNormalInitializer());

  const Shape dense{512, 784};
  const std::vector<double> uniform = Values(Initialize(GlorotUniformInitializer(), dense, DType::kF32, 31));
  CHECK(MaxAbsDeviation(uniform, 0.0) <= std::sqrt(6.0 / (512 + 784)) * (1 + 1e-6));
  CheckMoments(uniform, 0.0, std::sqrt(1.0 / 648));
  CheckMoments(Values(Initialize(GlorotNormalInitializer(), dense, DType::kF32, 32)), 0.0, std::sqrt(1.0 / 648));
}

TEST_CASE("kaiming: std gain / sqrt(fan) for dense and convolution kernels, channels-first and channels-last") {
  // Default: normal, fan_in, leaky_relu with slope 0 (gain sqrt 2).
  CheckMoments(Values(Initialize(KaimingInitializer(), Shape{512, 784}, DType::kF32, 41)), 0.0,
               std::sqrt(2.0) / std::sqrt(784.0));

  // A LeNet-sized convolution (32,1,5,5): fan_in 25, fan_out 800; pooled over seeds for a large sample.
  const Shape conv{32, 1, 5, 5};
  {
    const std::vector<double> values =
        Pooled(KaimingInitializer(Distribution::kRandomUniform, FanMode::kFanOut, "relu"), conv, 200);
    const double stddev = std::sqrt(2.0) / std::sqrt(800.0);
    CHECK(MaxAbsDeviation(values, 0.0) <= std::sqrt(3.0) * stddev * (1 + 1e-6));
    CheckMoments(values, 0.0, stddev);
  }
  CheckMoments(Pooled(KaimingInitializer(Distribution::kRandomNormal, FanMode::kFanIn, "leaky_relu", 0.2), conv, 200),
               0.0, std::sqrt(2.0 / (1.0 + 0.04)) / 5.0);
  CheckMoments(Pooled(KaimingInitializer(Distribution::kRandomNormal, FanMode::kFanIn, "sigmoid"), conv, 200), 0.0,
               1.0 / 5.0);
  CheckMoments(Pooled(KaimingInitializer(Distribution::kRandomNormal, FanMode::kFanIn, "linear"), conv, 200), 0.0,
               1.0 / 5.0);

  // The same kernel stored channels-last, (32,5,5,1): fan_out is still 800 (and 160 if misread).
  const Shape conv_nhwc{32, 5, 5, 1};
  CheckMoments(Pooled(KaimingInitializer(Distribution::kRandomNormal, FanMode::kFanOut, "tanh", 0.0,
                                         DataFormat::kChannelsLast),
                      conv_nhwc, 200),
               0.0, (5.0 / 3.0) / std::sqrt(800.0));
  CheckMoments(Pooled(KaimingInitializer(Distribution::kRandomNormal, FanMode::kFanOut, "tanh", 0.0,
                                         DataFormat::kChannelsFirst),
                      conv_nhwc, 200),
               0.0, (5.0 / 3.0) / std::sqrt(160.0));
  // Variance scaling reads the data format the same way.
  CheckMoments(Pooled(VarianceScalingInitializer(1.0, FanMode::kFanAvg, Distribution::kRandomNormal,
                                                 DataFormat::kChannelsLast),
                      conv_nhwc, 200),
               0.0, std::sqrt(1.0 / 412.5));
}

TEST_CASE("constants fill every dtype; integer and bool variables take constants only") {
  for (double v : Values(Initialize(ZerosInitializer(), Shape{3, 4}, DType::kF32, 0))) CHECK(v == 0.0);
  for (double v : Values(Initialize(OnesInitializer(), Shape{5}, DType::kF64, 0))) CHECK(v == 1.0);
  for (double v : Values(Initialize(ConstantInitializer(-2.5), Shape{2, 2}, DType::kF32, 0))) CHECK(v == -2.5);
  CHECK(Initialize(OnesInitializer(), Shape{3}, DType::kI32, 0).ToVector<std::int32_t>() ==
        std::vector<std::int32_t>{1, 1, 1});
  CHECK(Initialize(ConstantInitializer(-7), Shape{2}, DType::kI64, 0).ToVector<std::int64_t>() ==
        std::vector<std::int64_t>{-7, -7});
  CHECK(Initialize(ConstantInitializer(255), Shape{2}, DType::kU8, 0).ToVector<std::uint8_t>() ==
        std::vector<std::uint8_t>{255, 255});
  const Tensor flags = Initialize(OnesInitializer(), Shape{2}, DType::kBool, 0);
  CHECK(flags.Data<bool>()[0]);
  CHECK(flags.Data<bool>()[1]);
  // Rank 0 and empty shapes.
  CHECK(Initialize(ConstantInitializer(3), Shape{}, DType::kF32, 0).ToVector<float>() == std::vector<float>{3});
  CHECK(Initialize(RandomNormalInitializer(), Shape{}, DType::kF32, 0).NumElements() == 1);
  CHECK(Initialize(KaimingInitializer(), Shape{0, 5}, DType::kF32, 0).NumElements() == 0);
  CHECK(Initialize(KaimingInitializer(), Shape{0, 5}, DType::kF32, 0).GetShape() == Shape{0, 5});

  CHECK_THROWS_WITH_AS(Initialize(RandomNormalInitializer(), Shape{3}, DType::kI32, 0),
                       "[random_normal_initializer] random_normal(mean=0, stddev=1) cannot fill dtype i32: only "
                       "constant and random_uniform initializers support integer dtypes, only constant ones bool",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Initialize(GlorotUniformInitializer(), Shape{3, 3}, DType::kU8, 0),
                       "[variance_scaling_initializer] variance_scaling(scale=1, mode=fan_avg, "
                       "distribution=random_uniform, data_format=channels_first) cannot fill dtype u8: only "
                       "constant and random_uniform initializers support integer dtypes, only constant ones bool",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Initialize(RandomUniformInitializer(0, 1), Shape{3}, DType::kBool, 0),
                       "[random_uniform_initializer] random_uniform(minval=0, maxval=1) cannot fill dtype bool: only "
                       "constant and random_uniform initializers support integer dtypes, only constant ones bool",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Initialize(RandomUniformInitializer(-200, 10), Shape{3}, DType::kI8, 0),
                       "[random_uniform_initializer] minval: expected an integer i8 holds, got -200",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Initialize(RandomUniformInitializer(0, 2.5), Shape{3}, DType::kI32, 0),
                       "[random_uniform_initializer] maxval: expected an integer one above a value i32 holds (the range "
                       "excludes it), got 2.5",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Initialize(RandomUniformInitializer(4, 4), Shape{3}, DType::kI64, 0),
                       "[random_uniform_initializer] maxval: expected > minval (4) for integers in [minval, maxval), "
                       "got 4",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Initialize(ConstantInitializer(0.5), Shape{3}, DType::kI32, 0),
                       "[constant_initializer] value: expected a value i32 can hold, got 0.5", std::invalid_argument);
  CHECK_THROWS_WITH_AS(Initialize(ConstantInitializer(3e9), Shape{3}, DType::kI32, 0),
                       "[constant_initializer] value: expected a value i32 can hold, got 3000000000",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Initialize(ConstantInitializer(256), Shape{3}, DType::kU8, 0),
                       "[constant_initializer] value: expected a value u8 can hold, got 256", std::invalid_argument);
  CHECK_THROWS_WITH_AS(Initialize(ConstantInitializer(-1), Shape{3}, DType::kU8, 0),
                       "[constant_initializer] value: expected a value u8 can hold, got -1", std::invalid_argument);
  CHECK_THROWS_WITH_AS(Initialize(ConstantInitializer(2), Shape{3}, DType::kBool, 0),
                       "[constant_initializer] value: expected a value bool can hold, got 2", std::invalid_argument);
}

TEST_CASE("random_uniform fills integer dtypes with integers uniform in [minval, maxval)") {
  const auto check = [](DType dtype, auto sample, double low, double high) {
    using T = decltype(sample);
    const Tensor filled = Initialize(RandomUniformInitializer(low, high), Shape{3000}, dtype, 5);
    std::vector<int> counts(static_cast<std::size_t>(high - low), 0);
    for (T value : filled.ToVector<T>()) {
      REQUIRE(static_cast<double>(value) >= low);
      REQUIRE(static_cast<double>(value) < high);
      ++counts[static_cast<std::size_t>(static_cast<double>(value) - low)];
    }
    // Every value of the range is drawn about equally often (3000 draws over at most 24 values).
    for (int count : counts) CHECK(count > 3000 / static_cast<int>(counts.size()) / 2);
  };
  check(DType::kI32, std::int32_t{}, -6, 18);
  check(DType::kI64, std::int64_t{}, 100, 103);
  check(DType::kI8, std::int8_t{}, -10, 10);
  check(DType::kU8, std::uint8_t{}, 250, 256);
  CHECK_THROWS_WITH_AS(Initialize(RandomUniformInitializer(0, 257), Shape{3}, DType::kU8, 0),
                       "[random_uniform_initializer] maxval: expected an integer one above a value u8 holds (the range "
                       "excludes it), got 257",
                       std::invalid_argument);
  // Reproducible by seed.
  CHECK(Initialize(RandomUniformInitializer(0, 100), Shape{8}, DType::kI32, 3).ToVector<std::int32_t>() ==
        Initialize(RandomUniformInitializer(0, 100), Shape{8}, DType::kI32, 3).ToVector<std::int32_t>());
}

TEST_CASE("Describe names the initializer and its parameters") {
  CHECK(Describe(TruncatedNormalInitializer(0, 0.1)) == "truncated_normal(mean=0, stddev=0.1)");
  CHECK(Describe(RandomNormalInitializer(0.5, 2, 7)) == "random_normal(mean=0.5, stddev=2, seed=7)");
  CHECK(Describe(RandomUniformInitializer()) == "random_uniform(minval=0, maxval=1)");
  CHECK(Describe(ZerosInitializer()) == "constant(value=0)");
  CHECK(Describe(ConstantInitializer(0.25)) == "constant(value=0.25)");
  CHECK(Describe(GlorotNormalInitializer(DataFormat::kChannelsLast)) ==
        "variance_scaling(scale=1, mode=fan_avg, distribution=random_normal, data_format=channels_last)");
  CHECK(Describe(KaimingInitializer()) ==
        "kaiming(distribution=random_normal, mode=fan_in, nonlinearity=leaky_relu, negative_slope=0, "
        "data_format=channels_first)");
}

TEST_CASE("every bad parameter is rejected with the initializer, the parameter, the expected and the received value") {
  CHECK_THROWS_WITH_AS(RandomNormalInitializer(0, 0), "[random_normal_initializer] stddev: expected > 0, got 0",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(RandomNormalInitializer(0, -1), "[random_normal_initializer] stddev: expected > 0, got -1",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(RandomNormalInitializer(0, NAN), "[random_normal_initializer] stddev: expected > 0, got nan",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(RandomNormalInitializer(INFINITY, 1),
                       "[random_normal_initializer] mean: expected a finite number, got inf", std::invalid_argument);
  CHECK_THROWS_WITH_AS(TruncatedNormalInitializer(0, -0.1),
                       "[truncated_normal_initializer] stddev: expected > 0, got -0.1", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RandomUniformInitializer(1, 0),
                       "[random_uniform_initializer] maxval: expected >= minval (1), got 0", std::invalid_argument);
  CHECK_THROWS_WITH_AS(RandomUniformInitializer(-INFINITY, 0),
                       "[random_uniform_initializer] minval: expected a finite number, got -inf",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ConstantInitializer(NAN), "[constant_initializer] value: expected a finite number, got nan",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(VarianceScalingInitializer(0), "[variance_scaling_initializer] scale: expected > 0, got 0",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(VarianceScalingInitializer(-2), "[variance_scaling_initializer] scale: expected > 0, got -2",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(KaimingInitializer(Distribution::kRandomNormal, FanMode::kFanIn, "selu"),
                       "[kaiming_initializer] nonlinearity: expected one of leaky_relu, relu, tanh, sigmoid, linear, "
                       "got 'selu'",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(KaimingInitializer(Distribution::kTruncatedNormal),
                       "[kaiming_initializer] distribution: expected random_normal or random_uniform, got "
                       "truncated_normal",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(KaimingInitializer(Distribution::kRandomNormal, FanMode::kFanIn, "leaky_relu", INFINITY),
                       "[kaiming_initializer] negative_slope: expected a finite number, got inf",
                       std::invalid_argument);

  // A description built by hand is checked when it is used.
  Initializer by_hand;
  by_hand.kind = Initializer::Kind::kTruncatedNormal;
  by_hand.stddev = -3;
  CHECK_THROWS_WITH_AS(Initialize(by_hand, Shape{2}, DType::kF32, 0),
                       "[truncated_normal_initializer] stddev: expected > 0, got -3", std::invalid_argument);
  CHECK_THROWS_WITH_AS(Validate(by_hand), "[truncated_normal_initializer] stddev: expected > 0, got -3",
                       std::invalid_argument);
}
