#include "actors/task.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "common/allocator.hpp"
#include "common/cuda_runtime.hpp"
#include "common/intra_op_pool.hpp"

namespace weir::internal {

TaskProtocol Task::MakeProtocol(const Plan& plan, const TaskDesc& desc) {
  std::vector<ConsumedEdge> consumed;
  for (int reg : desc.consumed) {
    const RegisterDesc& r = plan.registers[static_cast<std::size_t>(reg)];
    consumed.push_back({reg, r.producer, r.register_num});
  }
  std::vector<ProducedEdge> produced;
  for (int reg : desc.produced) {
    const RegisterDesc& r = plan.registers[static_cast<std::size_t>(reg)];
    produced.push_back({reg, r.register_num, r.consumers});
  }
  return TaskProtocol(desc.id, std::move(consumed), std::move(produced), desc.kind == TaskKind::kSourceTick);
}

Task::Task(const Plan& plan, const TaskDesc& desc, RegisterStore& store, std::function<void(CallRecord*)> on_call_done,
           const std::atomic<std::uint8_t>& instrument, ProcessGroup* processes, DeviceStream* device_stream)
    : plan_(&plan), desc_(desc), store_(store), on_call_done_(std::move(on_call_done)), protocol_(MakeProtocol(plan, desc)),
      instrument_(instrument) {
  if (desc.kind != TaskKind::kKernel) return;
  device_stream_ = device_stream;
  const KernelSetup setup{desc.op_type, desc.name, desc.attrs, desc.input_metas, desc.output_metas,
                          plan.streams[static_cast<std::size_t>(desc.stream)].device, processes, device_stream,
                          plan.tensor_float_32, desc.shard, desc.shards};
  const SingleThreadedMathScope single_threaded;  // primitives made here plan for one thread
  // A CUDA kernel is made with its GPU current: cuDNN's and cuBLAS's set-up calls go to the current
  // device, which is another GPU's after a kernel of another GPU was made.
  if (setup.device.kind == Device::Kind::kCuda) CudaSetCurrentDevice(setup.device.index);
  kernel_ = desc.kernel_factory(setup);
  input_views_.resize(desc.input_metas.size());
  output_views_.resize(desc.output_metas.size());
  for (std::size_t i = 0; i < desc.input_metas.size(); ++i) input_views_[i].meta = &desc.input_metas[i];
  for (std::size_t i = 0; i < desc.output_metas.size(); ++i) output_views_[i].meta = &desc.output_metas[i];
  // On a device stream the slots are written after the act, so an act could not tell what they hold.
  if (device_stream == nullptr && !desc.constant_over.empty()) {
    for (const std::string& variable : desc.constant_over) variable_versions_.push_back(&store.VersionOf(variable));
    for (int reg : desc.produced) {
      const int slots = plan.registers[static_cast<std::size_t>(reg)].register_num;
      kept_.emplace_back(static_cast<std::size_t>(slots), kNothingKept);
    }
  }
}

std::uint64_t Task::VariablesVersion() const {
  std::uint64_t sum = 0;
  for (const std::atomic<std::uint64_t>* version : variable_versions_) sum += version->load(std::memory_order_acquire);
  return sum;
}

bool Task::KeepsResults(std::uint64_t version) const {
  for (std::size_t j = 0; j < kept_.size(); ++j) {
    if (kept_[j][static_cast<std::size_t>(protocol_.ProducedSlot(j))] != version) return false;
  }
  return true;
}

void Task::SetKept(std::uint64_t version) {
  for (std::size_t j = 0; j < kept_.size(); ++j) kept_[j][static_cast<std::size_t>(protocol_.ProducedSlot(j))] = version;
}

void Task::Launch(CallRecord* record) {
  launches_.push_back(record);
  protocol_.AddExternalToken();
}

void Task::SetAsyncCompletion(CompletionPoller* poller, AsyncCompletion completed, bool stream_ordered) {
  poller_ = poller;
  completed_ = std::move(completed);
  stream_ordered_ = stream_ordered;
  returned_at_submission_.clear();
  if (!stream_ordered_) return;
  for (int reg : desc_.consumed) {
    const RegisterDesc& consumed = plan_->registers[static_cast<std::size_t>(reg)];
    const TaskKind producer = plan_->tasks[static_cast<std::size_t>(consumed.producer)].kind;
    const bool readers_on_stream = std::all_of(consumed.consumers.begin(), consumed.consumers.end(),
                                               [&](int consumer) { return consumer == desc_.id || StreamOrdered(consumer); });
    if (producer == TaskKind::kSourceTick || (producer == TaskKind::kVariable && readers_on_stream)) {
      returned_at_submission_.push_back(reg);
    }
  }
}

bool Task::ReturnsAtSubmission(int register_id) const {
  return std::find(returned_at_submission_.begin(), returned_at_submission_.end(), register_id) !=
         returned_at_submission_.end();
}

bool Task::StreamOrdered(int task) const {
  const TaskDesc& other = plan_->tasks[static_cast<std::size_t>(task)];
  return stream_ordered_ && other.kind == TaskKind::kKernel && other.stream == desc_.stream;
}

namespace {
// An act's messages: those to kernels its stream runs after it, and the slots it may return at
// submission, leave now; the others wait in `held` until its work is done.
struct HeldMessages final : MessageSink {
  const Task& task;
  MessageSink& now;
  std::vector<ActorMsg>& held;
  HeldMessages(const Task& t, MessageSink& n, std::vector<ActorMsg>& h) : task(t), now(n), held(h) {}
  void Send(const ActorMsg& msg) override {
    const bool early_return = msg.kind == MsgKind::kReturned && task.ReturnsAtSubmission(msg.register_id);
    if (early_return || task.StreamOrdered(msg.dst_task)) now.Send(msg);
    else held.push_back(msg);
  }
};
}  // namespace

void Task::ActAsync(MessageSink& sink) {
  const std::uint8_t instrument = instrument_.load(std::memory_order_relaxed);
  const Clock::time_point start = instrument != 0 ? Clock::now() : Clock::time_point{};
  auto act = std::make_shared<AsyncAct>();
  act->task = desc_.id;
  for (std::size_t i = 0; i < desc_.consumed.size(); ++i) {
    const RegisterSlot& slot = store_.Slot(desc_.consumed[i], protocol_.ConsumedSlot(i));
    act->call = slot.call;  // pieces flow in order, so every consumed slot holds the same call
    act->failed = act->failed || slot.failed;
  }
  for (std::size_t j = 0; j < desc_.produced.size(); ++j) act->produced_slots.push_back(protocol_.ProducedSlot(j));
  if (!act->failed || kernel_->JoinsPeersInFailedCalls()) {
    // The views of this act: the next act (another slot) may be submitted before this one runs.
    std::vector<ConstTensorView> inputs = input_views_;
    std::vector<TensorView> outputs = output_views_;
    BindViews(inputs, outputs);
    device_stream_->Submit([kernel = kernel_.get(), inputs = std::move(inputs), outputs = std::move(outputs),
                            threads = desc_.intra_op_threads, failed = act->failed, act] {
      try {
        SingleThreadedMath();
        SetIntraOpThreadLimit(threads);
        if (failed) kernel->RunFailedCall(inputs, outputs);
        else kernel->Run(inputs, outputs);
      } catch (...) {
        // A failed call's act only tells the other processes; the call has its error already.
        if (!failed) {
          act->error = std::current_exception();  // read after the event, which orders it
          // The call knows now, before any later work of this stream completes: the commit before the
          // call's writes asks the call, once the kernels it waits for are done.
          if (act->call != nullptr) act->call->Fail(act->error);
        }
      }
    });
  }
  if (stream_ordered_) {
    // The pieces' outcome as far as it is known now: what stream-ordered consumers read at once.
    for (std::size_t j = 0; j < desc_.produced.size(); ++j) {
      RegisterSlot& out = store_.Slot(desc_.produced[j], act->produced_slots[j]);
      out.call = act->call;
      out.failed = act->failed;
    }
  }
  // The protocol moves on now (this act's slots stay held until its messages leave), so the next
  // piece can be submitted behind this one.
  HeldMessages messages(*this, sink, act->messages);
  protocol_.CompleteAct(messages);
  ++async_pending_;
  if (instrument != 0) {
    const Clock::time_point end = Clock::now();
    Record(instrument, start, end, act->call, TracedFiring::Phase::kAct);
    if (instrument & kInstrumentTrace) act->submitted_ns = TraceNanos(end);
  }
  const bool traced = act->submitted_ns != 0;
  poller_->Watch(device_stream_->Record(), [completed = completed_, act, traced](std::exception_ptr device_error) {
    if (traced) act->device_done_ns = TraceNanos(Clock::now());
    if (device_error && !act->error) act->error = device_error;
    completed(act);
  });
}

void Task::FinishAsync(AsyncAct& act, MessageSink& sink) {
  const std::uint8_t instrument = instrument_.load(std::memory_order_relaxed);
  const Clock::time_point start = instrument != 0 ? Clock::now() : Clock::time_point{};
  CallRecord* const call = act.call;  // read before the messages go: the call may end with them
  if ((instrument & kInstrumentTrace) && act.device_done_ns != 0) {
    firings_.push_back({act.submitted_ns, act.device_done_ns - act.submitted_ns, call != nullptr ? call->call_id : -1,
                        TracedFiring::Phase::kDevice});
  }
  --async_pending_;
  if (!act.failed) {  // its Run was submitted: the kernel may report what the device found
    try {
      kernel_->AfterCompletion();
    } catch (...) {
      if (!act.error) act.error = std::current_exception();
    }
  }
  if (act.error && act.call != nullptr) act.call->Fail(act.error);
  const bool failed = act.failed || act.error != nullptr;
  // Stream-ordered: the slots were written at submission and may hold a later piece by now.
  for (std::size_t j = 0; j < desc_.produced.size() && !stream_ordered_; ++j) {
    RegisterSlot& out = store_.Slot(desc_.produced[j], act.produced_slots[j]);
    out.call = act.call;
    out.failed = failed;
  }
  if (instrument != 0) Record(instrument, start, Clock::now(), call, TracedFiring::Phase::kCompletion);
  for (const ActorMsg& msg : act.messages) sink.Send(msg);
}

void Task::Act(MessageSink& sink) {
  if (device_stream_ != nullptr) {
    ActAsync(sink);
    return;
  }
  CallRecord* call = nullptr;
  bool failed = false;
  if (const std::uint8_t instrument = instrument_.load(std::memory_order_relaxed)) {
    const Clock::time_point start = Clock::now();
    failed = Work(call);
    Record(instrument, start, Clock::now(), call, TracedFiring::Phase::kAct);
  } else {
    failed = Work(call);
  }

  for (std::size_t j = 0; j < desc_.produced.size(); ++j) {
    RegisterSlot& out = store_.Slot(desc_.produced[j], protocol_.ProducedSlot(j));
    out.call = call;
    out.failed = failed;
  }
  protocol_.CompleteAct(sink);
  if (desc_.kind == TaskKind::kSink) on_call_done_(call);
}

void Task::Record(std::uint8_t instrument, Clock::time_point start, Clock::time_point end, const CallRecord* call,
                  TracedFiring::Phase phase) {
  const std::int64_t nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count();
  if (instrument & kInstrumentProfile) {
    // A device act's submission and completion are one firing of host time.
    if (phase != TracedFiring::Phase::kCompletion) counters_.firings.fetch_add(1, std::memory_order_relaxed);
    counters_.busy_nanos.fetch_add(nanos, std::memory_order_relaxed);
  }
  if (instrument & kInstrumentTrace) firings_.push_back({TraceNanos(start), nanos, call != nullptr ? call->call_id : -1, phase});
}

void Task::BindViews(std::vector<ConstTensorView>& inputs, std::vector<TensorView>& outputs) {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::size_t k = static_cast<std::size_t>(desc_.input_slots[i]);
    inputs[i].data = store_.Slot(desc_.consumed[k], protocol_.ConsumedSlot(k)).data;
  }
  for (std::size_t j = 0; j < outputs.size(); ++j) {
    outputs[j].data = store_.Slot(desc_.produced[j], protocol_.ProducedSlot(j)).data;
  }
}

