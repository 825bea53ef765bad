#pragma once
// The SBP choice pass of a consistent op: of the signatures its op declares (graph/sbp.hpp) and
// all-broadcast, the one whose boxing moves the fewest bytes.
#include <any>
#include <string>
#include <string_view>
#include <vector>

#include "graph/planner/lowering.hpp"

namespace weir::internal {

struct SignatureInput {
  std::string name;  // the value's, for errors
  TensorMeta meta;   // logical
  Placed placed;     // its registers' SBP and devices so far
  /// One register that is a session variable's whole storage: also its own rows (Boxing).
  bool whole_variable = false;
};

struct SignatureQuery {
  std::string_view op_type;  // an op's, or a fused kernel's
  const std::any* attrs = nullptr;
  std::vector<SignatureInput> inputs;
  std::vector<TensorMeta> outputs;  // logical
  std::vector<int> devices;         // the op's placement
  /// An in-place update may write a whole variable's rows per device (CPU devices of one process);
  /// otherwise it writes a variable as the variable is held.
  bool variable_rows = false;
};

/// The signature `query`'s op runs with: the declared one (then all-broadcast) that moves the fewest
/// bytes, the first declared on a tie. Splits need at least one element per device; an op writing an
/// input in place writes the variable where it is (no boxing of that input). All-broadcast on one
/// device. Throws std::invalid_argument naming the variable when an in-place update cannot write it
/// as it is held.
SbpSignature ChooseSignature(const SignatureQuery& query);

/// Bytes that boxing a value of `bytes` held as `from` into `to` on `devices` moves between devices
/// (the choice's cost); a local slice of a broadcast buffer costs a little, so that an op of
/// broadcast inputs stays whole. Infinite for a partial sum, which no boxing makes.
double BoxingCost(const Placed& from, std::size_t bytes, const Sbp& to, const std::vector<int>& devices);

}  // namespace weir::internal
