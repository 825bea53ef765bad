#include "graph/planner/sbp_choice.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "graph/op_registry.hpp"
#include "kernels/attrs/fused_attrs.hpp"

namespace weir::internal {

namespace {

// The signatures an op (or a fused kernel) declares besides all-broadcast; constants declare none.
std::vector<SbpSignature> SignaturesOf(std::string_view op_type, const SbpContext& ctx) {
  if (op_type == "matmul_bias_act") {  // the matmul's data-parallel signature, bias whole
    const int a_rows = ctx.Get<FusedMatMulAttrs>().matmul.transpose_a ? 1 : 0;
    return {{{Sbp::S(a_rows), Sbp::B(), Sbp::B()}, {Sbp::S(0)}}};
  }
  if (op_type == "conv2d_bias_act") {  // images split; a residual splits with them
    if (ctx.Get<FusedConv2DAttrs>().add_residual) return {{{Sbp::S(0), Sbp::B(), Sbp::B(), Sbp::S(0)}, {Sbp::S(0)}}};
    return {{{Sbp::S(0), Sbp::B(), Sbp::B()}, {Sbp::S(0)}}};
  }
  const OpDef* def = TryFindOp(op_type);  // constants have no OpDef
  return def != nullptr && def->sbp ? def->sbp(ctx) : std::vector<SbpSignature>{};
}

// Whether every split of `sbps` has at least one element per device.
bool Fits(const std::vector<Sbp>& sbps, const std::vector<TensorMeta>& metas, int devices) {
  if (sbps.size() != metas.size()) return false;
  for (std::size_t i = 0; i < sbps.size(); ++i) {
    if (!sbps[i].IsSplit()) continue;
    if (sbps[i].axis < 0 || sbps[i].axis >= metas[i].shape.Rank() || metas[i].shape[sbps[i].axis] < devices) return false;
  }
  return true;
}

}  // namespace

double BoxingCost(const Placed& from, std::size_t value_bytes, const Sbp& to, const std::vector<int>& devices) {
  const double bytes = static_cast<double>(value_bytes);
  if (from.sbp == to && (to.IsBroadcast() || from.devices == devices)) return 0.0;
  if (to.IsPartialSum()) return std::numeric_limits<double>::infinity();
  const double k = static_cast<double>(from.devices.size());
  if (!from.sbp.IsBroadcast() && to.IsSplit() && from.devices == devices) {
    return from.sbp.IsPartialSum() ? bytes * (k - 1) / k : bytes * (k - 1) / (k * k);
  }
  double cost = from.sbp.IsPartialSum() ? 2 * bytes * (k - 1) / k : from.sbp.IsSplit() ? bytes * (k - 1) / k : 0;
  if (to.IsSplit()) cost += 0.01 * bytes / static_cast<double>(devices.size());
  return cost;
}

SbpSignature ChooseSignature(const SignatureQuery& query) {
  SbpSignature all_broadcast{std::vector<Sbp>(query.inputs.size(), Sbp::B()), std::vector<Sbp>(query.outputs.size(), Sbp::B())};
  const int k = static_cast<int>(query.devices.size());
  if (k == 1) return all_broadcast;
  std::vector<TensorMeta> in_metas;
  for (const SignatureInput& input : query.inputs) in_metas.push_back(input.meta);
  std::vector<SbpSignature> candidates = SignaturesOf(query.op_type, {query.op_type, query.attrs, in_metas, query.outputs});
  std::erase_if(candidates, [&](const SbpSignature& c) {
    return !Fits(c.inputs, in_metas, k) || !Fits(c.outputs, query.outputs, k);
  });
  candidates.push_back(all_broadcast);
  if (const OpDef* def = TryFindOp(query.op_type); def != nullptr) {
    for (int m : MutatedInputs(query.op_type, query.attrs != nullptr ? *query.attrs : std::any{}, query.inputs.size())) {
      const SignatureInput& variable = query.inputs[static_cast<std::size_t>(m)];
      const Sbp& has = variable.placed.sbp;
      // Not across processes: every process keeps its whole copy of each variable, updated whole.
      const bool rows = variable.whole_variable && query.variable_rows;
      std::erase_if(candidates, [&](const SbpSignature& c) {
        const Sbp& wants = c.inputs[static_cast<std::size_t>(m)];
        return !(wants == has || (rows && wants == Sbp::S(0)));
      });
      if (candidates.empty()) {
        throw std::invalid_argument(fmt::format(
            "[{}] cannot update '{}' in place: it is {} over {} devices and the op runs only whole (use an "
            "elementwise optimizer such as SGD, momentum, Adam or RMSProp with split variables)",
            query.op_type, variable.name, has.ToString(), k));
      }
    }
  }
  const SbpSignature* best = nullptr;
  double best_cost = std::numeric_limits<double>::infinity();
  for (const SbpSignature& candidate : candidates) {
    double cost = 0;
    for (std::size_t i = 0; i < query.inputs.size(); ++i) {
      cost += BoxingCost(query.inputs[i].placed, query.inputs[i].meta.NumBytes(), candidate.inputs[i], query.devices);
    }
    if (best == nullptr || cost < best_cost) {
      best = &candidate;
      best_cost = cost;
    }
  }
  return *best;
}

}  // namespace weir::internal
