// fake_quantization: x quantized to a few-bit integer grid and mapped back (OneFlow's op for
// quantization-aware training), per layer or per channel along axis 0. Its gradient is the
// straight-through estimator: dy passes to x unchanged, as in OneFlow.
#include "graph/attrs_by_name.hpp"
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "kernels/functors/fake_quantization.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {

template <> struct EnumNames<QuantizationScheme> {
  static constexpr const char* kNames[] = {"symmetric", "affine"};
};
template <> struct EnumNames<QuantizationFormula> {
  static constexpr const char* kNames[] = {"google", "cambricon"};
};

namespace {

std::vector<TensorMeta> InferFakeQuantization(const InferContext& ctx) {
  const TensorMeta& x = ctx.inputs[0];
  const TensorMeta& scale = ctx.inputs[1];
  const TensorMeta& zero_point = ctx.inputs[2];
  const auto& attrs = ctx.Get<FakeQuantizationAttrs>();
  if (x.dtype != DType::kF32 && x.dtype != DType::kF64) throw OpError(ctx.op_type, "expects an f32 or f64 x, got {}", x.dtype);
  if (scale.dtype != x.dtype || zero_point.dtype != x.dtype) {
    throw OpError(ctx.op_type, "scale ({}) and zero_point ({}) must have x's dtype {}", scale.dtype, zero_point.dtype,
                  x.dtype);
  }
  if (attrs.quantization_bit < 2 || attrs.quantization_bit > 8) {
    throw OpError(ctx.op_type, "quantization_bit must be in [2, 8], got {}", attrs.quantization_bit);
  }
  if (x.shape.Rank() < 1) throw OpError(ctx.op_type, "expects x of rank >= 1, got {}", x.shape);
  const std::int64_t channels = scale.shape.Rank() == 1 ? scale.shape[0] : -1;
  const bool per_channel_ok = attrs.formula == QuantizationFormula::kGoogle && channels == x.shape[0];
  if (channels != 1 && !per_channel_ok) {
    throw OpError(ctx.op_type, "scale must be (1,){} for x {}, got {}",
                  attrs.formula == QuantizationFormula::kGoogle ? fmt::format(" or (x.shape[0],) = ({},)", x.shape[0]) : "",
                  x.shape, scale.shape);
  }
  if (zero_point.shape != scale.shape) {
    throw OpError(ctx.op_type, "zero_point {} must have scale's shape {}", zero_point.shape, scale.shape);
  }
  return {x};
}

std::vector<Blob> FakeQuantizationGradient(const GradContext& ctx) {
  return {ctx.needs_grad[0] ? ctx.output_grads[0] : Blob(), Blob(), Blob()};
}

// x split along any axis with whole scale and zero point; per channel, also x split along axis 0
// with the channels' scales and zero points split alike.
std::vector<SbpSignature> FakeQuantizationSbp(const SbpContext& ctx) {
  const int rank = ctx.inputs[0].shape.Rank();
  const bool per_channel = ctx.inputs[1].shape[0] != 1;
  std::vector<SbpSignature> signatures;
  for (int axis = 0; axis < rank; ++axis) {
    if (axis == 0 && per_channel) {
      signatures.push_back({{Sbp::S(0), Sbp::S(0), Sbp::S(0)}, {Sbp::S(0)}});
    } else {
      signatures.push_back({{Sbp::S(axis), Sbp::B(), Sbp::B()}, {Sbp::S(axis)}});
    }
  }
  return signatures;
}

// Every scheme, 8 bits and few (many values clamped), per layer and per channel; x, scale and zero
// point drawn positive. No f64 example is small enough for finite differences: the rounding's true
// derivative is zero almost everywhere, where the gradient is straight through.
std::vector<OpExample> FakeQuantizationExamples() {
  std::vector<OpExample> examples;
  for (const FakeQuantizationAttrs& attrs :
       {FakeQuantizationAttrs{8, QuantizationScheme::kSymmetric, QuantizationFormula::kGoogle},
        FakeQuantizationAttrs{2, QuantizationScheme::kSymmetric, QuantizationFormula::kGoogle},
        FakeQuantizationAttrs{8, QuantizationScheme::kAffine, QuantizationFormula::kGoogle},
        FakeQuantizationAttrs{3, QuantizationScheme::kAffine, QuantizationFormula::kGoogle},
        FakeQuantizationAttrs{8, QuantizationScheme::kSymmetric, QuantizationFormula::kCambricon},
        FakeQuantizationAttrs{4, QuantizationScheme::kAffine, QuantizationFormula::kCambricon}}) {
    for (const auto& [x, channels, dtype] :
         {std::tuple{Shape{7, 13}, std::int64_t{1}, DType::kF32}, std::tuple{Shape{7, 13}, std::int64_t{7}, DType::kF32},
          std::tuple{Shape{0, 3}, std::int64_t{1}, DType::kF32}, std::tuple{Shape{30, 3, 3}, std::int64_t{30}, DType::kF64},
          std::tuple{Shape{1000, 3}, std::int64_t{1}, DType::kF64}}) {
      if (channels != 1 && attrs.formula == QuantizationFormula::kCambricon) continue;
      const Shape per{channels};
      examples.push_back({.attrs = attrs, .inputs = {{x, dtype}, {per, dtype}, {per, dtype}}, .low = 0.05, .high = 1.5});
    }
  }
  return examples;
}

WEIR_REGISTER_OP({.type = "fake_quantization",
                  .num_inputs = 3,
                  .input_names = {"x", "scale", "zero_point"},
                  .infer = InferFakeQuantization,
                  .gradient = FakeQuantizationGradient,
                  .sbp = FakeQuantizationSbp,
                  .read_attrs = ReadAttrs<FakeQuantizationAttrs>(
                      Attr("quantization_bit", &FakeQuantizationAttrs::quantization_bit),
                      Attr("quantization_scheme", &FakeQuantizationAttrs::scheme),
                      Attr("quantization_formula", &FakeQuantizationAttrs::formula)),
                  .examples = FakeQuantizationExamples});

}  // namespace
}  // namespace internal

Blob FakeQuantization(const Blob& x, const Blob& scale, const Blob& zero_point, int quantization_bit,
                      std::string_view scheme, std::string_view formula, std::string_view name) {
  internal::FakeQuantizationAttrs attrs{.quantization_bit = quantization_bit};
  if (scheme == "affine") {
    attrs.scheme = internal::QuantizationScheme::kAffine;
  } else if (scheme != "symmetric") {
    throw std::invalid_argument(fmt::format("[fake_quantization] scheme must be \"symmetric\" or \"affine\", got \"{}\"", scheme));
  }
  if (formula == "cambricon") {
    attrs.formula = internal::QuantizationFormula::kCambricon;
  } else if (formula != "google") {
    throw std::invalid_argument(fmt::format("[fake_quantization] formula must be \"google\" or \"cambricon\", got \"{}\"", formula));
  }
  return internal::AddOp1("fake_quantization", {x, scale, zero_point}, attrs, name);
}

}  // namespace weir
