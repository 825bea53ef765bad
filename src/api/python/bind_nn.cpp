// weir._C: the image layers (conv2d, batch normalization) and flatten; the ops themselves go through
// add_op (bind_ops.cpp).
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

using Pads = std::array<std::int64_t, 4>;
using Pair = std::array<std::int64_t, 2>;

}  // namespace

void BindNn(py::module_& m) {
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

}

}  // namespace weir::python
