#pragma once
// A compiled task at run time: the register protocol plus what one firing does (emit a tick, copy
// an input, run a kernel, or complete a call). Owned by one executor and touched only by it.
#include <deque>
#include <memory>
#include <vector>

#include <functional>

#include "actors/call.hpp"
#include "actors/plan.hpp"
#include "actors/registers.hpp"
#include "actors/task_protocol.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {

class Task {
 public:
  /// Creates the kernel of a kernel task (oneDNN primitives etc. are built here, once).
  /// `on_call_done` is the sink's way out: it receives each call once the outputs are in place.
  Task(const Plan& plan, const TaskDesc& desc, RegisterStore& store, std::function<void(CallRecord*)> on_call_done);

  TaskProtocol& Protocol() { return protocol_; }
  const TaskDesc& Desc() const { return desc_; }
  /// Source tick only: one more call to emit, in call order.
  void Launch(CallRecord* record);
  /// One firing; requires Protocol().CanAct(). Never throws for a failing kernel: the failure is
  /// recorded on the call and travels with the piece.
  void Act(MessageSink& sink);

 private:
  static TaskProtocol MakeProtocol(const Plan& plan, const TaskDesc& desc);

  const TaskDesc& desc_;
  RegisterStore& store_;
  std::function<void(CallRecord*)> on_call_done_;
  TaskProtocol protocol_;
  std::unique_ptr<Kernel> kernel_;
  std::vector<ConstTensorView> input_views_;
  std::vector<TensorView> output_views_;
  std::deque<CallRecord*> launches_;
};

}  // namespace weir::internal
