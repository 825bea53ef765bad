#pragma once
// The boxing pass: a value's registers with the SBP an op needs, from the SBP it has (graph/sbp.hpp),
// through collective actors (all-reduce, all-gather, reduce-scatter, all-to-all, scatter) on the
// collective stream, or none where the devices' shared memory makes a piece readable in place.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "graph/planner/lowering.hpp"
#include "kernels/collectives/collective_attrs.hpp"

namespace weir::internal {

class Boxing {
 public:
  explicit Boxing(Lowering& lowering) : lowering_(lowering) {}

  /// The registers of `value` with SBP `to` on `devices`, boxing what it has into that. A broadcast
  /// value is one buffer every device reads, wherever it was made.
  Placed Box(int value, const Sbp& to, const std::vector<int>& devices);
  /// A collective actor `op_type` on the collective stream, chained after the previous collective,
  /// reading registers `from`; returns its output registers (one per meta of `out_metas`).
  std::vector<int> CollectiveTask(std::string_view op_type, const std::string& value_name, CollectiveAttrs collective,
                                  const std::vector<int>& from, std::vector<TensorMeta> in_metas,
                                  const std::vector<TensorMeta>& out_metas);
  /// Whether `value` is one register that is a session variable's whole storage.
  bool IsWholeVariable(const Placed& value) const;
  /// The collective actors so far, in plan order.
  const std::vector<int>& Collectives() const { return collectives_; }

 private:
  Placed RowsOfVariable(int value, const std::vector<int>& devices);
  std::optional<Placed> ReadInput(int value, const Sbp& to, const std::vector<int>& devices);
  Placed ReduceScatterInPlace(int value, const Placed& from, const Sbp& to, const std::vector<int>& devices);

  Lowering& lowering_;
  int collective_stream_ = -1;  // created with the first collective
  std::vector<int> collectives_;
  std::map<std::pair<int, std::vector<int>>, Placed> variable_rows_;
  std::map<std::tuple<int, std::string, std::vector<int>>, Placed> input_reads_;
};

}  // namespace weir::internal
