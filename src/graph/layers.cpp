// Layers: compositions of ops that create their own variables.
#include <fmt/format.h>

#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "kernels/attrs/dropout_attrs.hpp"
#include "weir/layers.hpp"
#include "weir/ops.hpp"

namespace weir {

Blob Dense(const Blob& x, std::int64_t units, const DenseOptions& options) {
  if (!x.Defined()) throw std::invalid_argument("[dense] argument 'x' is an undefined blob");
  if (units <= 0) throw std::invalid_argument(fmt::format("[dense] 'units' must be positive, got {}", units));
  const Shape shape = x.GetShape();
  if (shape.Rank() < 2) throw std::invalid_argument(fmt::format("[dense] expects an input of rank >= 2, got {}", shape));
  const std::int64_t in = shape[-1];
  Blob input = shape.Rank() == 2 ? x : Reshape(x, {{-1, in}});
  const Distribute& split = options.model_distribute;
  if (split.kind == Distribute::Kind::kSplit && split.axis != 0) {
    throw std::invalid_argument(fmt::format("[dense] 'model_distribute' must be split(0) (output units), got split({})",
                                            split.axis));
  }
  const Blob weight = internal::AddVariable(x.Graph(), options.name + "-weight",
                                            {.shape = Shape{units, in},
                                             .dtype = x.GetDType(),
                                             .initializer = options.kernel_initializer,
                                             .regularizer = options.kernel_regularizer,
                                             .trainable = options.trainable,
                                             .distribute = split});
  Blob out = MatMul(input, weight, {.transpose_b = true}, options.name + "-matmul");
  if (options.use_bias) {
    const Blob bias = internal::AddVariable(x.Graph(), options.name + "-bias",
                                            {.shape = Shape{units},
                                             .dtype = x.GetDType(),
                                             .initializer = options.bias_initializer,
                                             .regularizer = options.bias_regularizer,
                                             .trainable = options.trainable,
                                             .distribute = split});
    out = BiasAdd(out, bias, {.axis = 1}, options.name + "-bias_add");
  }
  switch (options.activation) {
    case Activation::kNone: break;
    case Activation::kRelu: out = Relu(out, options.name + "-activation"); break;
    case Activation::kSigmoid: out = Sigmoid(out, options.name + "-activation"); break;
    case Activation::kTanh: out = Tanh(out, options.name + "-activation"); break;
  }
  if (shape.Rank() == 2) return out;
  std::vector<std::int64_t> dims = shape.Dims();
  dims.back() = units;
  return Reshape(out, {dims});
}

Blob Conv2DLayer(const Blob& x, std::int64_t filters, const Conv2DOptions& options) {
  if (!x.Defined()) throw std::invalid_argument("[conv2d_layer] argument 'x' is an undefined blob");
  if (filters <= 0) {
    throw std::invalid_argument(fmt::format("[conv2d_layer] 'filters' must be positive, got {}", filters));
  }
  const auto [kh, kw] = options.kernel_size;
  if (kh <= 0 || kw <= 0) {
    throw std::invalid_argument(fmt::format("[conv2d_layer] 'kernel_size' must be positive, got ({}, {})", kh, kw));
  }
  const Shape shape = x.GetShape();
  if (shape.Rank() != 4) throw std::invalid_argument(fmt::format("[conv2d_layer] expects a 4-D input, got {}", shape));
  const bool nchw = options.data_format == DataFormat::kNCHW;
  const std::int64_t channels = nchw ? shape[1] : shape[3];
  if (options.groups <= 0 || channels % options.groups != 0) {
    throw std::invalid_argument(
        fmt::format("[conv2d_layer] 'groups' must be a positive divisor of the {} input channels, got {}", channels,
                    options.groups));
  }
  const Shape weight_shape =
      nchw ? Shape{filters, channels / options.groups, kh, kw} : Shape{filters, kh, kw, channels / options.groups};
  // OneFlow: xavier_uniform_initializer(data_format), whose fans follow the weight layout.
  const Initializer kernel_initializer = options.kernel_initializer.value_or(XavierUniformInitializer(
      nchw ? Initializer::DataFormat::kChannelsFirst : Initializer::DataFormat::kChannelsLast));
  const Blob weight = internal::AddVariable(x.Graph(), options.name + "-weight",
                                            {.shape = weight_shape,
                                             .dtype = x.GetDType(),
                                             .initializer = kernel_initializer,
                                             .regularizer = options.kernel_regularizer,
                                             .trainable = options.trainable});
  Blob out = Conv2D(x, weight,
                    {.strides = options.strides,
                     .dilations = options.dilation_rate,
                     .padding = options.padding,
                     .data_format = options.data_format,
                     .groups = options.groups},
                    options.name);
  if (options.use_bias) {
    const Blob bias = internal::AddVariable(x.Graph(), options.name + "-bias",
                                            {.shape = Shape{filters},
                                             .dtype = x.GetDType(),
                                             .initializer = options.bias_initializer,
                                             .regularizer = options.bias_regularizer,
                                             .trainable = options.trainable});
    out = BiasAdd(out, bias, {.axis = nchw ? 1 : 3}, options.name + "-bias_add");
  }
  switch (options.activation) {
    case Activation::kNone: break;
    case Activation::kRelu: out = Relu(out, options.name + "-activation"); break;
    case Activation::kSigmoid: out = Sigmoid(out, options.name + "-activation"); break;
    case Activation::kTanh: out = Tanh(out, options.name + "-activation"); break;
  }
  return out;
}

Blob Dropout(const Blob& x, const DropoutOptions& options) {
  if (!x.Defined()) throw std::invalid_argument("[dropout] argument 'x' is an undefined blob");
  if (!(options.rate >= 0.0 && options.rate < 1.0)) {
    throw std::invalid_argument(fmt::format("[dropout] 'rate' must be in [0, 1), got {}", options.rate));
  }
  // OneFlow's dropout is the identity outside training.
  if (x.Graph()->type != JobType::kTrain || options.rate == 0.0) return x;
  return internal::AddOp("dropout", {x}, internal::DropoutAttrs{options.rate, options.seed}, options.name).front();
}

Blob BatchNormalization(const Blob& x, const BatchNormOptions& options) {
  if (!x.Defined()) throw std::invalid_argument("[batch_normalization] argument 'x' is an undefined blob");
  const Shape shape = x.GetShape();
  const DType dtype = x.GetDType();
  if (!IsFloating(dtype)) throw std::invalid_argument(fmt::format("[batch_normalization] expects a floating x, got {}", dtype));
  if (shape.Rank() < 1 || options.axis < -shape.Rank() || options.axis >= shape.Rank()) {
    throw std::invalid_argument(fmt::format("[batch_normalization] 'axis' must be in [{}, {}) for x {}, got {}",
                                            -shape.Rank(), shape.Rank(), shape, options.axis));
  }
  const int axis = options.axis < 0 ? options.axis + shape.Rank() : options.axis;
  const Shape params{shape[axis]};
  // OneFlow: predict jobs and frozen layers use the moving statistics unless told otherwise.
  const bool training = options.training.value_or(x.Graph()->type == JobType::kTrain && options.trainable);
  // OneFlow's rule: a 16-bit x has f32 parameters and statistics (16-bit ones would lose the small
  // updates); it is normalized in f32, between casts.
  const bool sixteen_bit = dtype == DType::kF16 || dtype == DType::kBF16;
  const DType params_dtype = sixteen_bit ? DType::kF32 : dtype;
  const auto variable = [&](std::string_view suffix, const Initializer& initializer, const Regularizer& regularizer,
                            bool trainable) {
    return internal::AddVariable(x.Graph(), fmt::format("{}-{}", options.name, suffix),
                                 {.shape = params, .dtype = params_dtype, .initializer = initializer,
                                  .regularizer = regularizer, .trainable = trainable});
  };
  const auto constant = [&](double value) {
    Tensor filled(params, params_dtype);
    for (std::int64_t i = 0; i < filled.NumElements(); ++i) {
      if (params_dtype == DType::kF32) filled.Data<float>()[i] = static_cast<float>(value);
      else filled.Data<double>()[i] = value;
    }
    return internal::AddConstant(x.Graph(), filled, {});
  };
  const Blob gamma = options.scale ? variable("gamma", options.gamma_initializer, options.gamma_regularizer, options.trainable)
                                   : constant(1.0);
  const Blob beta = options.center ? variable("beta", options.beta_initializer, options.beta_regularizer, options.trainable)
                                   : constant(0.0);
  const Blob moving_mean = variable("moving_mean", options.moving_mean_initializer, {}, false);
  const Blob moving_variance = variable("moving_variance", options.moving_variance_initializer, {}, false);
  const BatchNormAttrs attrs{.axis = axis, .epsilon = options.epsilon, .momentum = options.momentum, .training = training};
  if (!sixteen_bit) return BatchNorm(x, gamma, beta, moving_mean, moving_variance, attrs, options.name);
  const Blob normalized =
      BatchNorm(Cast(x, {DType::kF32}), gamma, beta, moving_mean, moving_variance, attrs, options.name);
  return Cast(normalized, {dtype});
}

}  // namespace weir
