#pragma once
/// \file The ops a job is built from. Each takes Blobs of one job, checks shapes and dtypes at
/// once (throwing std::invalid_argument that names the op and shows the shapes), and returns the
/// output Blob. `name` is optional; ops are named "<type>_<n>" otherwise.
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "weir/job.hpp"

namespace weir {

/// Copies its input.
Blob Identity(const Blob& x, std::string_view name = {});

struct ReshapeAttrs {
  /// Target shape; at most one dimension may be -1 (inferred).
  std::vector<std::int64_t> shape;
};
Blob Reshape(const Blob& x, ReshapeAttrs attrs, std::string_view name = {});

struct TransposeAttrs {
  /// Output axis i is input axis perm[i]; a permutation of 0..rank-1.
  std::vector<int> perm;
};
Blob Transpose(const Blob& x, TransposeAttrs attrs, std::string_view name = {});

struct MatMulAttrs {
  bool transpose_a = false;
  bool transpose_b = false;
  /// Scales the product: out = alpha * op(a) op(b).
  double alpha = 1.0;
};
/// 2-D matrix product of op(a) (m,k) and op(b) (k,n).
Blob MatMul(const Blob& a, const Blob& b, MatMulAttrs attrs = {}, std::string_view name = {});

struct BiasAddAttrs {
  /// The axis of x that bias (1-D) runs along; OneFlow's default is 1 (channels / features).
  int axis = 1;
};
Blob BiasAdd(const Blob& x, const Blob& bias, BiasAddAttrs attrs = {}, std::string_view name = {});

/// Elementwise with numpy broadcasting; both inputs have the same dtype.
Blob Add(const Blob& a, const Blob& b, std::string_view name = {});
Blob Sub(const Blob& a, const Blob& b, std::string_view name = {});
Blob Mul(const Blob& a, const Blob& b, std::string_view name = {});
Blob Div(const Blob& a, const Blob& b, std::string_view name = {});

enum class ScalarOpKind : std::uint8_t {
  kAdd,      // x + s
  kSub,      // x - s
  kRSub,     // s - x
  kMul,      // x * s
  kDiv,      // x / s
  kRDiv,     // s / x
  kPow,      // x ^ s
};
struct ScalarAttrs {
  ScalarOpKind kind = ScalarOpKind::kAdd;
  double value = 0.0;
};
/// x (op) scalar, elementwise; the output has x's dtype.
Blob Scalar(const Blob& x, ScalarAttrs attrs, std::string_view name = {});
Blob ScalarAdd(const Blob& x, double value, std::string_view name = {});
Blob ScalarMul(const Blob& x, double value, std::string_view name = {});

Blob Relu(const Blob& x, std::string_view name = {});
Blob Sigmoid(const Blob& x, std::string_view name = {});
Blob Tanh(const Blob& x, std::string_view name = {});

struct SoftmaxAttrs {
  int axis = -1;
};
Blob Softmax(const Blob& x, SoftmaxAttrs attrs = {}, std::string_view name = {});

struct ReduceAttrs {
  /// Axes to reduce; empty means all axes. Negative axes count from the end.
  std::vector<int> axes;
  bool keep_dims = false;
};
Blob ReduceSum(const Blob& x, ReduceAttrs attrs = {}, std::string_view name = {});
Blob ReduceMean(const Blob& x, ReduceAttrs attrs = {}, std::string_view name = {});

struct ArgMaxAttrs {
  int axis = -1;
  /// OneFlow's argmax returns int32.
  DType output_dtype = DType::kI32;
};
/// Index of the largest element along `axis` (the first on ties); the axis is removed.
Blob ArgMax(const Blob& x, ArgMaxAttrs attrs = {}, std::string_view name = {});

struct CastAttrs {
  DType dtype = DType::kF32;
};
Blob Cast(const Blob& x, CastAttrs attrs, std::string_view name = {});

/// Per-example cross entropy of softmax(logits) against integer class labels:
/// labels (N) i32/i64, logits (N, C) float -> (N) with the logits' dtype. A label outside
/// [0, C) fails the call.
Blob SparseSoftmaxCrossEntropy(const Blob& labels, const Blob& logits, std::string_view name = {});

// --- images (conv2d, pooling, batch normalization) -------------------------------------------

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

/// Reverse-mode gradients: d(sum(y))/d(x) for every x in `xs`, as blobs of the same job (an
/// undefined Blob where x does not reach y). Throws std::invalid_argument naming the op when a
/// path from x to y crosses an op without a gradient.
std::vector<Blob> Gradients(const Blob& y, const std::vector<Blob>& xs);

}  // namespace weir
