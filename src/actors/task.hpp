#pragma once
// A compiled task at run time: the register protocol plus what one firing does (emit a tick, copy
// an input, run a kernel, or complete a call). Owned by one executor and touched only by it.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "actors/call.hpp"
#include "plan/plan.hpp"
#include "actors/registers.hpp"
#include "actors/task_protocol.hpp"
#include "actors/trace.hpp"
#include "common/device_stream.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {

/// What profiling gathers of one task. The executor adds; the session reads and resets.
struct TaskCounters {
  std::atomic<std::int64_t> firings{0};
  std::atomic<std::int64_t> busy_nanos{0};
  std::atomic<std::int64_t> kept{0};  // firings that kept their slots' results (TaskDesc::constant_over)
};

/// One act of a kernel on a device stream (common/device_stream.hpp), from its submission until the
/// event behind it completes: what the act's messages and produced slots wait for.
struct AsyncAct {
  int task = 0;
  CallRecord* call = nullptr;
  bool failed = false;                // an input had failed: nothing was submitted
  std::exception_ptr error;           // the kernel's (set on the stream's thread) or the device's
  std::vector<int> produced_slots;    // the slot of each produced register
  std::vector<ActorMsg> messages;     // readable to the consumers, returned to the producers
  // While tracing (else 0): when the submission ended, and when the poller saw the event complete.
  std::int64_t submitted_ns = 0;
  std::int64_t device_done_ns = 0;
};

/// Where a device's poller hands a completed act back to the task's executor.
using AsyncCompletion = std::function<void(std::shared_ptr<AsyncAct>)>;

class Task {
 public:
  /// Creates the kernel of a kernel task (oneDNN primitives etc. are built here, once).
  /// `on_call_done` is the sink's way out: it receives each call once the outputs are in place.
  /// `instrument` (owned by the job's runtime) says whether firings are timed into Counters()
  /// (kInstrumentProfile) and recorded into Firings() (kInstrumentTrace).
  /// `processes` (may be null) is what the job's cross-process collective kernels run over.
  /// `device_stream` (may be null): a kernel task's asynchronous device stream; each act then submits
  /// the kernel to it and returns (see SetAsyncCompletion).
  Task(const Plan& plan, const TaskDesc& desc, RegisterStore& store, std::function<void(CallRecord*)> on_call_done,
       const std::atomic<std::uint8_t>& instrument, ProcessGroup* processes = nullptr,
       DeviceStream* device_stream = nullptr);

  /// A task on a device stream: its acts' messages leave through `completed` (on the executor) once
  /// `poller` has seen the event behind each act complete. Set before the first act.
  /// `stream_ordered`: messages to kernel tasks on the same device stream leave at once instead (the
  /// stream runs their work after this act's, so they need not wait for its event: the device stays
  /// fed without a round trip through the poller per kernel). A kernel's failure then reaches its call,
  /// but not the failed flag of the pieces already passed on; the runtime sets it only where an
  /// executor hosts the whole stream, so that the act's completion (and the call's failure) is handled
  /// before any later act of the stream hands a piece to another stream.
  void SetAsyncCompletion(CompletionPoller* poller, AsyncCompletion completed, bool stream_ordered = false);
  /// Acts submitted and not yet finished; the task ends its stream only when there are none.
  int AsyncActsPending() const { return async_pending_; }
  /// On the executor, for an act the poller saw complete: its produced slots take the outcome, the
  /// call fails with the kernel's or the device's error, and its messages go out through `sink`.
  void FinishAsync(AsyncAct& act, MessageSink& sink);

  /// Whether `task` runs its work on this task's device stream, after this act's.
  bool StreamOrdered(int task) const;
  /// Whether a slot of consumed register `register_id` goes back to its producer when an act is
  /// submitted rather than once its work is done (stream-ordered tasks only): a tick, which holds no
  /// data, and a variable whose every reader runs on this stream. The producer's next act then
  /// neither writes what this act's work still reads nor lets anything off the stream read the
  /// variable before this act's work (a variable task writes nothing; the host reads variables only
  /// once every call completed), and the next call's act queues behind this one instead of waiting
  /// for its completion: calls overlap on the device.
  bool ReturnsAtSubmission(int register_id) const;
  TaskProtocol& Protocol() { return protocol_; }
  const TaskDesc& Desc() const { return desc_; }
  /// Source tick only: one more call to emit, in call order.
  void Launch(CallRecord* record);
  /// One firing; requires Protocol().CanAct(). Never throws for a failing kernel: the failure is
  /// recorded on the call and travels with the piece.
  void Act(MessageSink& sink);
  TaskCounters& Counters() { return counters_; }
  /// The firings recorded while tracing. Only the executor hosting the task appends, so read or
  /// clear it only while no call is in flight.
  std::vector<TracedFiring>& Firings() { return firings_; }

 private:
  static TaskProtocol MakeProtocol(const Plan& plan, const TaskDesc& desc);
  /// An act on the device stream (see SetDeviceStream).
  void ActAsync(MessageSink& sink);
  /// The firing's work (copy or kernel); returns whether the piece failed.
  bool Work(CallRecord*& call);
  /// A task with constant results (TaskDesc::constant_over): the sum of its variables' versions, which
  /// grows whenever one of them may have changed. Only then.
  std::uint64_t VariablesVersion() const;
  /// Whether every slot this act writes still holds the results for `version`.
  bool KeepsResults(std::uint64_t version) const;
  /// Records what the slots of this act now hold: the results for `version`, or nothing (kNothingKept).
  void SetKept(std::uint64_t version);
  /// Points the views at this act's slots: the consumed registers' for inputs, the produced ones' for outputs.
  void BindViews(std::vector<ConstTensorView>& inputs, std::vector<TensorView>& outputs);
  using Clock = std::chrono::steady_clock;
  /// Counts a firing's host time (profiling) and appends it to Firings() (tracing), as `instrument` says.
  void Record(std::uint8_t instrument, Clock::time_point start, Clock::time_point end, const CallRecord* call,
              TracedFiring::Phase phase);

  const Plan* plan_;
  const TaskDesc& desc_;
  RegisterStore& store_;
  std::function<void(CallRecord*)> on_call_done_;
  TaskProtocol protocol_;
  std::unique_ptr<Kernel> kernel_;
  std::vector<ConstTensorView> input_views_;
  std::vector<TensorView> output_views_;
  std::deque<CallRecord*> launches_;
  const std::atomic<std::uint8_t>& instrument_;
  TaskCounters counters_;
  std::vector<TracedFiring> firings_;
  DeviceStream* device_stream_ = nullptr;
  CompletionPoller* poller_ = nullptr;
  AsyncCompletion completed_;
  int async_pending_ = 0;
  bool stream_ordered_ = false;
  // Constant results (TaskDesc::constant_over, on the host's actor threads only): the variables'
  // versions, and by produced register and slot, the version whose results the slot holds.
  static constexpr std::uint64_t kNothingKept = ~std::uint64_t{0};
  std::vector<const std::atomic<std::uint64_t>*> variable_versions_;
  std::vector<std::vector<std::uint64_t>> kept_;
  std::vector<int> returned_at_submission_;  // consumed register ids (ReturnsAtSubmission)
};

}  // namespace weir::internal
