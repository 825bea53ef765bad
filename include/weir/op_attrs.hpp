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
  /// The gradient passes where min <= x <= max (OneFlow's clip_by_value), or with open_gradient
  /// strictly inside, min < x < max (OneFlow's hardtanh).
  bool open_gradient = false;
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

// The data pipeline (OneFlow's flow.data, flow.image, flow.random): ops that read and decode a job's
// own batches on the host, so that a job needs no placeholders.

/// flow.data.ofrecord_reader: each call, `batch_size` serialized OFRecords (a tensor_buffer of shape
/// (batch_size,)) from the part files `<data_dir>/<part_name_prefix><i>`, i in [0, data_part_num),
/// the index zero-padded to `part_name_suffix_length` digits (-1: not padded). The devices that split
/// the batch (and the processes) each read their own contiguous share of the part files; at the end
/// of its files a reader starts its next epoch. `random_shuffle` draws each record from a buffer of
/// the next `shuffle_buffer_size`; `shuffle_after_epoch` reads the files in a new order each epoch.
struct OFRecordReaderAttrs {
  std::string data_dir;
  std::int64_t batch_size = 1;
  std::int64_t data_part_num = 1;
  std::string part_name_prefix = "part-";
  std::int64_t part_name_suffix_length = -1;
  bool random_shuffle = false;
  std::int64_t shuffle_buffer_size = 1024;
  bool shuffle_after_epoch = false;
  std::uint64_t seed = 0;
};

/// flow.data.megatron_gpt_mmap_data_loader: each call, `batch_size` samples of `seq_length` +
/// `label_length` (1, as OneFlow's reader) tokens (as `dtype`, i32 or i64) from a Megatron-LM indexed dataset
/// (`<data_file_prefix>.idx` and `.bin`, memory-mapped). The documents of split `split_index` (the
/// dataset's documents in parts proportional to `split_sizes`) are laid end to end for as many epochs
/// as `num_samples` samples need, and cut into samples that overlap by one token (a sample's last
/// token is the next one's first). With `shuffle`, documents and samples are shuffled per epoch under
/// `random_seed` as OneFlow shuffles them. Call n reads samples [n * batch, (n + 1) * batch); the
/// devices that split the batch read their rows of it. `split_batch` false: each device reads the
/// whole batch (OneFlow's nd_sbp ["B"]).
struct MegatronGptLoaderAttrs {
  std::string data_file_prefix;
  std::int64_t seq_length = 0;
  std::int64_t label_length = 1;
  std::int64_t num_samples = 0;
  std::int64_t batch_size = 1;
  DType dtype = DType::kI64;
  std::vector<std::int64_t> split_sizes = {1};
  std::int64_t split_index = 0;
  bool shuffle = true;
  std::int64_t random_seed = 0;
  bool split_batch = true;
};

/// flow.data.OFRecordRawDecoder: feature `name` of each record as `shape` values of `dtype` (f32,
/// f64, i32, i64, u8 or i8), converted from the feature's list type (a bytes_list is read as its
/// bytes). A record with fewer values fails the call unless `auto_zero_padding` (the rest is 0);
/// more values always fail it.
struct OFRecordRawDecoderAttrs {
  std::string name;
  Shape shape;
  DType dtype = DType::kF32;
  bool dim1_varying_length = false;
  bool auto_zero_padding = false;
};

/// flow.data.OFRecordBytesDecoder: the first value of bytes feature `name` of each record, as a
/// tensor_buffer item of u8.
struct OFRecordBytesDecoderAttrs {
  std::string name;
};

/// flow.data.OFRecordImageDecoder (and ...RandomCrop with `random_crop`): the JPEG in bytes feature
/// `name` of each record (empty: each item is the JPEG's bytes, from OFRecordBytesDecoder) decoded to (height, width, channels) u8 in `color_space` ("RGB", "BGR",
/// "GRAY"), a tensor_buffer item per image. The random crop draws an area fraction in `random_area`
/// and an aspect ratio (width / height) in `random_aspect_ratio` up to `num_attempts` times.
struct OFRecordImageDecoderAttrs {
  std::string name;
  std::string color_space = "BGR";
  bool random_crop = false;
  std::int64_t num_attempts = 10;
  std::vector<double> random_area = {0.08, 1.0};
  std::vector<double> random_aspect_ratio = {0.75, 1.333333};
  std::uint64_t seed = 0;
};

