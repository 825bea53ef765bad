#pragma once
// Attributes of the collective (boxing) actors the planner inserts; they are plan tasks, not graph
// ops, and their op type names the collective: all_reduce, reduce_scatter, all_gather, all_to_all,
// scatter, and transfer (a register's bytes from the process that made it to every other process).
#include <cstdint>
#include <vector>

#include "kernels/collectives/communicator.hpp"

namespace weir::internal {

/// Which collective a kernel runs, as its op type names it; the kernel's registration gives it
/// (kCollectiveOpTypes), so that kernels branch on the kind, not on the name.
enum class CollectiveKind : std::uint8_t { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kScatter, kTransfer };

/// The collectives' op types and kinds, for registering their kernels: those that reduce take
/// numbers; the others move bytes and take every dtype (labels, masks) too.
struct CollectiveOpType {
  const char* op_type;
  CollectiveKind kind;
  bool moves_bytes;
};
inline constexpr CollectiveOpType kCollectiveOpTypes[] = {
    {"all_reduce", CollectiveKind::kAllReduce, false},  {"reduce_scatter", CollectiveKind::kReduceScatter, false},
    {"all_gather", CollectiveKind::kAllGather, true},   {"all_to_all", CollectiveKind::kAllToAll, true},
    {"scatter", CollectiveKind::kScatter, true},        {"transfer", CollectiveKind::kTransfer, true}};

/// Calls visit.template operator()<kKind>() with `kind` as a compile-time constant (kernel factories
/// take no arguments but the setup, so a registration instantiates one per kind).
template <typename Visit> void VisitCollectiveKind(CollectiveKind kind, Visit&& visit) {
  switch (kind) {
    case CollectiveKind::kAllReduce: return visit.template operator()<CollectiveKind::kAllReduce>();
    case CollectiveKind::kAllGather: return visit.template operator()<CollectiveKind::kAllGather>();
    case CollectiveKind::kReduceScatter: return visit.template operator()<CollectiveKind::kReduceScatter>();
    case CollectiveKind::kAllToAll: return visit.template operator()<CollectiveKind::kAllToAll>();
    case CollectiveKind::kScatter: return visit.template operator()<CollectiveKind::kScatter>();
    case CollectiveKind::kTransfer: return visit.template operator()<CollectiveKind::kTransfer>();
  }
}

struct CollectiveAttrs {
  ReduceOp op = ReduceOp::kSum;  // all_reduce, reduce_scatter
  int devices = 1;
  /// all_reduce: the tensors this one actor reduces (a fusion bucket of gradients, which crosses the
  /// processes as one collective); inputs tensor by tensor, `devices` pieces each, one output each.
  int tensors = 1;
  int axis = 0;      // the split axis of reduce_scatter's outputs, all_gather's inputs, scatter's outputs,
                     // all_to_all's inputs
  int out_axis = 0;  // all_to_all: the split axis of the outputs
  /// -1: one actor for every device. Otherwise this device's part of a collective that each device
  /// runs itself on its own stream (the in-process reduce_scatter: each device sums its piece).
  int rank = -1;
  /// Also across the processes of a distributed session: after combining this process's pieces, each
  /// result is all-reduced (op) over the processes (KernelSetup::processes). The mirrored view's
  /// gradient averaging: the mean of the processes' means is the mean over every device.
  bool across_processes = false;
  /// A consistent job's collective whose pieces are spread over the processes (graph/planner/process_split.hpp):
  /// process q holds pieces [process_pieces[q], process_pieces[q + 1]) of `devices`, and this process's
  /// actor gets only its own. Empty otherwise.
  std::vector<int> process_pieces;
  /// With process_pieces: the logical tensor's shape.
  Shape logical;
  /// transfer: the process whose register is sent.
  int root = 0;
  /// transfer: the processes that read it, each sent the bytes point to point; empty when every
  /// process does (then a broadcast).
  std::vector<int> readers;
};

}  // namespace weir::internal
