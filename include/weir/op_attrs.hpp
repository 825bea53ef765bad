#pragma once
/// \file The attributes of Weir's ops, as plain values: what a job's ops take (weir/ops.hpp), what
/// their kernels read, and the value types both share (how a blob lies on devices, a variable's
/// regularizer). Nothing here builds a job.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "weir/dtype.hpp"
#include "weir/lr_schedule.hpp"
#include "weir/op_kinds.hpp"
#include "weir/shape.hpp"

namespace weir {

/// How a consistent blob or variable lies on the devices of its placement (OneFlow's
/// flow.distribute): whole on every device, split along an axis, or left to the compiler.
struct Distribute {
  enum class Kind : std::uint8_t { kAuto, kBroadcast, kSplit };
  Kind kind = Kind::kAuto;
  int axis = 0;  // kSplit only

  static Distribute Auto() { return {}; }
  static Distribute Broadcast() { return {Kind::kBroadcast, 0}; }
  static Distribute Split(int axis) { return {Kind::kSplit, axis}; }
  friend bool operator==(const Distribute&, const Distribute&) = default;
};

/// L1 and L2 penalties on a variable, added to its gradient by the optimizer:
/// g + l1·sign(p) + l2·p (OneFlow's flow.regularizers).
struct Regularizer {
  double l1 = 0.0;
  double l2 = 0.0;
  friend bool operator==(const Regularizer&, const Regularizer&) = default;
};

inline Regularizer L1(double l = 0.01) { return {l, 0.0}; }
inline Regularizer L2(double l = 0.01) { return {0.0, l}; }
inline Regularizer L1L2(double l1 = 0.01, double l2 = 0.01) { return {l1, l2}; }

struct ReshapeAttrs {
  /// Target shape; at most one dimension may be -1 (inferred).
  std::vector<std::int64_t> shape;
};

/// A strided slice per axis, with Python's rules: negative start and stop count from the end and are
/// clamped to the axis; step may be negative (not 0). One entry per axis of x.
struct SliceAttrs {
  std::vector<std::int64_t> start;
  std::vector<std::int64_t> stop;
  std::vector<std::int64_t> step;
};

struct TransposeAttrs {
  /// Output axis i is input axis perm[i]; a permutation of 0..rank-1.
  std::vector<int> perm;
};

struct MatMulAttrs {
  bool transpose_a = false;
  bool transpose_b = false;
  /// Scales the product: out = alpha * op(a) op(b).
  double alpha = 1.0;
};

struct BiasAddAttrs {
  /// The axis of x that bias (1-D) runs along; OneFlow's default is 1 (channels / features).
  int axis = 1;
};

struct ScalarAttrs {
  ScalarOpKind kind = ScalarOpKind::kAdd;
  double value = 0.0;
};

struct SoftmaxAttrs {
  int axis = -1;
};

struct ReduceAttrs {
  /// Axes to reduce; empty means all axes. Negative axes count from the end.
  std::vector<int> axes;
  bool keep_dims = false;
};

struct ArgMaxAttrs {
  int axis = -1;
  /// OneFlow's argmax returns int32.
  DType output_dtype = DType::kI32;
};

struct CastAttrs {
  DType dtype = DType::kF32;
};

struct ConcatAttrs {
  /// The axis the inputs are joined along; negative counts from the end.
  int axis = 0;
};

struct UnaryAttrs {
  UnaryOpKind kind = UnaryOpKind::kExp;
};

struct CompareAttrs {
  CompareOpKind kind = CompareOpKind::kEqual;
};

struct ClipAttrs {
  /// At least one bound; min <= max when both are given.
  std::optional<double> min;
  std::optional<double> max;
};

struct OneHotAttrs {
  /// Number of classes; >= 0.
  std::int64_t depth = 0;
  double on_value = 1.0;
  double off_value = 0.0;
  /// f32, f64, i32 or i64.
  DType dtype = DType::kF32;
};

/// Image layouts: channels first (OneFlow's default) or channels last.
enum class DataFormat : std::uint8_t { kNCHW, kNHWC };
/// How a spatial window is padded. kSame pads so that out = ceil(in / stride), the odd pixel at the
/// end (TensorFlow's and OneFlow's "SAME"); kValid does not pad; kExplicit uses `pads`.
enum class PaddingKind : std::uint8_t { kValid, kSame, kExplicit };
struct Padding {
  PaddingKind kind = PaddingKind::kValid;
  /// kExplicit only: {top, bottom, left, right}, each >= 0.
  std::array<std::int64_t, 4> pads{};
  friend bool operator==(const Padding&, const Padding&) = default;
};

inline Padding ValidPadding() { return {}; }
inline Padding SamePadding() { return {.kind = PaddingKind::kSame}; }
inline Padding ExplicitPadding(std::int64_t top, std::int64_t bottom, std::int64_t left, std::int64_t right) {
  return {.kind = PaddingKind::kExplicit, .pads = {top, bottom, left, right}};
}

struct Conv2DAttrs {
  /// {height, width}.
  std::array<std::int64_t, 2> strides{1, 1};
  /// {height, width}; 1 is an ordinary (undilated) kernel.
  std::array<std::int64_t, 2> dilations{1, 1};
  Padding padding;  // VALID
  DataFormat data_format = DataFormat::kNCHW;
  /// Input and output channels split into `groups` independent convolutions, in either layout (OneFlow
  /// refuses NHWC groups on the GPU only).
  std::int64_t groups = 1;
};

struct Pool2DAttrs {
  /// Window {height, width}.
  std::array<std::int64_t, 2> ksize{2, 2};
  /// {height, width}.
  std::array<std::int64_t, 2> strides{2, 2};
  /// VALID by default. Explicit pads must each be smaller than the window, so that every window
  /// holds at least one pixel of x.
  Padding padding;
  DataFormat data_format = DataFormat::kNCHW;
  /// Output size rounded up rather than down (PyTorch's rule: a last window that would start in the
  /// bottom/right padding is dropped). No effect with SAME, whose output is already ceil(in / stride).
  bool ceil_mode = false;
};

struct BatchNormAttrs {
  /// The channel axis: statistics are per index of this axis, over every other axis.
  int axis = 1;
  double epsilon = 1e-3;
  /// moving = momentum · moving + (1 − momentum) · batch statistic.
  double momentum = 0.99;
  /// Batch statistics (and an update of the moving ones) when true; the moving statistics otherwise.
  bool training = true;
};

struct FlattenAttrs {
  /// Axes start_dim..end_dim (inclusive, negative from the end) become one.
  int start_dim = 1;
  int end_dim = -1;
};

struct ParallelCastAttrs {
  /// How the result lies on the devices (Auto: as the input does).
  Distribute value;
  /// How the gradient flowing back through it lies (Auto: as the compiler chooses).
  Distribute gradient;
};

/// An optimizer and its settings: the attribute of the update ops (weir/optimizers.hpp makes them).
struct Optimizer {
  enum class Kind : std::uint8_t { kSgd, kAdam, kAdamW, kRmsProp, kLamb, kLars };
  Kind kind = Kind::kSgd;
  LrSchedule learning_rate;
  /// kSgd: 0 is plain SGD (p -= lr·g); otherwise v = momentum·v - lr·g, p += v. kLars: momentum_beta.
  double momentum = 0.9;
  /// kLars: the layer's rate is lr · lars_coefficient · ‖p‖ / (epsilon + ‖g‖).
  double lars_coefficient = 0.0001;
  /// kAdam, kAdamW, kLamb.
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  bool do_bias_correction = false;
  /// kAdam: OneFlow's LazyAdam (with bias correction): an element whose gradient is 0 (|g| < 1e-12)
  /// keeps its value and moments, so that embedding rows a batch did not read stay as they are.
  bool lazy = false;
  /// kAdamW, kLamb: decoupled weight decay.
  double weight_decay = 0.0;
  /// kAdamW, kLamb: the variables that decay, by name (OneFlow's weight_decay_includes / _excludes):
  /// with includes, those in which some pattern is found (a regular-expression search, ECMAScript
  /// syntax); with excludes, all but those. At most one of the two is given; neither: every variable.
  std::vector<std::string> weight_decay_includes;
  std::vector<std::string> weight_decay_excludes;
  /// kRmsProp.
  double decay_rate = 0.99;
  bool centered = false;
  /// Clip the gradients by their global norm before the update.
  std::optional<double> clip_norm;
  /// The loss gradient is seeded with this value; gradients are divided by it again.
  double loss_scale_factor = 1.0;
  /// Dynamic loss scaling (OneFlow's dynamic_loss_scale policy), for float16 training: the loss
  /// gradient is seeded with a scale that the job keeps in the variable
  /// "System-Train-LossScale-<job>" (f32), and the gradients are divided by it again. A step whose
  /// gradients are not all finite updates no variable (nor optimizer slot), divides the scale by
  /// `multiplier` (not below 1) and counts one more in "System-Train-SkippedSteps-<job>" (i64);
  /// after `increment_period` finite steps in a row ("System-Train-LossScaleGoodSteps-<job>") the
  /// scale is multiplied by `multiplier`. The train step counts skipped steps too. Excludes
  /// loss_scale_factor.
  struct DynamicLossScale {
    double initial_loss_scale = 1073741824.0;  // 2^30, OneFlow's default
    std::int64_t increment_period = 2000;
    double multiplier = 2.0;
    friend bool operator==(const DynamicLossScale&, const DynamicLossScale&) = default;
  };
  std::optional<DynamicLossScale> dynamic_loss_scale;

  friend bool operator==(const Optimizer&, const Optimizer&) = default;
};

}  // namespace weir
