#pragma once
/// \file Variable initializers: OneFlow's `flow.*_initializer` family as typed descriptions, and the
/// deterministic CPU fill that gives a variable its first value.
#include <cstdint>
#include <optional>
#include <string>

#include "weir/dtype.hpp"
#include "weir/shape.hpp"
#include "weir/tensor.hpp"

namespace weir {

/// How a variable's first value is drawn. Build one with the factory functions below (named as
/// OneFlow's); only the fields of its `kind` are read.
struct Initializer {
  enum class Kind : std::uint8_t { kConstant, kRandomUniform, kRandomNormal, kTruncatedNormal, kVarianceScaling, kKaiming };
  /// Which fan a variance-scaling or Kaiming initializer divides by.
  enum class FanMode : std::uint8_t { kFanIn, kFanOut, kFanAvg };
  /// The distribution a variance-scaling or Kaiming initializer draws from (Kaiming: normal or uniform).
  enum class Distribution : std::uint8_t { kTruncatedNormal, kRandomNormal, kRandomUniform };
  /// Where a convolution kernel keeps its input channels: (out, in, h, w) or (out, h, w, in).
  enum class DataFormat : std::uint8_t { kChannelsFirst, kChannelsLast };

  Kind kind = Kind::kConstant;
  /// kConstant.
  double value = 0.0;
  /// kRandomUniform: U[minval, maxval).
  double minval = 0.0;
  double maxval = 1.0;
  /// kRandomNormal, kTruncatedNormal.
  double mean = 0.0;
  double stddev = 1.0;
  /// kVarianceScaling: the variance is scale / fan.
  double scale = 1.0;
  /// kVarianceScaling, kKaiming.
  FanMode mode = FanMode::kFanIn;
  Distribution distribution = Distribution::kTruncatedNormal;
  DataFormat data_format = DataFormat::kChannelsFirst;
  /// kKaiming: "leaky_relu", "relu", "tanh", "sigmoid" or "linear".
  std::string nonlinearity = "leaky_relu";
  double negative_slope = 0.0;
  /// Overrides the seed the session derives from the variable's name.
  std::optional<std::uint64_t> seed;

  friend bool operator==(const Initializer&, const Initializer&) = default;
};

/// Every element is `value`. The only initializer integer and bool variables accept.
Initializer ConstantInitializer(double value);
/// ConstantInitializer(0): OneFlow's default for biases.
Initializer ZerosInitializer();
/// ConstantInitializer(1).
Initializer OnesInitializer();
/// U[minval, maxval); on an integer dtype, integers uniform in [minval, maxval) (OneFlow's random_uniform_int).
Initializer RandomUniformInitializer(double minval = 0.0, double maxval = 1.0,
                                     std::optional<std::uint64_t> seed = std::nullopt);
/// N(mean, stddev²).
Initializer RandomNormalInitializer(double mean = 0.0, double stddev = 1.0,
                                    std::optional<std::uint64_t> seed = std::nullopt);
/// N(mean, stddev²), resampled until |x - mean| < 2·stddev (so the sample std is about 0.88·stddev).
Initializer TruncatedNormalInitializer(double mean = 0.0, double stddev = 1.0,
                                       std::optional<std::uint64_t> seed = std::nullopt);
/// VarianceScalingInitializer(1, kFanAvg, kRandomUniform, data_format).
Initializer GlorotUniformInitializer(Initializer::DataFormat data_format = Initializer::DataFormat::kChannelsFirst,
                                     std::optional<std::uint64_t> seed = std::nullopt);
/// Same as GlorotUniformInitializer.
Initializer XavierUniformInitializer(Initializer::DataFormat data_format = Initializer::DataFormat::kChannelsFirst,
                                     std::optional<std::uint64_t> seed = std::nullopt);
/// VarianceScalingInitializer(1, kFanAvg, kRandomNormal, data_format).
Initializer GlorotNormalInitializer(Initializer::DataFormat data_format = Initializer::DataFormat::kChannelsFirst,
                                    std::optional<std::uint64_t> seed = std::nullopt);
/// Same as GlorotNormalInitializer.
Initializer XavierNormalInitializer(Initializer::DataFormat data_format = Initializer::DataFormat::kChannelsFirst,
                                    std::optional<std::uint64_t> seed = std::nullopt);
/// s = scale / fan. kTruncatedNormal: std sqrt(s)/0.8796256610342398 (the 2σ truncation brings the sample
/// std back to sqrt(s)); kRandomNormal: std sqrt(s); kRandomUniform: U(±sqrt(3s)).
Initializer VarianceScalingInitializer(double scale = 1.0, Initializer::FanMode mode = Initializer::FanMode::kFanIn,
                                       Initializer::Distribution distribution = Initializer::Distribution::kTruncatedNormal,
                                       Initializer::DataFormat data_format = Initializer::DataFormat::kChannelsFirst,
                                       std::optional<std::uint64_t> seed = std::nullopt);
/// He et al.: std = gain / sqrt(fan); kRandomNormal: N(0, std²); kRandomUniform: U(±sqrt(3)·std).
/// gain: sqrt(2/(1+negative_slope²)) for leaky_relu, sqrt(2) for relu, 5/3 for tanh, 1 for sigmoid/linear.
Initializer KaimingInitializer(Initializer::Distribution distribution = Initializer::Distribution::kRandomNormal,
                               Initializer::FanMode mode = Initializer::FanMode::kFanIn,
                               std::string nonlinearity = "leaky_relu", double negative_slope = 0.0,
                               Initializer::DataFormat data_format = Initializer::DataFormat::kChannelsFirst,
                               std::optional<std::uint64_t> seed = std::nullopt);
/// A copy of `init` that draws from `seed` instead of the session's per-variable seed.
Initializer WithSeed(Initializer init, std::uint64_t seed);

/// Throws std::invalid_argument naming the initializer, the parameter, the expected and the received value.
void Validate(const Initializer& init);
/// Also rejects a random initializer for an integer or bool dtype, and a constant the dtype cannot hold.
void Validate(const Initializer& init, DType dtype);

/// OneFlow's fan of a variable shape: fan_in = prod(shape[1:]); fan_out = shape[0] × receptive field
/// (prod(shape[2:]) channels-first, prod(shape[1:-1]) channels-last); kFanAvg their mean.
/// Rank 1: fan_in = fan_out = shape[0]; rank 0: 1.
double Fan(const Shape& shape, Initializer::FanMode mode,
           Initializer::DataFormat data_format = Initializer::DataFormat::kChannelsFirst);

/// A CPU tensor of `shape` and `dtype` filled by `init`, drawing from `init.seed` if set, else from
/// `default_seed`. The same arguments give the same values on every platform: draws come from
/// std::mt19937_64 through Weir's own uniform and Box–Muller mappings, in row-major order, computed in
/// double and rounded to `dtype` (so f32 values are the f64 values rounded).
Tensor Initialize(const Initializer& init, const Shape& shape, DType dtype, std::uint64_t default_seed);
/// Initialize's values written into `tensor` (a CPU tensor, whose shape and dtype they take).
void InitializeInto(const Initializer& init, Tensor& tensor, std::uint64_t default_seed);

/// "truncated_normal(mean=0, stddev=0.1)", "variance_scaling(scale=1, mode=fan_avg, ...)"; for logs and errors.
std::string Describe(const Initializer& init);

}  // namespace weir
