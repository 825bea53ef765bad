// weir._C: image ops (conv2d, pooling, batch normalization, flatten), their layers, and the
// further math ops (concat, unary functions, dense/sigmoid cross entropy, max/min, clip, one_hot).
#include <pybind11/stl.h>

#include "api/python/bind.hpp"
#include "api/python/convert.hpp"
#include "weir/layers.hpp"
#include "weir/ops.hpp"

namespace weir::python {

namespace {

DataFormat ParseFormat(const std::string& format) {
  if (format == "NCHW") return DataFormat::kNCHW;
  if (format == "NHWC") return DataFormat::kNHWC;
  throw std::invalid_argument("data_format: expected 'NCHW' or 'NHWC', got '" + format + "'");
}

/// "VALID", "SAME" or "EXPLICIT" with {top, bottom, left, right}.
Padding ParsePadding(const std::string& kind, const std::array<std::int64_t, 4>& pads) {
  if (kind == "VALID") return ValidPadding();
  if (kind == "SAME") return SamePadding();
  if (kind == "EXPLICIT") return ExplicitPadding(pads[0], pads[1], pads[2], pads[3]);
  throw std::invalid_argument("padding: expected 'VALID', 'SAME' or explicit pads, got '" + kind + "'");
}

Activation ParseConvActivation(const std::string& name) {
  if (name == "none") return Activation::kNone;
  if (name == "relu") return Activation::kRelu;
  if (name == "sigmoid") return Activation::kSigmoid;
  if (name == "tanh") return Activation::kTanh;
  throw std::invalid_argument("activation: expected none, relu, sigmoid or tanh, got '" + name + "'");
}

UnaryOpKind ParseUnary(const std::string& kind) {
  static const std::pair<const char*, UnaryOpKind> kKinds[] = {
      {"exp", UnaryOpKind::kExp},       {"log", UnaryOpKind::kLog},
      {"sqrt", UnaryOpKind::kSqrt},     {"rsqrt", UnaryOpKind::kRsqrt},
      {"square", UnaryOpKind::kSquare}, {"abs", UnaryOpKind::kAbs},
      {"negative", UnaryOpKind::kNegative}, {"reciprocal", UnaryOpKind::kReciprocal},
      {"log1p", UnaryOpKind::kLog1p},   {"expm1", UnaryOpKind::kExpm1},
      {"softplus", UnaryOpKind::kSoftplus}, {"sign", UnaryOpKind::kSign},
      {"floor", UnaryOpKind::kFloor},   {"ceil", UnaryOpKind::kCeil},
      {"round", UnaryOpKind::kRound},   {"sin", UnaryOpKind::kSin},
      {"cos", UnaryOpKind::kCos}};
  for (const auto& [name, value] : kKinds) {
    if (kind == name) return value;
  }
  throw std::invalid_argument("[unary] unknown kind '" + kind + "'");
}

using Pads = std::array<std::int64_t, 4>;
using Pair = std::array<std::int64_t, 2>;

}  // namespace

void BindNn(py::module_& m) {
  m.def("conv2d",
        [](const Blob& x, const Blob& weight, Pair strides, Pair dilations, const std::string& padding, Pads pads,
           const std::string& data_format, std::int64_t groups, std::string_view name) {
          return Conv2D(x, weight,
                        {.strides = strides,
                         .dilations = dilations,
                         .padding = ParsePadding(padding, pads),
                         .data_format = ParseFormat(data_format),
                         .groups = groups},
                        name);
        },
        py::arg("x"), py::arg("weight"), py::arg("strides"), py::arg("dilations"), py::arg("padding"),
        py::arg("pads"), py::arg("data_format"), py::arg("groups"), py::arg("name") = "");
  m.def("conv2d_layer",
        [](const Blob& x, std::int64_t filters, Pair kernel_size, Pair strides, const std::string& padding, Pads pads,
           const std::string& data_format, Pair dilation_rate, std::int64_t groups, const std::string& activation,
           bool use_bias, std::optional<Initializer> kernel_initializer, const Initializer& bias_initializer,
           const Regularizer& kernel_regularizer, const Regularizer& bias_regularizer, bool trainable,
           std::string name) {
          return Conv2DLayer(x, filters,
                             {.kernel_size = kernel_size,
                              .strides = strides,
                              .padding = ParsePadding(padding, pads),
                              .data_format = ParseFormat(data_format),
                              .dilation_rate = dilation_rate,
                              .groups = groups,
                              .activation = ParseConvActivation(activation),
                              .use_bias = use_bias,
                              .kernel_initializer = std::move(kernel_initializer),
                              .bias_initializer = bias_initializer,
                              .kernel_regularizer = kernel_regularizer,
                              .bias_regularizer = bias_regularizer,
                              .trainable = trainable,
                              .name = std::move(name)});
        },
        py::arg("x"), py::arg("filters"), py::arg("kernel_size"), py::arg("strides"), py::arg("padding"),
        py::arg("pads"), py::arg("data_format"), py::arg("dilation_rate"), py::arg("groups"), py::arg("activation"),
        py::arg("use_bias"), py::arg("kernel_initializer"), py::arg("bias_initializer"),
        py::arg("kernel_regularizer"), py::arg("bias_regularizer"), py::arg("trainable"), py::arg("name"));
  for (const char* op : {"max_pool2d", "avg_pool2d"}) {
    const bool is_max = std::string_view(op) == "max_pool2d";
    m.def(op,
          [is_max](const Blob& x, Pair ksize, Pair strides, const std::string& padding, Pads pads,
                   const std::string& data_format, bool ceil_mode, std::string_view name) {
            const Pool2DAttrs attrs{.ksize = ksize,
                                    .strides = strides,
                                    .padding = ParsePadding(padding, pads),
                                    .data_format = ParseFormat(data_format),
                                    .ceil_mode = ceil_mode};
            return is_max ? MaxPool2D(x, attrs, name) : AvgPool2D(x, attrs, name);
          },
          py::arg("x"), py::arg("ksize"), py::arg("strides"), py::arg("padding"), py::arg("pads"),
          py::arg("data_format"), py::arg("ceil_mode") = false, py::arg("name") = "");
  }
  m.def("batch_norm",
        [](const Blob& x, const Blob& gamma, const Blob& beta, const Blob& moving_mean, const Blob& moving_variance,
           int axis, double epsilon, double momentum, bool training, std::string_view name) {
          return BatchNorm(x, gamma, beta, moving_mean, moving_variance,
                           {.axis = axis, .epsilon = epsilon, .momentum = momentum, .training = training}, name);
        },
        py::arg("x"), py::arg("gamma"), py::arg("beta"), py::arg("moving_mean"), py::arg("moving_variance"),
        py::arg("axis"), py::arg("epsilon"), py::arg("momentum"), py::arg("training"), py::arg("name") = "");
  m.def("batch_normalization_layer",
        [](const Blob& x, int axis, double momentum, double epsilon, bool center, bool scale,
           const Initializer& beta_initializer, const Initializer& gamma_initializer,
           const Initializer& moving_mean_initializer, const Initializer& moving_variance_initializer,
           const Regularizer& beta_regularizer, const Regularizer& gamma_regularizer, bool trainable,
           std::optional<bool> training, std::string name) {
          return BatchNormalization(x, {.axis = axis,
                                        .momentum = momentum,
                                        .epsilon = epsilon,
                                        .center = center,
                                        .scale = scale,
                                        .beta_initializer = beta_initializer,
                                        .gamma_initializer = gamma_initializer,
                                        .moving_mean_initializer = moving_mean_initializer,
                                        .moving_variance_initializer = moving_variance_initializer,
                                        .beta_regularizer = beta_regularizer,
                                        .gamma_regularizer = gamma_regularizer,
                                        .trainable = trainable,
                                        .training = training,
                                        .name = std::move(name)});
        },
        py::arg("x"), py::arg("axis"), py::arg("momentum"), py::arg("epsilon"), py::arg("center"), py::arg("scale"),
        py::arg("beta_initializer"), py::arg("gamma_initializer"), py::arg("moving_mean_initializer"),
        py::arg("moving_variance_initializer"), py::arg("beta_regularizer"), py::arg("gamma_regularizer"),
        py::arg("trainable"), py::arg("training"), py::arg("name"));
  m.def("flatten",
        [](const Blob& x, int start_dim, int end_dim, std::string_view name) {
          return Flatten(x, {start_dim, end_dim}, name);
        },
        py::arg("x"), py::arg("start_dim"), py::arg("end_dim"), py::arg("name") = "");

  m.def("concat",
        [](const std::vector<Blob>& inputs, int axis, std::string_view name) { return Concat(inputs, {axis}, name); },
        py::arg("inputs"), py::arg("axis"), py::arg("name") = "");
  m.def("unary",
        [](const Blob& x, const std::string& kind, std::string_view name) {
          return Unary(x, {ParseUnary(kind)}, name);
        },
        py::arg("x"), py::arg("kind"), py::arg("name") = "");
  m.def("softmax_cross_entropy",
        [](const Blob& labels, const Blob& logits, std::string_view name) {
          return SoftmaxCrossEntropy(labels, logits, name);
        },
        py::arg("labels"), py::arg("logits"), py::arg("name") = "");
  m.def("sigmoid_cross_entropy",
        [](const Blob& labels, const Blob& logits, std::string_view name) {
          return SigmoidCrossEntropy(labels, logits, name);
        },
        py::arg("labels"), py::arg("logits"), py::arg("name") = "");
  DefReduction(m, "reduce_max", &ReduceMax);
  DefReduction(m, "reduce_min", &ReduceMin);
  m.def("maximum", [](const Blob& a, const Blob& b, std::string_view name) { return Maximum(a, b, name); },
        py::arg("a"), py::arg("b"), py::arg("name") = "");
  m.def("minimum", [](const Blob& a, const Blob& b, std::string_view name) { return Minimum(a, b, name); },
        py::arg("a"), py::arg("b"), py::arg("name") = "");
  m.def("clip_by_value",
        [](const Blob& x, std::optional<double> min, std::optional<double> max, std::string_view name) {
          return ClipByValue(x, {min, max}, name);
        },
        py::arg("x"), py::arg("min"), py::arg("max"), py::arg("name") = "");
  m.def("one_hot",
        [](const Blob& indices, std::int64_t depth, double on_value, double off_value, DType dtype,
           std::string_view name) {
          return OneHot(indices, {.depth = depth, .on_value = on_value, .off_value = off_value, .dtype = dtype},
                        name);
        },
        py::arg("indices"), py::arg("depth"), py::arg("on_value"), py::arg("off_value"), py::arg("dtype"),
        py::arg("name") = "");
}

}  // namespace weir::python
