#pragma once
/// \file Layers (OneFlow's flow.layers): ops that create their own variables, named
/// "<name>-weight" and "<name>-bias" (also their checkpoint folder names).
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "weir/job.hpp"
#include "weir/ops.hpp"

namespace weir {

enum class Activation : std::uint8_t { kNone, kRelu, kSigmoid, kTanh };

struct DenseOptions {
  Activation activation = Activation::kNone;
  bool use_bias = true;
  /// OneFlow's default for both is constant 0; the docs pass truncated_normal(0.1).
  Initializer kernel_initializer = ZerosInitializer();
  Initializer bias_initializer = ZerosInitializer();
  Regularizer kernel_regularizer;
  Regularizer bias_regularizer;
  bool trainable = true;
  std::string name = "Dense";
  /// Split(0) splits the weight (units, in) and the bias by output units over the devices (model
  /// parallelism, OneFlow's model_distribute); Auto or Broadcast keeps them whole.
  Distribute model_distribute;
};

/// x (N, in) · weightᵀ + bias, weight (units, in), bias (units); inputs of rank > 2 are flattened to
/// (-1, last) and reshaped back.
Blob Dense(const Blob& x, std::int64_t units, const DenseOptions& options = {});

struct Conv2DOptions {
  /// {height, width}.
  std::array<std::int64_t, 2> kernel_size{1, 1};
  std::array<std::int64_t, 2> strides{1, 1};
  Padding padding;  // VALID
  DataFormat data_format = DataFormat::kNCHW;
  std::array<std::int64_t, 2> dilation_rate{1, 1};
  /// Independent convolutions over channel groups, in either layout.
  std::int64_t groups = 1;
  Activation activation = Activation::kNone;
  bool use_bias = true;
  /// Unset: OneFlow's xavier (glorot) uniform, fans computed for the data format's weight layout.
  std::optional<Initializer> kernel_initializer;
  Initializer bias_initializer = ZerosInitializer();
  Regularizer kernel_regularizer;
  Regularizer bias_regularizer;
  bool trainable = true;
  std::string name = "Conv2d";
};

/// conv2d(x, weight) + bias (OneFlow's flow.layers.conv2d): weight "<name>-weight" (filters, C/groups,
/// kh, kw) for NCHW or (filters, kh, kw, C/groups) for NHWC; bias "<name>-bias" (filters).
Blob Conv2DLayer(const Blob& x, std::int64_t filters, const Conv2DOptions& options = {});

struct DropoutOptions {
  /// Probability of zeroing an element; kept ones are scaled by 1 / (1 - rate).
  double rate = 0.5;
  /// The mask's random stream: the same seed gives the same masks, call after call.
  std::uint64_t seed = 0;
  std::string name;
};

/// Dropout in train jobs; the identity in predict jobs.
Blob Dropout(const Blob& x, const DropoutOptions& options = {});

struct BatchNormOptions {
  /// The channel axis (negative counts from the end): -1 for channels last, 1 for NCHW.
  int axis = -1;
  double momentum = 0.99;
  double epsilon = 1e-3;
  /// Without center there is no <name>-beta (beta is 0); without scale no <name>-gamma (gamma is 1).
  bool center = true;
  bool scale = true;
  Initializer beta_initializer = ZerosInitializer();
  Initializer gamma_initializer = OnesInitializer();
  Initializer moving_mean_initializer = ZerosInitializer();
  Initializer moving_variance_initializer = OnesInitializer();
  Regularizer beta_regularizer;
  Regularizer gamma_regularizer;
  /// Whether gamma and beta are trained.
  bool trainable = true;
  /// Batch statistics and moving-statistic updates when true, the moving statistics when false.
  /// Unset: true in train jobs with trainable layers, false otherwise (OneFlow's rule); an explicit
  /// true also updates the moving statistics in predict jobs.
  std::optional<bool> training;
  std::string name = "BatchNorm";
};

/// Batch normalization over every axis but `axis` (OneFlow's flow.layers.batch_normalization), with
/// variables <name>-gamma, <name>-beta (trainable) and <name>-moving_mean, <name>-moving_variance
/// (not trainable, updated in place while training), each (C) for C = x.shape[axis]: f32 for a
/// 16-bit x, which is normalized in f32 between casts (OneFlow's rule), x's dtype otherwise.
Blob BatchNormalization(const Blob& x, const BatchNormOptions& options = {});

}  // namespace weir
