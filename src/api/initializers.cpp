// Initializers: parameter checks, OneFlow's fan rules and a reproducible CPU fill.
#include "weir/initializers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

namespace weir {

namespace {

using Kind = Initializer::Kind;
using FanMode = Initializer::FanMode;
using Distribution = Initializer::Distribution;
using DataFormat = Initializer::DataFormat;

// The std of N(0, 1) truncated to (-2, 2); dividing by it makes the truncated sample std the target.
constexpr double kTruncatedNormalStdRatio = 0.8796256610342398;

std::string_view Name(FanMode mode) {
  switch (mode) {
    case FanMode::kFanIn: return "fan_in";
    case FanMode::kFanOut: return "fan_out";
    case FanMode::kFanAvg: return "fan_avg";
  }
  return "?";
}

std::string_view Name(Distribution distribution) {
  switch (distribution) {
    case Distribution::kTruncatedNormal: return "truncated_normal";
    case Distribution::kRandomNormal: return "random_normal";
    case Distribution::kRandomUniform: return "random_uniform";
  }
  return "?";
}

std::string_view Name(DataFormat data_format) {
  return data_format == DataFormat::kChannelsFirst ? "channels_first" : "channels_last";
}

// The name of the OneFlow factory, which errors lead with.
std::string_view FactoryName(Kind kind) {
  switch (kind) {
    case Kind::kConstant: return "constant_initializer";
    case Kind::kRandomUniform: return "random_uniform_initializer";
    case Kind::kRandomNormal: return "random_normal_initializer";
    case Kind::kTruncatedNormal: return "truncated_normal_initializer";
    case Kind::kVarianceScaling: return "variance_scaling_initializer";
    case Kind::kKaiming: return "kaiming_initializer";
  }
  return "initializer";
}

[[noreturn]] void ThrowBadParameter(const Initializer& init, std::string_view parameter, std::string_view expected,
                                    const std::string& got) {
  throw std::invalid_argument(
      fmt::format("[{}] {}: expected {}, got {}", FactoryName(init.kind), parameter, expected, got));
}

void CheckFinite(const Initializer& init, std::string_view parameter, double value) {
  if (!std::isfinite(value)) ThrowBadParameter(init, parameter, "a finite number", fmt::format("{}", value));
}

void CheckPositive(const Initializer& init, std::string_view parameter, double value) {
  if (!(value > 0.0) || !std::isfinite(value)) ThrowBadParameter(init, parameter, "> 0", fmt::format("{}", value));
}

// Returns the Kaiming gain, or nullopt for a nonlinearity OneFlow does not know.
std::optional<double> KaimingGain(std::string_view nonlinearity, double negative_slope) {
  if (nonlinearity == "leaky_relu") return std::sqrt(2.0 / (1.0 + negative_slope * negative_slope));
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "sigmoid" || nonlinearity == "linear") return 1.0;
  return std::nullopt;
}

// Reproducible draws: mt19937_64 is fully specified by the standard, while the standard
// distributions are not, so the mappings to [0, 1) and to N(0, 1) are ours.
class Sampler {
 public:
  explicit Sampler(std::uint64_t seed) : engine_(seed) {}

  // [0, 1) with the top 53 bits of one draw: every double the interval holds at that spacing.
  double Uniform01() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  // Box–Muller; the two normals of a pair are returned in turn.
  double StandardNormal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = 1.0 - Uniform01();  // (0, 1]: log stays finite
    const double u2 = Uniform01();
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * std::numbers::pi * u2;
    spare_ = radius * std::sin(angle);
    has_spare_ = true;
    return radius * std::cos(angle);
  }

  // N(0, 1) conditioned on |z| < 2, by rejection (about 4.6 % of draws are rejected).
  double TruncatedStandardNormal() {
    for (;;) {
      const double z = StandardNormal();
      if (std::abs(z) < 2.0) return z;
    }
  }

 private:
  std::mt19937_64 engine_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

// The draw one element gets, in double; the caller rounds it to the dtype.
struct Draw {
  Distribution distribution = Distribution::kRandomNormal;
  double location = 0.0;  // mean, or the uniform lower bound
  double spread = 1.0;    // stddev, or the uniform width

