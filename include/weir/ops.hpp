#pragma once
/// \file The ops a job is built from. Each takes Blobs of one job, checks shapes and dtypes at
/// once (throwing std::invalid_argument that names the op and shows the shapes), and returns the
/// output Blob. `name` is optional; ops are named "<type>_<n>" otherwise. Their attributes are plain
/// values in weir/op_attrs.hpp, which the kernels read too.
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "weir/job.hpp"
#include "weir/op_attrs.hpp"
#include "weir/op_kinds.hpp"

namespace weir {

/// Copies its input.
Blob Identity(const Blob& x, std::string_view name = {});
/// Writes `value` into the variable `ref` in place when the job runs (OneFlow's flow.assign): the
/// call's other readers of `ref` see its value from before, the next call the new one.
void Assign(const Blob& ref, const Blob& value, std::string_view name = {});

Blob Reshape(const Blob& x, ReshapeAttrs attrs, std::string_view name = {});

Blob Transpose(const Blob& x, TransposeAttrs attrs, std::string_view name = {});
/// x[start:stop:step] along every axis (Python's slicing; OneFlow's slice_v2).
Blob Slice(const Blob& x, SliceAttrs attrs, std::string_view name = {});

/// 2-D matrix product of op(a) (m,k) and op(b) (k,n).
Blob MatMul(const Blob& a, const Blob& b, MatMulAttrs attrs = {}, std::string_view name = {});
/// The product of the last two axes for every index of the leading (batch) axes: a (..., m, k) and
/// b (..., k, n) of one rank >= 3 and the same batch axes (transposes act on the last two axes).
Blob BatchMatMul(const Blob& a, const Blob& b, MatMulAttrs attrs = {}, std::string_view name = {});

Blob BiasAdd(const Blob& x, const Blob& bias, BiasAddAttrs attrs = {}, std::string_view name = {});

/// Elementwise with numpy broadcasting; both inputs have the same dtype.
Blob Add(const Blob& a, const Blob& b, std::string_view name = {});
Blob Sub(const Blob& a, const Blob& b, std::string_view name = {});
Blob Mul(const Blob& a, const Blob& b, std::string_view name = {});
Blob Div(const Blob& a, const Blob& b, std::string_view name = {});
/// a mod b with the divisor's sign (floor modulo, Python's %); an integer b of 0 fails the call.
Blob Mod(const Blob& a, const Blob& b, std::string_view name = {});
/// a to the power b (f32, f64).
Blob Pow(const Blob& a, const Blob& b, std::string_view name = {});

/// x (op) scalar, elementwise; the output has x's dtype.
Blob Scalar(const Blob& x, ScalarAttrs attrs, std::string_view name = {});
Blob ScalarAdd(const Blob& x, double value, std::string_view name = {});
Blob ScalarMul(const Blob& x, double value, std::string_view name = {});

Blob Relu(const Blob& x, std::string_view name = {});
Blob Sigmoid(const Blob& x, std::string_view name = {});
Blob Tanh(const Blob& x, std::string_view name = {});

Blob Softmax(const Blob& x, SoftmaxAttrs attrs = {}, std::string_view name = {});

Blob ReduceSum(const Blob& x, ReduceAttrs attrs = {}, std::string_view name = {});
Blob ReduceMean(const Blob& x, ReduceAttrs attrs = {}, std::string_view name = {});

/// Index of the largest element along `axis` (the first on ties); the axis is removed.
Blob ArgMax(const Blob& x, ArgMaxAttrs attrs = {}, std::string_view name = {});

Blob Cast(const Blob& x, CastAttrs attrs, std::string_view name = {});

/// Per-example cross entropy of softmax(logits) against integer class labels:
/// labels (N) i32/i64, logits (N, C) float -> (N) with the logits' dtype. A label outside
/// [0, C) fails the call.
Blob SparseSoftmaxCrossEntropy(const Blob& labels, const Blob& logits, std::string_view name = {});
/// x (N, C) of cosines with each row's label entry replaced by cos(m1 * acos(x) + m2) - m3: the
/// margins of SphereFace (m1), ArcFace (m2) and CosFace (m3) in one op. labels (N) i32/i64; a label
/// outside [0, C) fails the call.
Blob CombinedMarginLoss(const Blob& x, const Blob& labels, double m1 = 1, double m2 = 0, double m3 = 0, std::string_view name = {});

// --- more math (concat, unary, losses, reductions, clipping, one_hot) ------------------------

/// Joins `inputs` (at least one, one dtype, equal shapes but along `axis`) along `axis`.
Blob Concat(const std::vector<Blob>& inputs, ConcatAttrs attrs = {}, std::string_view name = {});

/// f(x) elementwise, every kind of weir/op_kinds.hpp (the ones below are named shorthands); f32 and
/// f64 (integers too where the kind says so). The output has x's meta.
Blob Unary(const Blob& x, UnaryAttrs attrs, std::string_view name = {});
Blob Exp(const Blob& x, std::string_view name = {});
Blob Log(const Blob& x, std::string_view name = {});
Blob Sqrt(const Blob& x, std::string_view name = {});
Blob Rsqrt(const Blob& x, std::string_view name = {});
Blob Square(const Blob& x, std::string_view name = {});
Blob Abs(const Blob& x, std::string_view name = {});
Blob Negative(const Blob& x, std::string_view name = {});
Blob Reciprocal(const Blob& x, std::string_view name = {});
Blob Log1p(const Blob& x, std::string_view name = {});
Blob Expm1(const Blob& x, std::string_view name = {});
Blob Softplus(const Blob& x, std::string_view name = {});
Blob Sign(const Blob& x, std::string_view name = {});
Blob Floor(const Blob& x, std::string_view name = {});
Blob Ceil(const Blob& x, std::string_view name = {});
Blob Round(const Blob& x, std::string_view name = {});
Blob Sin(const Blob& x, std::string_view name = {});
Blob Cos(const Blob& x, std::string_view name = {});

/// Cross entropy of softmax(logits) against dense label distributions along the last axis
/// (OneFlow's nn.softmax_cross_entropy_with_logits): labels and logits (..., C) of one floating
/// dtype -> (...): -sum_c labels·log_softmax(logits). Both inputs get gradients; the logits'
/// is (softmax · sum_c labels − labels) · dy, i.e. (softmax − labels) · dy for rows summing to 1.
Blob SoftmaxCrossEntropy(const Blob& labels, const Blob& logits, std::string_view name = {});
/// Elementwise logistic loss (OneFlow's nn.sigmoid_cross_entropy_with_logits), in the stable form
/// max(x, 0) − x·z + log(1 + e^−|x|) for logits x and labels z of one shape and floating dtype.
Blob SigmoidCrossEntropy(const Blob& labels, const Blob& logits, std::string_view name = {});

/// The largest / smallest element over some axes (f32, f64, i32, i64); a NaN wins. An empty
/// reduction gives the identity (-inf / +inf, or the integer type's lowest / largest). The gradient
/// is shared evenly among the elements equal to the result (OneFlow's rule for ties).
Blob ReduceMax(const Blob& x, ReduceAttrs attrs = {}, std::string_view name = {});
Blob ReduceMin(const Blob& x, ReduceAttrs attrs = {}, std::string_view name = {});
/// The product of the elements over some axes (f32, f64, i32, i64; integers wrap); an empty product is
/// 1. The gradient is dy times the product of the other elements (right with zeros among them).
Blob ReduceProd(const Blob& x, ReduceAttrs attrs = {}, std::string_view name = {});

/// Elementwise max / min with numpy broadcasting (f32, f64, i32, i64). On ties the gradient goes
/// to `a` (OneFlow's rule: a gets it where a >= b for maximum, a <= b for minimum).
Blob Maximum(const Blob& a, const Blob& b, std::string_view name = {});
Blob Minimum(const Blob& a, const Blob& b, std::string_view name = {});

/// a (kind) b elementwise with numpy broadcasting (weir/op_kinds.hpp: equal, greater, ...): int8 1 or
/// 0. a and b share one dtype: f32, f64, i32, i64, u8 or i8. No gradient.
Blob Compare(const Blob& a, const Blob& b, CompareAttrs attrs, std::string_view name = {});

/// x clamped to [min, max] elementwise (f32, f64, i32, i64; for integers the bounds are rounded
/// inward). NaN stays NaN. The gradient passes where min <= x <= max (inclusive, as in OneFlow), else 0.
Blob ClipByValue(const Blob& x, ClipAttrs attrs, std::string_view name = {});

/// x quantized to quantization_bit-bit integers and back (OneFlow's fake_quantization, for
/// quantization-aware training), f32 or f64. scale and zero_point: 1-D of x's dtype, one entry (per
/// layer) or x.shape[0] entries (per channel, along axis 0); for "cambricon" one entry, scale holding
/// the power of two's exponent. scheme: "symmetric" or "affine"; formula: "google" or "cambricon".
/// Rounding is to nearest, ties to even. The gradient passes dy to x unchanged (the straight-through
/// estimator), none to scale and zero_point.
Blob FakeQuantization(const Blob& x, const Blob& scale, const Blob& zero_point, int quantization_bit = 8,
                      std::string_view scheme = "symmetric", std::string_view formula = "google",
                      std::string_view name = {});

/// The CTC loss of each example (OneFlow's and PyTorch's ctc_loss with reduction "none"): log_probs
/// (T, N, C) f32/f64 (log-softmax outputs), targets (N, S), input_lengths (N) in [0, T] and
/// target_lengths (N) in [0, S], all three i32 or all three i64 -> (N) in log_probs' dtype, infinite
/// where no alignment fits unless zero_infinity (then 0, with a 0 gradient). Targets are classes in
/// [0, C); a length or target out of range fails the call. Differentiable in log_probs.
Blob CtcLoss(const Blob& log_probs, const Blob& targets, const Blob& input_lengths, const Blob& target_lengths,
             std::int64_t blank = 0, bool zero_infinity = false, std::string_view name = {});

/// indices (...) i32/i64 -> (..., depth): on_value at each index, off_value elsewhere. An index
/// outside [0, depth) fails the call (as OneFlow's kernel). No gradient.
Blob OneHot(const Blob& indices, OneHotAttrs attrs, std::string_view name = {});

/// condition ? x : y elementwise, the three numpy-broadcast to one shape (OneFlow's flow.where with x
/// and y). condition: i8, u8, bool, i32 or i64 (nonzero takes x); x and y share a dtype. The gradient
/// flows to x where the condition holds and to y elsewhere.
Blob Where(const Blob& condition, const Blob& x, const Blob& y, std::string_view name = {});

/// The entries of params along `axis` that indices (i32/i64) pick: params[:axis] + indices +
/// params[axis+1:] (an embedding lookup with axis 0). An index outside [0, params.shape[axis]) fails
/// the call. The gradient for params is unsorted_segment_sum of dy by the indices.
Blob Gather(const Blob& params, const Blob& indices, int axis = 0, std::string_view name = {});

/// data (f32, f64, i32, i64) whose axes from `axis` on start with segment_ids' shape, summed by id into
/// num_segments segments: data[:axis] + [num_segments] + data[axis + ids' rank:], zeros where no id
/// points. An id outside [0, num_segments) fails the call. The gradient for data is gather(dy, ids).
Blob UnsortedSegmentSum(const Blob& data, const Blob& segment_ids, std::int64_t num_segments, int axis = 0,
                        std::string_view name = {});

/// The indices (i32) that sort each row of x's last axis (f32, f64, i32, i64), ascending or descending;
/// NaN counts as the largest, equal values keep their order. No gradient.
Blob ArgSort(const Blob& x, bool descending = false, std::string_view name = {});

/// The distinct values of x (one-dimensional; f32, f64, i32, i64) and their counts, as OneFlow's
/// flow.experimental.unique_with_counts: {y, idx, count, num_unique}, the values ascending in y's first
/// num_unique entries (NaN the largest; zeros after), idx[i] each element's value's position in y,
/// count each value's occurrences, num_unique (1) how many; indices of dtype out_idx (i32 or i64).
std::vector<Blob> UniqueWithCounts(const Blob& x, DType out_idx = DType::kI32, std::string_view name = {});

/// The coordinates of x's nonzero elements (x of 1 to 12 axes, any number dtype), as OneFlow's argwhere
/// op: {indices, size}, indices (x's element count, x's rank) holding one element's coordinates a row,
/// in row-major order, in its first `size` rows and zeros after; size (1) how many; both of dtype
/// `dtype` (i32 or i64). No gradient.
std::vector<Blob> Argwhere(const Blob& x, DType dtype = DType::kI32, std::string_view name = {});

/// The running sums of x (f32, f64, i32, i64) along `axis`: from the end with `reverse`; leaving each
/// element out of its own sum with `exclusive`. The gradient is dy's running sum the other way.
Blob Cumsum(const Blob& x, int axis = 0, bool exclusive = false, bool reverse = false, std::string_view name = {});
/// Each row of x (f32, f64) — the axes from `begin_norm_axis` on — normalized: (x − mean) /
/// √(variance + epsilon), the biased variance over the row. OneFlow's layer_norm without its scale and
/// shift (multiply by gamma and add beta after it, broadcasting over the rows).
Blob LayerNorm(const Blob& x, int begin_norm_axis = 1, double epsilon = 1e-5, std::string_view name = {});

/// Each key of `in` (i32/i64, any shape) as its ordinal, 1, 2, ... in the order keys are first seen
/// (OneFlow's categorical_ordinal_encoder). `table` (2 x capacity entries) and `size` (1), variables of
/// the keys' dtype starting at zero, hold the ordinals across calls; the op writes them in place. A new
/// key beyond the capacity fails the call. No gradient.
Blob CategoricalOrdinalEncode(const Blob& table, const Blob& size, const Blob& in, std::string_view name = {});

/// The slices of params that tuples of indices (i32/i64) pick: the last axis of indices holds K indices
/// into params' first K axes; the output is indices.shape[:-1] + params.shape[K:]. An index outside
/// its axis fails the call. The gradient for params is scatter_nd of dy by the indices.
Blob GatherNd(const Blob& params, const Blob& indices, std::string_view name = {});
/// Zeros of `shape` with each slice of updates (f32, f64, i32, i64) added where its tuple of indices
/// points (GatherNd's adjoint: updates has the shape indices.shape[:-1] + shape[K:]); tuples that repeat
/// add up.
Blob ScatterNd(const Blob& indices, const Blob& updates, Shape shape, std::string_view name = {});
/// params with the slices that indices pick replaced by updates (of repeated tuples, one wins).
Blob TensorScatterNdUpdate(const Blob& params, const Blob& indices, const Blob& updates, std::string_view name = {});
/// params with each slice of updates added where its tuple of indices points.
Blob TensorScatterNdAdd(const Blob& params, const Blob& indices, const Blob& updates, std::string_view name = {});

// --- images (conv2d, pooling, batch normalization) -------------------------------------------

/// 2-D cross-correlation (no bias; OneFlow's flow.nn.conv2d). x (N,C,H,W) or (N,H,W,C); weight
/// (out, C/groups, kh, kw) for NCHW, (out, kh, kw, C/groups) for NHWC.
Blob Conv2D(const Blob& x, const Blob& weight, Conv2DAttrs attrs = {}, std::string_view name = {});
/// The transposed convolution (OneFlow's flow.nn.conv2d_transpose): the adjoint of Conv2D(·, weight,
/// attrs) on inputs of `output_shape`, applied to x, which has that convolution's output shape. weight
/// is laid out as Conv2D's: (x's channels, the output's channels, kh, kw) for NCHW.
Blob Conv2DTranspose(const Blob& x, const Blob& weight, Shape output_shape, Conv2DAttrs attrs = {},
                     std::string_view name = {});

/// The largest element of each window; padded positions never win. Its gradient goes to a single
/// element per window: on ties, the first largest in row-major window order (f64 reference kernel;
/// the f32 oneDNN kernel also picks a single one, which is oneDNN's choice).
Blob MaxPool2D(const Blob& x, Pool2DAttrs attrs = {}, std::string_view name = {});
/// The mean of each window over the pixels of x it covers (padding is excluded from the divisor, as
/// in TensorFlow and OneFlow).
Blob AvgPool2D(const Blob& x, Pool2DAttrs attrs = {}, std::string_view name = {});

/// Batch normalization (OneFlow's "normalization" op): y = gamma · (x − mean) / sqrt(var + epsilon) +
/// beta, per channel. gamma, beta, moving_mean and moving_variance are (C) with x's dtype. Training
/// normalizes with the batch mean and biased variance and also updates moving_mean and
/// moving_variance in place (each call; they must be variables of the job, updated by no other op),
/// using the unbiased batch variance for the moving variance (as cuDNN and OneFlow's GPU op).
/// Inference normalizes with the moving statistics. Gradients flow to x, gamma and beta.
Blob BatchNorm(const Blob& x, const Blob& gamma, const Blob& beta, const Blob& moving_mean,
               const Blob& moving_variance, BatchNormAttrs attrs = {}, std::string_view name = {});

/// OneFlow's flow.flatten: a reshape merging axes start_dim..end_dim; a 0-D x counts as (1).
Blob Flatten(const Blob& x, FlattenAttrs attrs = {}, std::string_view name = {});

/// x itself, laid out on the devices as `attrs` says (OneFlow's blob.with_distribute and
/// with_gradient_distribute): a hint the consistent view's compiler follows, boxing as needed. No
/// effect in the mirrored view or on one device.
Blob ParallelCast(const Blob& x, ParallelCastAttrs attrs, std::string_view name = {});

/// Reverse-mode gradients: d(sum(y))/d(x) for every x in `xs`, as blobs of the same job (an
/// undefined Blob where x does not reach y). Throws std::invalid_argument naming the op when a
/// path from x to y crosses an op without a gradient.
std::vector<Blob> Gradients(const Blob& y, const std::vector<Blob>& xs);

// The data pipeline (attributes and semantics in weir/op_attrs.hpp): a job that reads and decodes
// its own batches on the host, each op an actor of the job. Records and decoded images travel as
// tensor_buffer blobs, which only these ops read.

/// A batch of serialized OFRecords per call, read from part files.
Blob OFRecordReader(JobBuilder& job, OFRecordReaderAttrs attrs, std::string_view name = {});
/// One feature of each record as a (batch, *shape) tensor.
Blob OFRecordRawDecoder(const Blob& records, OFRecordRawDecoderAttrs attrs, std::string_view name = {});
/// The bytes of one feature of each record (a tensor_buffer).
Blob OFRecordBytesDecoder(const Blob& records, OFRecordBytesDecoderAttrs attrs, std::string_view name = {});
/// The JPEG of one feature of each record, decoded (a tensor_buffer of images).
Blob OFRecordImageDecoder(const Blob& records, OFRecordImageDecoderAttrs attrs, std::string_view name = {});
/// Images resized: {images, scales} to a fixed size, {images, sizes, scales} keeping the aspect ratio.
std::vector<Blob> ImageResize(const Blob& images, ImageResizeAttrs attrs, std::string_view name = {});
/// A window of each image, mirrored where `mirror` (optional: an undefined Blob) says, normalized.
Blob CropMirrorNormalize(const Blob& images, const Blob& mirror, CropMirrorNormalizeAttrs attrs, std::string_view name = {});
/// A batch of int8 coin flips per call.
Blob CoinFlip(JobBuilder& job, CoinFlipAttrs attrs, std::string_view name = {});
/// A batch of random values per call (synthetic data).
Blob DecodeRandom(JobBuilder& job, DecodeRandomAttrs attrs, std::string_view name = {});
/// A batch of token samples per call from a Megatron-LM indexed dataset; the n-th call of the job
/// reads batch n.
Blob MegatronGptMmapDataLoader(JobBuilder& job, MegatronGptLoaderAttrs attrs, std::string_view name = {});
/// The same, reading batch `iteration` (an i64 (1) variable, which a checkpoint saves) and adding 1
/// to it each call: a job restored from a checkpoint goes on where it stopped.
Blob MegatronGptMmapDataLoader(const Blob& iteration, MegatronGptLoaderAttrs attrs, std::string_view name = {});

}  // namespace weir
