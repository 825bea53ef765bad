#pragma once
// A device stream's kernels as one kernel (graph/planner/stream_graphs.hpp makes it): the member kernels run
// in a fixed order within one act, their intermediate values in buffers the graph owns. On a CUDA
// device the graph is captured into a CUDA graph once per set of register addresses and replayed,
// so a call costs one launch instead of one per kernel (and the actor hops between them).
#include <any>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/tensor_meta.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {

/// Where a member kernel reads or writes one of its operands: the graph kernel's input or output i
/// (a register of the plan), or the graph's own buffer i (a value only members use).
struct GraphOperand {
  enum class Kind : std::uint8_t { kInput, kOutput, kBuffer };
  Kind kind = Kind::kInput;
  int index = 0;
};

/// One kernel of the graph: what makes it (its op, attrs, metas and factory, as the plan's task had
/// them) and where its operands are.
struct StreamGraphMember {
  std::string op_type;
  std::string name;
  const std::any* attrs = nullptr;      // owned by the job graph or the plan, which outlive the kernel
  std::vector<TensorMeta> input_metas;
  std::vector<TensorMeta> output_metas;
  KernelFactory kernel_factory = nullptr;
  std::vector<GraphOperand> inputs;     // one per kernel input
  std::vector<GraphOperand> outputs;    // one per kernel output
};

/// The attrs of a "stream_graph" kernel task.
struct StreamGraphAttrs {
  std::vector<StreamGraphMember> members;  // in an order that respects their data and control edges
  std::vector<std::size_t> buffer_bytes;   // each buffer's size
};

/// The kernel of a "stream_graph" task (its attrs: StreamGraphAttrs): makes the members' kernels for
/// the task's device and stream.
std::unique_ptr<Kernel> MakeStreamGraphKernel(const KernelSetup& setup);

}  // namespace weir::internal