  double Next(Sampler& sampler) const {
    switch (distribution) {
      case Distribution::kTruncatedNormal: return location + spread * sampler.TruncatedStandardNormal();
      case Distribution::kRandomNormal: return location + spread * sampler.StandardNormal();
      case Distribution::kRandomUniform: return location + spread * sampler.Uniform01();
    }
    return location;
  }
};

Draw DrawFor(const Initializer& init, const Shape& shape) {
  switch (init.kind) {
    case Kind::kConstant: break;
    case Kind::kRandomUniform: return {Distribution::kRandomUniform, init.minval, init.maxval - init.minval};
    case Kind::kRandomNormal: return {Distribution::kRandomNormal, init.mean, init.stddev};
    case Kind::kTruncatedNormal: return {Distribution::kTruncatedNormal, init.mean, init.stddev};
    case Kind::kVarianceScaling: {
      const double variance = init.scale / Fan(shape, init.mode, init.data_format);
      switch (init.distribution) {
        case Distribution::kTruncatedNormal:
          return {Distribution::kTruncatedNormal, 0.0, std::sqrt(variance) / kTruncatedNormalStdRatio};
        case Distribution::kRandomNormal: return {Distribution::kRandomNormal, 0.0, std::sqrt(variance)};
        case Distribution::kRandomUniform: {
          const double limit = std::sqrt(3.0 * variance);
          return {Distribution::kRandomUniform, -limit, 2.0 * limit};
        }
      }
      break;
    }
    case Kind::kKaiming: {
      const double stddev =
          *KaimingGain(init.nonlinearity, init.negative_slope) / std::sqrt(Fan(shape, init.mode, init.data_format));
      if (init.distribution == Distribution::kRandomUniform) {
        const double limit = std::sqrt(3.0) * stddev;
        return {Distribution::kRandomUniform, -limit, 2.0 * limit};
      }
      return {Distribution::kRandomNormal, 0.0, stddev};
    }
  }
  return {};
}

template <typename T> void FillConstant(Tensor& tensor, double value) {
  T* data = tensor.Data<T>();
  const T converted = static_cast<T>(value);
  for (std::int64_t i = 0; i < tensor.NumElements(); ++i) data[i] = converted;
}

template <typename T> void FillRandom(Tensor& tensor, const Draw& draw, std::uint64_t seed) {
  Sampler sampler(seed);
  T* data = tensor.Data<T>();
  for (std::int64_t i = 0; i < tensor.NumElements(); ++i) data[i] = static_cast<T>(draw.Next(sampler));
}

// Integers uniform in [minval, maxval) (Validate checked both bounds fit T and minval < maxval).
template <typename T> void FillUniformIntegers(Tensor& tensor, const Initializer& init, std::uint64_t seed) {
  Sampler sampler(seed);
  const auto low = static_cast<std::int64_t>(init.minval);
  const auto count = static_cast<double>(static_cast<std::int64_t>(init.maxval) - low);
  T* data = tensor.Data<T>();
  for (std::int64_t i = 0; i < tensor.NumElements(); ++i) {
    // floor(u * count) < count for u < 1, but rounding of the product can reach it: clamp.
    const auto step = std::min(static_cast<std::int64_t>(sampler.Uniform01() * count), static_cast<std::int64_t>(count) - 1);
    data[i] = static_cast<T>(low + step);
  }
}

// Whether an integer-like dtype holds `value` exactly.
bool Representable(double value, DType dtype) {
  if (std::trunc(value) != value) return false;
  switch (dtype) {
    case DType::kI32:
      return value >= std::numeric_limits<std::int32_t>::min() && value <= std::numeric_limits<std::int32_t>::max();
    case DType::kI64:
      // 2^63 itself is a double but no int64.
      return value >= -0x1.0p63 && value < 0x1.0p63;
    case DType::kU8: return value >= 0.0 && value <= 255.0;
    case DType::kI8: return value >= -128.0 && value <= 127.0;
    case DType::kBool: return value == 0.0 || value == 1.0;
    case DType::kF32:
    case DType::kF64:
    case DType::kF16:
    case DType::kBF16: return true;
    case DType::kTensorBuffer: return false;
  }
  return false;
}

}  // namespace

Initializer ConstantInitializer(double value) {
  Initializer init;
  init.kind = Kind::kConstant;
  init.value = value;
  Validate(init);
  return init;
}

Initializer ZerosInitializer() { return ConstantInitializer(0.0); }

Initializer OnesInitializer() { return ConstantInitializer(1.0); }

Initializer RandomUniformInitializer(double minval, double maxval, std::optional<std::uint64_t> seed) {
  Initializer init;
  init.kind = Kind::kRandomUniform;
  init.minval = minval;
  init.maxval = maxval;
  init.seed = seed;
  Validate(init);
  return init;
}

Initializer RandomNormalInitializer(double mean, double stddev, std::optional<std::uint64_t> seed) {
  Initializer init;
  init.kind = Kind::kRandomNormal;
  init.mean = mean;
  init.stddev = stddev;
  init.seed = seed;
  Validate(init);
  return init;
}

Initializer TruncatedNormalInitializer(double mean, double stddev, std::optional<std::uint64_t> seed) {
  Initializer init;
  init.kind = Kind::kTruncatedNormal;
  init.mean = mean;
  init.stddev = stddev;
  init.seed = seed;
  Validate(init);
  return init;
}

