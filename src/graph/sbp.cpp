#include "graph/sbp.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "common/split.hpp"

namespace weir::internal {

std::string Sbp::ToString() const {
  switch (kind) {
    case Kind::kBroadcast: return "B";
    case Kind::kSplit: return fmt::format("S({})", axis);
    case Kind::kPartialSum: return "P";
  }
  return "?";
}

std::string SbpSignature::ToString() const {
  auto join = [](const std::vector<Sbp>& sbps) {
    std::vector<std::string> parts;
    for (const Sbp& sbp : sbps) parts.push_back(sbp.ToString());
    return fmt::format("{}", fmt::join(parts, ","));
  };
  return fmt::format("({}) -> ({})", join(inputs), join(outputs));
}

std::vector<SbpSignature> ElementwiseSbpExcept(const SbpContext& ctx, std::vector<int> fixed) {
  std::vector<SbpSignature> signatures;
  const Shape& out = ctx.outputs[0].shape;
  const int rank = out.Rank();
  for (int& axis : fixed) axis = axis < 0 ? axis + rank : axis;
  for (int axis = 0; axis < rank; ++axis) {
    if (std::find(fixed.begin(), fixed.end(), axis) != fixed.end() || out[axis] == 1) continue;
    SbpSignature signature;
    for (const TensorMeta& input : ctx.inputs) {
      const int aligned = axis - (rank - input.shape.Rank());
      const bool splits = aligned >= 0 && input.shape[aligned] == out[axis];
      signature.inputs.push_back(splits ? Sbp::S(aligned) : Sbp::B());
    }
    signature.outputs.assign(ctx.outputs.size(), Sbp::S(axis));
    signatures.push_back(std::move(signature));
  }
  return signatures;
}

std::vector<SbpSignature> ElementwiseSbp(const SbpContext& ctx, bool linear) {
  std::vector<SbpSignature> signatures = ElementwiseSbpExcept(ctx, {});
  if (linear) {
    signatures.push_back({std::vector<Sbp>(ctx.inputs.size(), Sbp::P()), std::vector<Sbp>(ctx.outputs.size(), Sbp::P())});
  }
  return signatures;
}

std::vector<SbpSignature> BatchSplitSbp(const SbpContext& ctx) {
  return {{std::vector<Sbp>(ctx.inputs.size(), Sbp::S(0)), std::vector<Sbp>(ctx.outputs.size(), Sbp::S(0))}};
}

std::vector<SbpSignature> UpdateSbp(const SbpContext& ctx) {
  const Shape& variable = ctx.inputs[0].shape;
  if (variable.Rank() == 0) return {};
  SbpSignature signature;
  for (const TensorMeta& input : ctx.inputs) signature.inputs.push_back(input.shape == variable ? Sbp::S(0) : Sbp::B());
  signature.outputs.assign(ctx.outputs.size(), Sbp::S(0));
  return {signature};
}

SbpFn ElementwiseRule(bool linear) {
  return [linear](const SbpContext& ctx) { return ElementwiseSbp(ctx, linear); };
}

Shape PieceShape(const Shape& logical, const Sbp& sbp, int devices, int rank) {
  return sbp.IsSplit() ? SplitShape(logical, sbp.axis, devices, rank) : logical;
}

}  // namespace weir::internal

namespace weir::internal {

std::vector<SbpSignature> ReduceSbp(const SbpContext& ctx, std::vector<int> axes, bool keep_dims, bool sums) {
  const int rank = ctx.inputs[0].shape.Rank();
  if (axes.empty()) {
    for (int axis = 0; axis < rank; ++axis) axes.push_back(axis);
  }
  for (int& axis : axes) axis = axis < 0 ? axis + rank : axis;
  std::vector<SbpSignature> signatures;
  for (int axis = 0; axis < rank; ++axis) {
    const bool reduced = std::find(axes.begin(), axes.end(), axis) != axes.end();
    if (reduced) {
      if (sums) signatures.push_back({{Sbp::S(axis)}, {Sbp::P()}});
      continue;
    }
    const int before = static_cast<int>(std::count_if(axes.begin(), axes.end(), [&](int a) { return a < axis; }));
    signatures.push_back({{Sbp::S(axis)}, {Sbp::S(keep_dims ? axis : axis - before)}});
  }
  if (sums) signatures.push_back({{Sbp::P()}, {Sbp::P()}});
  return signatures;
}

}  // namespace weir::internal