namespace {
// Whether `call` failed where its slots do not say: a kernel on a device stream fails its call when the
// stream runs it, after its outputs' slots were written at submission (the stream's next kernels read
// them at once). Only the call knows; the tasks that decide for the call's writers ask it.
bool CallFailedOnAStream(const CallRecord* call) { return call != nullptr && call->Error() != nullptr; }
}  // namespace

bool Task::Work(CallRecord*& call) {
  bool failed = false;
  if (desc_.kind == TaskKind::kSourceTick) {
    call = launches_.front();
    launches_.pop_front();
  }
  for (std::size_t i = 0; i < desc_.consumed.size(); ++i) {
    const RegisterSlot& slot = store_.Slot(desc_.consumed[i], protocol_.ConsumedSlot(i));
    call = slot.call;  // pieces flow in order, so every consumed slot holds the same call
    failed = failed || slot.failed;
  }

  switch (desc_.kind) {
    case TaskKind::kSourceTick:
    case TaskKind::kVariable:  // the register's memory is the variable: nothing to copy
      break;
    case TaskKind::kBarrier:  // the commit: its zero-byte output only orders and carries `failed`
      failed = failed || CallFailedOnAStream(call);
      break;
    case TaskKind::kInput: {
      RegisterSlot& out = store_.Slot(desc_.produced[0], protocol_.ProducedSlot(0));
      std::byte* input = failed ? nullptr
                                : static_cast<std::byte*>(call->inputs[static_cast<std::size_t>(desc_.input_index)].RawData()) +
                                      desc_.input_offset;
      const RegisterDesc& reg = plan_->registers[static_cast<std::size_t>(desc_.produced[0])];
      if (!reg.pinned) {
        // No copy: the slot borrows the call's input, which the call keeps alive and unchanged until
        // it completes (registers.hpp).
        out.data = input;
      } else if (input != nullptr) {
        // Bound for a device: into the slot's pinned memory, from which the device copies it.
        std::memcpy(out.data, input, reg.slot_bytes);
      }
      break;
    }
    case TaskKind::kKernel:
      // A kernel that tells the other processes whether the call failed (a collective, the commit
      // across processes) decides as the commit barrier does.
      failed = failed || (kernel_->JoinsPeersInFailedCalls() && CallFailedOnAStream(call));
      if (!failed) {
        // A call of a job that writes the variables advances their versions before it runs, and never
        // overlaps this job's calls (the session's gate): the sum read here holds for this act.
        const std::uint64_t version = kept_.empty() ? kNothingKept : VariablesVersion();
        if (version != kNothingKept && KeepsResults(version)) {
          counters_.kept.fetch_add(1, std::memory_order_relaxed);
          break;
        }
        BindViews(input_views_, output_views_);
        try {
          SingleThreadedMath();  // kernels split their own work over the intra-op pool
          SetIntraOpThreadLimit(desc_.intra_op_threads);  // within their device's share of the cores
          kernel_->Run(input_views_, output_views_);
          if (!kept_.empty()) SetKept(version);
        } catch (...) {
          if (!kept_.empty()) SetKept(kNothingKept);  // the slots may hold part of new results
          call->Fail(std::current_exception());
          failed = true;
        }
      } else if (kernel_->JoinsPeersInFailedCalls()) {
        // The other processes wait for this one in the collective: it joins, and tells them the call
        // failed. The call has its error already; what this act finds adds nothing to it.
        BindViews(input_views_, output_views_);
        try {
          kernel_->RunFailedCall(input_views_, output_views_);
        } catch (...) {
        }
      }
      break;
    case TaskKind::kSink:
      if (!failed) {
        try {
          // An output with several pieces (one per device) is their concatenation along axis 0.
          const Plan& plan = *plan_;
          call->outputs.reserve(plan.output_pieces.size());
          std::size_t i = 0;
          for (int pieces : plan.output_pieces) {
            // The pieces' first dimensions add up (uneven splits too); scalars per device make a vector.
            std::vector<std::int64_t> dims = desc_.input_metas[i].shape.Dims();
            if (pieces > 1) {
              if (dims.empty()) dims.push_back(0);
              else dims[0] = 0;
              for (int p = 0; p < pieces; ++p) {
                const Shape& piece = desc_.input_metas[i + static_cast<std::size_t>(p)].shape;
                dims[0] += piece.Rank() == 0 ? 1 : piece[0];
              }
            }
            const Shape shape(dims);
            const DType dtype = desc_.input_metas[i].dtype;
            // Every byte is copied in below: no zero-filling first.
            Tensor output(shape, dtype, Device::Cpu(),
                          AllocateUninitialized(static_cast<std::size_t>(shape.NumElements()) * SizeOf(dtype)));
            std::size_t offset = 0;
            for (int p = 0; p < pieces; ++p, ++i) {
              const std::size_t k = static_cast<std::size_t>(desc_.input_slots[i]);
              const std::size_t bytes = desc_.input_metas[i].NumBytes();
              std::memcpy(static_cast<std::byte*>(output.RawData()) + offset,
                          store_.Slot(desc_.consumed[k], protocol_.ConsumedSlot(k)).data, bytes);
              offset += bytes;
            }
            call->outputs.push_back(std::move(output));
          }
        } catch (...) {  // out of memory for the results: fail this call only
          call->outputs.clear();
          call->Fail(std::current_exception());
        }
      }
      break;
  }
  return failed;
}

}  // namespace weir::internal