Initializer GlorotUniformInitializer(DataFormat data_format, std::optional<std::uint64_t> seed) {
  return VarianceScalingInitializer(1.0, FanMode::kFanAvg, Distribution::kRandomUniform, data_format, seed);
}

Initializer XavierUniformInitializer(DataFormat data_format, std::optional<std::uint64_t> seed) {
  return GlorotUniformInitializer(data_format, seed);
}

Initializer GlorotNormalInitializer(DataFormat data_format, std::optional<std::uint64_t> seed) {
  return VarianceScalingInitializer(1.0, FanMode::kFanAvg, Distribution::kRandomNormal, data_format, seed);
}

Initializer XavierNormalInitializer(DataFormat data_format, std::optional<std::uint64_t> seed) {
  return GlorotNormalInitializer(data_format, seed);
}

Initializer VarianceScalingInitializer(double scale, FanMode mode, Distribution distribution, DataFormat data_format,
                                       std::optional<std::uint64_t> seed) {
  Initializer init;
  init.kind = Kind::kVarianceScaling;
  init.scale = scale;
  init.mode = mode;
  init.distribution = distribution;
  init.data_format = data_format;
  init.seed = seed;
  Validate(init);
  return init;
}

Initializer KaimingInitializer(Distribution distribution, FanMode mode, std::string nonlinearity, double negative_slope,
                               DataFormat data_format, std::optional<std::uint64_t> seed) {
  Initializer init;
  init.kind = Kind::kKaiming;
  init.distribution = distribution;
  init.mode = mode;
  init.nonlinearity = std::move(nonlinearity);
  init.negative_slope = negative_slope;
  init.data_format = data_format;
  init.seed = seed;
  Validate(init);
  return init;
}

Initializer WithSeed(Initializer init, std::uint64_t seed) {
  init.seed = seed;
  return init;
}

void Validate(const Initializer& init) {
  switch (init.kind) {
    case Kind::kConstant: CheckFinite(init, "value", init.value); break;
    case Kind::kRandomUniform:
      CheckFinite(init, "minval", init.minval);
      CheckFinite(init, "maxval", init.maxval);
      if (init.minval > init.maxval) {
        ThrowBadParameter(init, "maxval", fmt::format(">= minval ({})", init.minval), fmt::format("{}", init.maxval));
      }
      break;
    case Kind::kRandomNormal:
    case Kind::kTruncatedNormal:
      CheckFinite(init, "mean", init.mean);
      CheckPositive(init, "stddev", init.stddev);
      break;
    case Kind::kVarianceScaling: CheckPositive(init, "scale", init.scale); break;
    case Kind::kKaiming:
      if (init.distribution == Distribution::kTruncatedNormal) {
        ThrowBadParameter(init, "distribution", "random_normal or random_uniform", "truncated_normal");
      }
      CheckFinite(init, "negative_slope", init.negative_slope);
      if (!KaimingGain(init.nonlinearity, init.negative_slope)) {
        ThrowBadParameter(init, "nonlinearity", "one of leaky_relu, relu, tanh, sigmoid, linear",
                          fmt::format("'{}'", init.nonlinearity));
      }
      break;
  }
}

void Validate(const Initializer& init, DType dtype) {
  Validate(init);
  if (IsFloating(dtype)) return;
  if (init.kind == Kind::kRandomUniform && dtype != DType::kBool && dtype != DType::kTensorBuffer) {
    // OneFlow's random_uniform_int: integers in [minval, maxval), every one of which the dtype holds.
    if (!Representable(init.minval, dtype)) {
      ThrowBadParameter(init, "minval", fmt::format("an integer {} holds", dtype), fmt::format("{}", init.minval));
    }
    if (std::trunc(init.maxval) != init.maxval || (init.maxval > init.minval && !Representable(init.maxval - 1, dtype))) {
      ThrowBadParameter(init, "maxval", fmt::format("an integer one above a value {} holds (the range excludes it)", dtype),
                        fmt::format("{}", init.maxval));
    }
    if (!(init.minval < init.maxval)) {
      ThrowBadParameter(init, "maxval", fmt::format("> minval ({}) for integers in [minval, maxval)", init.minval),
                        fmt::format("{}", init.maxval));
    }
    return;
  }
  if (init.kind != Kind::kConstant) {
    throw std::invalid_argument(fmt::format("[{}] {} cannot fill dtype {}: only constant and random_uniform "
                                            "initializers support integer dtypes, only constant ones bool",
                                            FactoryName(init.kind), Describe(init), dtype));
  }
  if (!Representable(init.value, dtype)) {
    throw std::invalid_argument(fmt::format("[{}] value: expected a value {} can hold, got {}", FactoryName(init.kind),
                                            dtype, init.value));
  }
}

