#pragma once
// Attributes of the collective (boxing) actors the planner inserts; they are plan tasks, not graph
// ops, and their op type names the collective: all_reduce, reduce_scatter, all_gather, all_to_all,
// scatter, and transfer (a register's bytes from the process that made it to every other process).
#include <vector>

#include "kernels/collectives/communicator.hpp"

namespace weir::internal {

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
