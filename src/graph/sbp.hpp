#pragma once
// SBP: how a consistent blob's logical tensor maps onto the devices of its placement. Split(axis):
// each device holds a slice along the axis; Broadcast: each holds the whole tensor (on the CPU
// devices of one process, one buffer they all read); PartialSum: each holds an addend of it. Every
// op declares the signatures it can run with in its own file (OpDef::sbp); the planner picks one per
// op and inserts boxing where a producer's SBP is not what the consumer needs.
#include <any>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/tensor_meta.hpp"

namespace weir::internal {

struct Sbp {
  enum class Kind : std::uint8_t { kBroadcast, kSplit, kPartialSum };
  Kind kind = Kind::kBroadcast;
  int axis = 0;  // kSplit only

  static Sbp B() { return {}; }
  static Sbp S(int axis) { return {Kind::kSplit, axis}; }
  static Sbp P() { return {Kind::kPartialSum, 0}; }
  bool IsSplit() const { return kind == Kind::kSplit; }
  bool IsBroadcast() const { return kind == Kind::kBroadcast; }
  bool IsPartialSum() const { return kind == Kind::kPartialSum; }
  /// "B", "S(1)", "P".
  std::string ToString() const;
  friend bool operator==(const Sbp&, const Sbp&) = default;
};

/// One way an op can run on several devices: the SBP of each input and output.
struct SbpSignature {
  std::vector<Sbp> inputs;
  std::vector<Sbp> outputs;
  std::string ToString() const;
  friend bool operator==(const SbpSignature&, const SbpSignature&) = default;
};

/// What an op's SBP rule sees: logical metas and the op's attributes.
struct SbpContext {
  std::string_view op_type;
  const std::any* attrs = nullptr;
  std::span<const TensorMeta> inputs;
  std::span<const TensorMeta> outputs;

  template <typename Attrs> const Attrs& Get() const { return std::any_cast<const Attrs&>(*attrs); }
};

/// The signatures an op declares besides all-broadcast (which every op has: it runs once on the
/// whole tensors), most preferred first.
using SbpFn = std::function<std::vector<SbpSignature>(const SbpContext&)>;

/// Elementwise ops with numpy broadcasting: for each output axis, every input split along the axis
/// it aligns with (broadcast where it has none or a 1 there). `linear`: the op is a sum of linear
/// functions of its inputs (add, sub, identity, scaling), so all-partial-sum inputs give a
/// partial-sum output.
std::vector<SbpSignature> ElementwiseSbp(const SbpContext& ctx, bool linear = false);
/// ElementwiseSbp restricted to output axes not in `fixed` (axes an op works along, such as a
/// softmax's): splitting them would change the result.
std::vector<SbpSignature> ElementwiseSbpExcept(const SbpContext& ctx, std::vector<int> fixed);
/// Ops whose examples are independent (convolutions, pooling, per-example losses): every input and
/// output splits along axis 0, the batch.
std::vector<SbpSignature> BatchSplitSbp(const SbpContext& ctx);
/// Elementwise optimizer updates of a split variable: every input of the variable's shape (the
/// variable, its gradient, its slots) split along axis 0 with it, the others (learning rate, step)
/// whole. The update writes each device's rows in place.
std::vector<SbpSignature> UpdateSbp(const SbpContext& ctx);
/// The ElementwiseSbp rule for ops whose inputs all have the output's shape.
SbpFn ElementwiseRule(bool linear = false);

/// The shape of device `rank`'s piece of a `logical` tensor with `sbp` over `devices` devices.
Shape PieceShape(const Shape& logical, const Sbp& sbp, int devices, int rank);

}  // namespace weir::internal

namespace weir::internal {

/// Reductions over `axes` (empty: all; negative from the end): splitting a kept axis keeps the output
/// split along it; splitting a reduced axis gives partial sums when `sums` (a mean over a split axis
/// is not the sum of the pieces' means, so mean reductions do not declare it); and sums are linear.
std::vector<SbpSignature> ReduceSbp(const SbpContext& ctx, std::vector<int> axes, bool keep_dims, bool sums);

}  // namespace weir::internal