/// flow.image.Resize. Fixed (`keep_aspect_ratio` false): every image to `target_width` x
/// `target_height`, outputs (batch, target_height, target_width, channels) of `dtype` (u8 or f32)
/// and each image's (width, height) scale (batch, 2) f32. Keeping the aspect ratio: the shorter (or,
/// with `resize_longer`, the longer) side to `target_size`, the other side then kept within
/// `max_size` (or above `min_size`) when set; outputs the images (a tensor_buffer), their new
/// (width, height) (batch, 2) i32 and scales (batch, 2) f32. `interpolation_type`: "auto" or
/// "bilinear", or "nearest_neighbor".
struct ImageResizeAttrs {
  bool keep_aspect_ratio = false;
  std::int64_t target_width = 0;
  std::int64_t target_height = 0;
  std::int64_t target_size = 0;
  std::int64_t min_size = 0;
  std::int64_t max_size = 0;
  bool resize_longer = false;
  std::int64_t channels = 3;
  DType dtype = DType::kU8;
  std::string interpolation_type = "auto";
};

/// flow.image.CropMirrorNormalize: from u8 images (a tensor_buffer, or a (batch, height, width,
/// channels) u8 tensor) a `crop_h` x `crop_w` window at (crop_pos_y, crop_pos_x) of the free room
/// (0 and 0: the whole image), flipped left-right where the optional int8 mirror input is non-zero,
/// then (x - mean[c]) / std[c] (one value, or one per channel), as `output_dtype` (f32) in
/// `output_layout`. A tensor_buffer input needs a crop size (its images' sizes differ).
struct CropMirrorNormalizeAttrs {
  std::string color_space = "BGR";
  DataFormat output_layout = DataFormat::kNCHW;
  std::int64_t crop_h = 0;
  std::int64_t crop_w = 0;
  double crop_pos_y = 0.5;
  double crop_pos_x = 0.5;
  std::vector<double> mean = {0.0};
  std::vector<double> std = {1.0};
  DType output_dtype = DType::kF32;
};

/// flow.random.CoinFlip: each call, (batch_size,) int8 values, 1 with `probability`.
struct CoinFlipAttrs {
  std::int64_t batch_size = 1;
  double probability = 0.5;
  std::uint64_t seed = 0;
};

/// flow.data.decode_random: each call, a fresh (batch_size, *shape) blob of `dtype` drawn as
/// `distribution` draws ("uniform" in [minval, maxval), "normal" and "truncated_normal" with mean and
/// stddev, "constant" `value`): synthetic data in place of a reader.
struct DecodeRandomAttrs {
  Shape shape;
  DType dtype = DType::kF32;
  std::int64_t batch_size = 1;
  std::string distribution = "uniform";
  double minval = 0.0;
  double maxval = 1.0;
  double mean = 0.0;
  double stddev = 1.0;
  double value = 0.0;
  std::uint64_t seed = 0;
};

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
  /// The variables it trains, by name (OneFlow's `variables=`): each must be a trainable floating
  /// variable of the job; the job's others keep their values and get no gradient. Empty: every
  /// trainable floating variable.
  std::vector<std::string> variables;
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
  /// A combined optimizer (OneFlow's CombinedOptimizer, weir/optimizers.hpp: Combined): each part
  /// trains the variables it names, which no other part names, with its own kind, learning rate,
  /// clipping and weight decay; the loss scale (factor or dynamic) is the combined one's. A job's
  /// variables that no part names keep their values. Empty: a single optimizer.
  std::vector<Optimizer> parts;

  friend bool operator==(const Optimizer&, const Optimizer&) = default;
};

}  // namespace weir