double Fan(const Shape& shape, FanMode mode, DataFormat data_format) {
  const auto& dims = shape.Dims();
  double fan_in = 1.0;
  double fan_out = 1.0;
  if (dims.size() == 1) {
    // A bias-like vector: no input axis to speak of, so both fans are its length (as Keras does).
    fan_in = fan_out = static_cast<double>(dims[0]);
  } else if (dims.size() >= 2) {
    for (std::size_t i = 1; i < dims.size(); ++i) fan_in *= static_cast<double>(dims[i]);
    const std::size_t first = data_format == DataFormat::kChannelsFirst ? 2 : 1;
    const std::size_t last = data_format == DataFormat::kChannelsFirst ? dims.size() : dims.size() - 1;
    fan_out = static_cast<double>(dims[0]);
    for (std::size_t i = first; i < last; ++i) fan_out *= static_cast<double>(dims[i]);
  }
  switch (mode) {
    case FanMode::kFanIn: return fan_in;
    case FanMode::kFanOut: return fan_out;
    case FanMode::kFanAvg: return (fan_in + fan_out) / 2.0;
  }
  return fan_in;
}

void InitializeInto(const Initializer& init, Tensor& tensor, std::uint64_t default_seed) {
  const DType dtype = tensor.GetDType();
  Validate(init, dtype);
  // Every fan is a product of dims, so a zero fan means there is nothing to fill (and nothing to divide).
  if (tensor.NumElements() == 0) return;
  if (init.kind == Kind::kConstant) {
    switch (dtype) {
      case DType::kF32: FillConstant<float>(tensor, init.value); break;
      case DType::kF64: FillConstant<double>(tensor, init.value); break;
      case DType::kI32: FillConstant<std::int32_t>(tensor, init.value); break;
      case DType::kI64: FillConstant<std::int64_t>(tensor, init.value); break;
      case DType::kU8: FillConstant<std::uint8_t>(tensor, init.value); break;
      case DType::kI8: FillConstant<std::int8_t>(tensor, init.value); break;
      case DType::kBool: FillConstant<bool>(tensor, init.value); break;
      case DType::kF16: FillConstant<float16>(tensor, init.value); break;
      case DType::kBF16: FillConstant<bfloat16>(tensor, init.value); break;
      case DType::kTensorBuffer: throw std::invalid_argument("[initializer] a tensor_buffer has no initial value");
    }
    return;
  }
  const Draw draw = DrawFor(init, tensor.GetShape());
  const std::uint64_t seed = init.seed.value_or(default_seed);
  switch (dtype) {
    case DType::kI32: FillUniformIntegers<std::int32_t>(tensor, init, seed); return;
    case DType::kI64: FillUniformIntegers<std::int64_t>(tensor, init, seed); return;
    case DType::kI8: FillUniformIntegers<std::int8_t>(tensor, init, seed); return;
    case DType::kU8: FillUniformIntegers<std::uint8_t>(tensor, init, seed); return;
    default: break;
  }
  switch (dtype) {
    case DType::kF64: FillRandom<double>(tensor, draw, seed); break;
    case DType::kF16: FillRandom<float16>(tensor, draw, seed); break;
    case DType::kBF16: FillRandom<bfloat16>(tensor, draw, seed); break;
    default: FillRandom<float>(tensor, draw, seed); break;  // Validate let only floating dtypes through
  }
}

Tensor Initialize(const Initializer& init, const Shape& shape, DType dtype, std::uint64_t default_seed) {
  Tensor tensor(shape, dtype);
  InitializeInto(init, tensor, default_seed);
  return tensor;
}

std::string Describe(const Initializer& init) {
  std::string out;
  switch (init.kind) {
    case Kind::kConstant: out = fmt::format("constant(value={})", init.value); break;
    case Kind::kRandomUniform: out = fmt::format("random_uniform(minval={}, maxval={}", init.minval, init.maxval); break;
    case Kind::kRandomNormal: out = fmt::format("random_normal(mean={}, stddev={}", init.mean, init.stddev); break;
    case Kind::kTruncatedNormal: out = fmt::format("truncated_normal(mean={}, stddev={}", init.mean, init.stddev); break;
    case Kind::kVarianceScaling:
      out = fmt::format("variance_scaling(scale={}, mode={}, distribution={}, data_format={}", init.scale,
                        Name(init.mode), Name(init.distribution), Name(init.data_format));
      break;
    case Kind::kKaiming:
      out = fmt::format("kaiming(distribution={}, mode={}, nonlinearity={}, negative_slope={}, data_format={}",
                        Name(init.distribution), Name(init.mode), init.nonlinearity, init.negative_slope,
                        Name(init.data_format));
      break;
  }
  if (init.kind == Kind::kConstant) return out;
  if (init.seed) out += fmt::format(", seed={}", *init.seed);
  return out + ")";
}

}  // namespace weir
