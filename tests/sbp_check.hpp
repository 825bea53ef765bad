#pragma once
// Every SBP signature an op declares, checked at the kernel level: the op's CPU kernel run on each
// device's pieces (split slices, broadcast wholes, partial-sum addends) on 2 and 3 devices must give
// the pieces of the one-device result (its slices, itself, or addends summing to it). An op's test
// file builds a job that uses the op and calls CheckSbpSignatures; the ops it checked are recorded
// (tests/coverage.hpp), and the coverage suite checks that every op declaring signatures was checked
// in some suite.
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "common/tensor_meta.hpp"

#include "weir/job.hpp"

namespace weir::testing {

/// Each node's inputs, drawn for its input metas.
using DrawInputs = std::function<std::vector<Tensor>(const std::vector<internal::TensorMeta>&)>;

/// Checks every declared signature of every node of `job` whose op declares any, on 2 and 3 devices;
/// returns the op types checked. Each node's inputs come from `draw`; by default floats in [0.5, 1.5],
/// i32 in [0, 3) and i64 in [1, 3].
std::set<std::string> CheckSbpSignatures(const Job& job, const DrawInputs& draw = {});

}  // namespace weir::testing
