#pragma once
/// \file Layers (OneFlow's flow.layers): ops that create their own variables, named
/// "<name>-weight" and "<name>-bias" (also their checkpoint folder names).
#include <cstdint>
#include <string>

#include "weir/job.hpp"

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
};

/// x (N, in) · weightᵀ + bias, weight (units, in), bias (units); inputs of rank > 2 are flattened to
/// (-1, last) and reshaped back.
Blob Dense(const Blob& x, std::int64_t units, const DenseOptions& options = {});

struct DropoutOptions {
  /// Probability of zeroing an element; kept ones are scaled by 1 / (1 - rate).
  double rate = 0.5;
  /// The mask's random stream: the same seed gives the same masks, call after call.
  std::uint64_t seed = 0;
  std::string name;
};

/// Dropout in train jobs; the identity in predict jobs.
Blob Dropout(const Blob& x, const DropoutOptions& options = {});

}  // namespace weir
