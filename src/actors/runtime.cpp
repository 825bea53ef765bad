// Hosting of plans: executors, each hosting one or more tasks, are CAF event-based actors, or (jobs
// whose handlers never wait, on device streams) lent to the threads that hand them work.
#include "actors/runtime.hpp"

#include "common/intra_op_pool.hpp"

#include <algorithm>
#include <cstdlib>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <type_traits>
#include <variant>

#include <caf/all.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "actors/registers.hpp"
#include "actors/task.hpp"
#include "common/cuda_runtime.hpp"

namespace weir::internal {

struct MsgBatch {
  std::vector<ActorMsg> msgs;
};
struct LaunchMsg {
  CallRecord* record;
};
/// The watchdog asks each executor to describe its tasks; executors answer from their own thread,
/// so reading task state never races with the actors.
struct DescribeRequest {
  std::mutex mutex;
  std::condition_variable answered;
  std::vector<std::string> answers;  // per executor; empty until it answers
  int pending = 0;
};
struct DescribeMsg {
  std::shared_ptr<DescribeRequest> request;
};
/// A device stream's poller: an act of the task is done on the device.
struct AsyncDoneMsg {
  std::shared_ptr<AsyncAct> act;
};

}  // namespace weir::internal

// Local-only messages: they carry indices and a pointer to a call that the dispatcher keeps alive.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(weir::internal::MsgBatch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(weir::internal::LaunchMsg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(weir::internal::DescribeMsg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(weir::internal::AsyncDoneMsg)

namespace weir::internal {

class LentExecutor;

namespace {

// Debian's CAF is not built with ThreadSanitizer, so TSan cannot see that a CAF message send
// happens before its handler runs. In TSan builds every send and every handler touch one atomic
// (release / acquire), which tells TSan about exactly that ordering and nothing more.
#if defined(__SANITIZE_THREAD__)
std::atomic<std::uint64_t> tsan_handoff{0};
void BeforeSend() { tsan_handoff.fetch_add(1, std::memory_order_release); }
void OnReceive() { (void)tsan_handoff.load(std::memory_order_acquire); }
#else
void BeforeSend() {}
void OnReceive() {}
#endif

using launch_atom = caf::atom_constant<caf::atom("launch")>;
using close_atom = caf::atom_constant<caf::atom("close")>;
using describe_atom = caf::atom_constant<caf::atom("describe")>;

}  // namespace

/// State shared by the executors of one plan; outlives them.
struct JobRuntime::Impl {
  std::shared_ptr<const Plan> plan;
  Dispatcher* dispatcher = nullptr;
  RuntimeOptions options;
  std::unique_ptr<RegisterStore> store;
  std::shared_ptr<ProcessGroup> processes;  // declared before the tasks: their kernels use it
  std::vector<std::unique_ptr<Task>> tasks;
  std::vector<int> task_executor;         // executor index of each task
  std::vector<std::vector<int>> hosted;   // tasks of each executor
  // Weak handles (strong ones would form a cycle with the executors' ownership of this state);
  // written before the first launch, then read-only.
  std::vector<caf::actor_addr> executors;
  // Or, where the job's executors are lent (RuntimeOptions::lend_executors; then `executors` is empty):
  // the executors themselves, run by whichever thread hands them work.
  std::vector<std::unique_ptr<LentExecutor>> lent;

  // Calls launched and not yet through the sink. Slots point at these records, so the runtime
  // keeps them alive itself: after a forced shutdown the dispatcher may have let go of them.
  std::mutex calls_mutex;
  std::deque<std::shared_ptr<CallRecord>> calls_in_flight;
  std::function<void()> call_done_hook;  // set before the first launch

  // Profiling and tracing (bits kInstrumentProfile, kInstrumentTrace): tasks read the flag on every
  // firing; calls launched while it is on have their launch time recorded.
  std::atomic<std::uint8_t> instrument{0};
  std::atomic<std::int64_t> profiled_calls{0};
  std::atomic<std::int64_t> profiled_call_nanos{0};
  std::vector<TracedCall> traced_calls;  // appended by the sink's executor while tracing

  // Progress, for the watchdog: each executor counts its acts and says which task it is inside.
  // Single writer each (its executor), read by the watchdog; plain relaxed stores, no lock prefix.
  struct alignas(64) ExecutorProgress {
    std::atomic<std::int64_t> acts{0};
    std::atomic<int> running{-1};
  };
  std::unique_ptr<ExecutorProgress[]> progress;  // one per executor

  void SetInstrument(std::uint8_t bit, bool on) {
    if (on) {
      instrument.fetch_or(bit, std::memory_order_relaxed);
    } else {
      instrument.fetch_and(static_cast<std::uint8_t>(~bit), std::memory_order_relaxed);
    }
  }

  std::mutex mutex;
  std::condition_variable finished_cv;
  int executors_running = 0;
  bool launched_close = false;
  bool shut_down = false;
  bool clean_shutdown = false;
  std::exception_ptr fault;

  void CallDone(CallRecord* call) {
    if (call->profiled_launch != std::chrono::steady_clock::time_point{}) {
      const std::uint8_t on = instrument.load(std::memory_order_relaxed);
      const auto now = std::chrono::steady_clock::now();
      if (on & kInstrumentProfile) {
        profiled_calls.fetch_add(1, std::memory_order_relaxed);
        profiled_call_nanos.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(now - call->profiled_launch).count(),
                                      std::memory_order_relaxed);
      }
      if (on & kInstrumentTrace) {
        traced_calls.push_back({call->call_id, TraceNanos(call->profiled_launch), TraceNanos(now)});
      }
    }
    std::shared_ptr<CallRecord> keep;
    {
      std::lock_guard lock(calls_mutex);
      if (!calls_in_flight.empty() && calls_in_flight.front().get() == call) {
        keep = std::move(calls_in_flight.front());
        calls_in_flight.pop_front();
      }
    }
    if (call_done_hook) call_done_hook();  // before the caller can see the result
    dispatcher->Complete(call);
  }
  // The device streams of asynchronous compute streams (by plan stream; null for the others) and their
  // pollers. Declared after the tasks, whose kernels their work runs: destroyed first, the pollers
  // waiting for what they watch and the streams running what was submitted.
  std::vector<std::unique_ptr<DeviceStream>> device_streams;
  std::vector<std::unique_ptr<CompletionPoller>> pollers;
  // Where the executors are lent and one device stream has a poller: that poller (JobRuntime::CompleteNext).
  CompletionPoller* only_poller = nullptr;

  // On a poller's thread: hands a completed act to its task's executor.
  void DeliverAsync(std::shared_ptr<AsyncAct> act);

  void ExecutorFinished() {
    std::lock_guard lock(mutex);
    --executors_running;
    finished_cv.notify_all();
  }
  // A runtime bug (protocol violation) broke this job: fail what is in flight, keep the process.
  void Fault(std::exception_ptr error) {
    {
      std::lock_guard lock(mutex);
      if (!fault) fault = error;
    }
    dispatcher->FailOutstanding(error);
  }
};

namespace {

// "kernel, matmul" for a kernel actor, its kind alone ("input", "sink") for the others.
std::string KindAndOp(const TaskDesc& task) {
  return task.kind == TaskKind::kKernel ? fmt::format("{}, {}", Name(task.kind), task.op_type) : std::string(Name(task.kind));
}

}  // namespace

struct JobRuntime::Executors {
  std::vector<caf::actor> handles;
};

namespace {

// What an executor does with its messages, whoever runs it: a CAF actor (CafExecutor) or the thread
// that hands it work (LentExecutor). Its handlers never run concurrently.
class ExecutorCore : public MessageSink {
 public:
  ExecutorCore(JobRuntime::Impl& job, int index)
      : job_(job), index_(index), outboxes_(job_.hosted.size()), finished_(job_.hosted[static_cast<std::size_t>(index)].size(), false) {}

  void OnBatch(const std::vector<ActorMsg>& msgs) {
    Guarded([&] {
      for (const ActorMsg& msg : msgs) local_.push_back(msg);
      Pump();
    });
  }
  void OnLaunch(CallRecord* record) {
    Guarded([&] {
      Task& source = *job_.tasks[static_cast<std::size_t>(job_.plan->source_task)];
      source.Launch(record);
      Run(source);
      Pump();
    });
  }
  void OnAsyncDone(AsyncAct& act) {
    Guarded([&] {
      Task& task = *job_.tasks[static_cast<std::size_t>(act.task)];
      task.FinishAsync(act, *this);
      Run(task);
      Pump();
    });
  }
  void OnClose() {
    Guarded([&] {
      Task& source = *job_.tasks[static_cast<std::size_t>(job_.plan->source_task)];
      source.Protocol().CloseExternal();
      Run(source);
      Pump();
    });
  }
  void OnDescribe(DescribeRequest& request) {
    OnReceive();
    std::string text = fmt::format("  executor {} ({}):\n", index_, StreamName());
    int idle = 0;
    for (int id : job_.hosted[static_cast<std::size_t>(index_)]) {
      const std::string line = DescribeBlocked(*job_.tasks[static_cast<std::size_t>(id)]);
      if (line.empty()) {
        ++idle;
      } else {
        text += line;
      }
    }
    if (idle > 0) text += fmt::format("    {} other actor(s) wait for every input (nothing reached them)\n", idle);
    std::lock_guard lock(request.mutex);
    request.answers[static_cast<std::size_t>(index_)] = std::move(text);
    --request.pending;
    request.answered.notify_all();
  }

  void Send(const ActorMsg& msg) override {
    const int target = job_.task_executor[static_cast<std::size_t>(msg.dst_task)];
    if (target == index_) {
      local_.push_back(msg);
    } else {
      outboxes_[static_cast<std::size_t>(target)].push_back(msg);
    }
  }

 protected:
  JobRuntime::Impl& Job() const { return job_; }
  /// Hands `msgs` to executor `executor` (another one).
  virtual void SendBatch(std::size_t executor, std::vector<ActorMsg> msgs) = 0;
  /// Every hosted task has finished: the executor takes no more messages.
  virtual void Quit() = 0;

 private:
  template <typename Fn> void Guarded(Fn&& fn) {
    OnReceive();
    try {
      fn();
    } catch (...) {
      job_.Fault(std::current_exception());
    }
    BeforeSend();  // publishes this handler's writes to whoever destroys the shared state
  }

  // Delivers local messages until none is left (messages may add more), then flushes one batch
  // per other executor.
  void Pump() {
    for (std::size_t i = 0; i < local_.size(); ++i) {
      const ActorMsg msg = local_[i];
      Task& task = *job_.tasks[static_cast<std::size_t>(msg.dst_task)];
      task.Protocol().Receive(msg);
      Run(task);
    }
    local_.clear();
    FlushOutboxes();
    if (finished_count_ == finished_.size() && !reported_) {
      reported_ = true;
      job_.ExecutorFinished();
      Quit();
    }
  }

  std::string StreamName() const {
    const Plan& plan = *job_.plan;
    const TaskDesc& first = plan.tasks[static_cast<std::size_t>(job_.hosted[static_cast<std::size_t>(index_)].front())];
    return plan.streams[static_cast<std::size_t>(first.stream)].ToString();
  }

  // One line on why `task` cannot fire, with names; empty when it waits for all of its inputs and
  // holds nothing (upstream of it is where the stall is) or when it has ended.
  std::string DescribeBlocked(Task& task) const {
    const Plan& plan = *job_.plan;
    const BlockedOn blocked = task.Protocol().Blocked();
    const TaskDesc& desc = task.Desc();
    const bool all_inputs_empty = blocked.empty_inputs.size() == desc.consumed.size();
    if (!blocked.Any() || blocked.waits_for_launch || (all_inputs_empty && blocked.full_outputs.empty())) return {};
    auto task_name = [&](int id) { return fmt::format("'{}'", plan.tasks[static_cast<std::size_t>(id)].name); };
    auto register_name = [&](int id) { return plan.registers[static_cast<std::size_t>(id)].name; };
    std::vector<std::string> reasons;
    for (int reg : blocked.empty_inputs) {
      reasons.push_back(fmt::format("input '{}' (from {}) has no readable piece", register_name(reg),
                                    task_name(plan.registers[static_cast<std::size_t>(reg)].producer)));
    }
    for (const BlockedOn::FullOutput& full : blocked.full_outputs) {
      std::vector<std::string> holders;
      for (int holder : full.holders) holders.push_back(task_name(holder));
      reasons.push_back(fmt::format("output '{}' has no free slot ({} of {} held by {})", register_name(full.register_id),
                                    full.register_num, full.register_num, fmt::join(holders, ", ")));
    }
    return fmt::format("    '{}' ({}) waits: {}\n", desc.name, KindAndOp(desc), fmt::join(reasons, "; "));
  }

  // Sends what this executor has for the others, one batch each.
  void FlushOutboxes() {
    for (std::size_t e = 0; e < outboxes_.size(); ++e) {
      if (outboxes_[e].empty()) continue;
      SendBatch(e, std::move(outboxes_[e]));
      outboxes_[e].clear();
    }
  }

  void Run(Task& task) {
    TaskProtocol& protocol = task.Protocol();
    auto& progress = job_.progress[static_cast<std::size_t>(index_)];
    while (protocol.CanAct()) {
      // Before an act (perhaps a long kernel), hand the other executors what is ready for them:
      // holding it back until this executor ran out of work serialised the devices.
      FlushOutboxes();
      progress.running.store(task.Desc().id, std::memory_order_relaxed);
      task.Act(*this);
      progress.running.store(-1, std::memory_order_relaxed);
      progress.acts.store(progress.acts.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
    // An actor on a device stream ends its stream after the messages of its last acts.
    if (task.AsyncActsPending() == 0 && protocol.ShouldEndStream()) protocol.EndStream(*this);
    if (protocol.Finished()) MarkFinished(task);
  }

  void MarkFinished(Task& task) {
    const auto& hosted = job_.hosted[static_cast<std::size_t>(index_)];
    for (std::size_t i = 0; i < hosted.size(); ++i) {
      if (hosted[i] == task.Desc().id && !finished_[i]) {
        finished_[i] = true;
        ++finished_count_;
      }
    }
  }

  JobRuntime::Impl& job_;
  int index_;
  std::vector<ActorMsg> local_;
  std::vector<std::vector<ActorMsg>> outboxes_;
  std::vector<bool> finished_;
  std::size_t finished_count_ = 0;
  bool reported_ = false;
};

class CafExecutor final : public caf::event_based_actor, public ExecutorCore {
 public:
  // Executors share ownership of the job's state: after a forced shutdown an executor may still
  // be inside a kernel, and the state must outlive it.
  CafExecutor(caf::actor_config& config, std::shared_ptr<JobRuntime::Impl> job, int index)
      : caf::event_based_actor(config), ExecutorCore(*job, index), keep_alive_(std::move(job)) {}

  ~CafExecutor() override { OnReceive(); }

  caf::behavior make_behavior() override {
    return {
        [this](MsgBatch& batch) { OnBatch(batch.msgs); },
        [this](launch_atom, LaunchMsg launch) { OnLaunch(launch.record); },
        [this](AsyncDoneMsg& done) { OnAsyncDone(*done.act); },
        [this](describe_atom, DescribeMsg msg) { OnDescribe(*msg.request); },
        [this](close_atom) { OnClose(); },
    };
  }

 private:
  void SendBatch(std::size_t executor, std::vector<ActorMsg> msgs) override {
    // send, not anon_send: under work stealing the peer then runs next on this thread, no wake-up.
    if (auto peer = caf::actor_cast<caf::actor>(Job().executors[executor])) {
      BeforeSend();
      send(peer, MsgBatch{std::move(msgs)});
    }
  }
  void Quit() override { quit(); }

  std::shared_ptr<JobRuntime::Impl> keep_alive_;
};

}  // namespace

/// An executor that no thread of its own runs: the thread that hands it work (the caller launching a
/// call, a poller that saw a device finish an act, another executor's thread) runs its handlers, then
/// those of the executors they handed work to, unless another thread is running it already (then the
/// work waits in its mailbox for that thread). Each hand-off that woke a sleeping actor thread (tens
/// of µs on a VM) becomes a function call. Only for jobs whose handlers never wait: every kernel is
/// submitted to a device stream, and no collective waits for other executors (RuntimeOptions::lend_executors).
class LentExecutor final : public ExecutorCore {
 public:
  using ExecutorCore::ExecutorCore;
  using Message = std::variant<MsgBatch, LaunchMsg, AsyncDoneMsg, DescribeMsg, close_atom>;

  /// Queues `message`; runs this executor on the calling thread unless a thread has it already.
  void Post(Message message) {
    {
      std::lock_guard lock(mutex_);
      if (stopped_) return;
      mailbox_.push_back(std::move(message));
      if (scheduled_) return;
      scheduled_ = true;
    }
    RunOnThisThread(this);
  }
  /// Drops what is queued and everything posted later (a forced shutdown).
  void Stop() {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    mailbox_.clear();
  }

 private:
  // Executors handed work while this thread runs another wait for it in order: a handler never runs
  // inside another's.
  static void RunOnThisThread(LentExecutor* executor) {
    thread_local std::deque<LentExecutor*> ready;
    thread_local bool running = false;
    ready.push_back(executor);
    if (running) return;
    running = true;
    while (!ready.empty()) {
      LentExecutor* next = ready.front();
      ready.pop_front();
      next->Drain();
    }
    running = false;
  }

  void Drain() {
    for (;;) {
      Message message;
      {
        std::lock_guard lock(mutex_);
        if (mailbox_.empty() || stopped_) {
          scheduled_ = false;
          return;
        }
        message = std::move(mailbox_.front());
        mailbox_.pop_front();
      }
      std::visit(
          [this](auto& m) {
            using M = std::decay_t<decltype(m)>;
            if constexpr (std::is_same_v<M, MsgBatch>) {
              OnBatch(m.msgs);
            } else if constexpr (std::is_same_v<M, LaunchMsg>) {
              OnLaunch(m.record);
            } else if constexpr (std::is_same_v<M, AsyncDoneMsg>) {
              OnAsyncDone(*m.act);
            } else if constexpr (std::is_same_v<M, DescribeMsg>) {
              OnDescribe(*m.request);
            } else {
              OnClose();
            }
          },
          message);
    }
  }

  void SendBatch(std::size_t executor, std::vector<ActorMsg> msgs) override;
  void Quit() override {
    std::lock_guard lock(mutex_);
    stopped_ = true;
  }

  std::mutex mutex_;
  std::deque<Message> mailbox_;
  bool scheduled_ = false;  // a thread runs it, or has it queued to run
  bool stopped_ = false;
};

namespace {

// Kernels use the cores through the intra-op pool (common/intra_op_pool.hpp); actor threads beyond
// that only add inter-op parallelism, which is worth a thread per four cores. On two cores: one
// actor thread, one pool worker, nothing spinning against the callback or caller threads.
int DefaultThreads() {
  return std::max(1, UsableCores() / 4);
}

}  // namespace

void LentExecutor::SendBatch(std::size_t executor, std::vector<ActorMsg> msgs) {
  Job().lent[executor]->Post(MsgBatch{std::move(msgs)});
}

void JobRuntime::Impl::DeliverAsync(std::shared_ptr<AsyncAct> act) {
  const auto executor = static_cast<std::size_t>(task_executor[static_cast<std::size_t>(act->task)]);
  if (!lent.empty()) {
    lent[executor]->Post(AsyncDoneMsg{std::move(act)});
  } else if (auto peer = caf::actor_cast<caf::actor>(executors[executor])) {
    BeforeSend();
    caf::anon_send(peer, AsyncDoneMsg{std::move(act)});
  }
}

namespace {

// Whether the plan's executors may be lent (LentExecutor): no handler waits for anything, so any
// thread may run one. Every kernel is submitted to a device stream, and no collective joins devices
// or processes (one device's collective actor waits for the others').
bool HandlersNeverWait(const Plan& plan, const std::vector<std::unique_ptr<DeviceStream>>& device_streams) {
  if (plan.process_collectives) return false;
  for (const TaskDesc& desc : plan.tasks) {
    if (desc.collective) return false;
    if (desc.kind == TaskKind::kKernel && device_streams[static_cast<std::size_t>(desc.stream)] == nullptr) return false;
  }
  return true;
}

}  // namespace

struct Runtime::Impl {
  explicit Impl(const RuntimeOptions& options) : config(MakeConfig(options)), system(*config) {}

  static std::unique_ptr<caf::actor_system_config> MakeConfig(const RuntimeOptions& options) {
    auto config = std::make_unique<caf::actor_system_config>();
    // CAF's default (max(cores, 4) threads) oversubscribes small machines. Values need exact types:
    // a mistyped one is only printed and ignored.
    const int threads = options.scheduler_threads > 0 ? options.scheduler_threads : DefaultThreads();
    config->set("scheduler.max-threads", static_cast<std::size_t>(threads));
    config->set("scheduler.policy", options.share_work ? caf::atom("sharing") : caf::atom("stealing"));
    // An idle CAF worker polls, then sleeps in 50 µs steps (CAF's "moderate" phase), then waits on
    // a condition variable that new work signals. The 50 µs steps (100 µs and more with the
    // kernel's timer slack) were the latency of any call that arrived after a short pause, such as
    // a Python caller's per-call work: skip them. Then poll long enough (30,000 attempts, about
    // 0.5 ms) that back-to-back calls never find the worker asleep: with 300, one sync call in a
    // hundred paid a futex wake-up (p99 40 us against a p50 of 4.7 us; bench/actor_overhead). With
    // one usable core the poll would take the core from the thread that makes the next call, and
    // where actors wait for devices it would spin through every device step: poll briefly there.
    // WEIR_IDLE_POLL_ATTEMPTS overrides the count, to measure what a wake-up costs against a spinning core.
    const bool poll_briefly = options.waits_on_devices || UsableCores() <= 1;
    std::size_t attempts = poll_briefly ? 300 : 30000;
    if (const char* text = std::getenv("WEIR_IDLE_POLL_ATTEMPTS"); text != nullptr && *text != '\0') {
      attempts = static_cast<std::size_t>(std::strtoull(text, nullptr, 10));
    }
    config->set("work-stealing.aggressive-poll-attempts", attempts);
    config->set("work-stealing.moderate-poll-attempts", std::size_t{0});
    return config;
  }

  std::unique_ptr<caf::actor_system_config> config;  // declared first: outlives the system
  caf::actor_system system;
};

Runtime::Runtime(RuntimeOptions options) : options_(options), impl_(std::make_unique<Impl>(options_)) {}

Runtime::~Runtime() = default;

int Runtime::SchedulerThreads() const {
  return options_.scheduler_threads > 0 ? options_.scheduler_threads : DefaultThreads();
}

std::unique_ptr<JobRuntime> Runtime::Instantiate(std::shared_ptr<const Plan> plan, Dispatcher& dispatcher,
                                                 const VariableResolver& variables,
                                                 std::shared_ptr<ProcessGroup> processes) {
  if (plan->process_collectives && processes == nullptr) {
    throw std::invalid_argument(fmt::format("[runtime] job '{}' has collectives across processes but no process group",
                                            plan->job_name));
  }
  auto job = std::make_shared<JobRuntime::Impl>();
  job->processes = std::move(processes);
  job->plan = std::move(plan);
  job->dispatcher = &dispatcher;
  job->options = options_;
  job->store = std::make_unique<RegisterStore>(*job->plan, variables);
  const Plan& p = *job->plan;
  JobRuntime::Impl* raw = job.get();  // tasks die with the Impl, so the raw pointer stays valid
  // Device streams first: the kernels of their tasks are made for them.
  job->device_streams.resize(p.streams.size());
  job->pollers.resize(p.streams.size());
  for (std::size_t s = 0; s < p.streams.size(); ++s) {
    const StreamId& stream = p.streams[s];
    if (stream.device.kind == Device::Kind::kCuda) {
      // Each stream of a CUDA device (compute, host-to-device, device-to-host) is a CUDA stream.
      job->device_streams[s] = MakeCudaDeviceStream(stream.device.index, stream.ToString());
    } else if (stream.kind == StreamKind::kCompute && options_.async_cpu_streams) {
      job->device_streams[s] = MakeCpuDeviceStream(fmt::format("{} (async)", stream.ToString()));
    } else {
      continue;
    }
    job->pollers[s] = std::make_unique<CompletionPoller>(job->device_streams[s]->Name());
  }
  // The GPUs of one job copy between each other (graph/planner/device_copies.hpp): directly where they can.
  std::vector<int> gpus;
  for (const StreamId& stream : p.streams) {
    if (stream.device.kind == Device::Kind::kCuda && std::find(gpus.begin(), gpus.end(), stream.device.index) == gpus.end()) {
      gpus.push_back(stream.device.index);
    }
  }
  for (int gpu : gpus) {
    for (int peer : gpus) {
      if (peer != gpu) CudaEnablePeerAccess(gpu, peer);
    }
  }
  for (const TaskDesc& desc : p.tasks) {
    DeviceStream* stream = desc.kind == TaskKind::kKernel ? job->device_streams[static_cast<std::size_t>(desc.stream)].get() : nullptr;
    job->tasks.push_back(std::make_unique<Task>(p, desc, *job->store, [raw](CallRecord* call) { raw->CallDone(call); },
                                                job->instrument, job->processes.get(), stream));
    if (stream != nullptr) {
      // Kernels of one stream pass pieces on at submission where one executor hosts the stream (in
      // order, so a failed act's completion is handled before a later act's pieces leave the stream).
      job->tasks.back()->SetAsyncCompletion(job->pollers[static_cast<std::size_t>(desc.stream)].get(),
                                            [raw](std::shared_ptr<AsyncAct> act) { raw->DeliverAsync(std::move(act)); },
                                            /*stream_ordered=*/options_.hosting == Hosting::kActorPerStream);
    }
  }

  if (options_.hosting == Hosting::kActorPerStream) {
    // One executor per stream that has tasks.
    std::vector<int> stream_executor(p.streams.size(), -1);
    for (const TaskDesc& desc : p.tasks) {
      int& executor = stream_executor[static_cast<std::size_t>(desc.stream)];
      if (executor < 0) {
        executor = static_cast<int>(job->hosted.size());
        job->hosted.emplace_back();
      }
      job->task_executor.push_back(executor);
      job->hosted[static_cast<std::size_t>(executor)].push_back(desc.id);
    }
  } else {
    for (const TaskDesc& desc : p.tasks) {
      job->task_executor.push_back(static_cast<int>(job->hosted.size()));
      job->hosted.push_back({desc.id});
    }
  }
  job->executors_running = static_cast<int>(job->hosted.size());
  job->progress = std::make_unique<JobRuntime::Impl::ExecutorProgress[]>(job->hosted.size());
  std::vector<caf::actor> executors;
  if (options_.lend_executors && options_.hosting == Hosting::kActorPerStream && HandlersNeverWait(p, job->device_streams)) {
    for (std::size_t e = 0; e < job->hosted.size(); ++e) job->lent.push_back(std::make_unique<LentExecutor>(*job, static_cast<int>(e)));
    const auto has_poller = [](const std::unique_ptr<CompletionPoller>& poller) { return poller != nullptr; };
    if (std::count_if(job->pollers.begin(), job->pollers.end(), has_poller) == 1) {
      job->only_poller = std::find_if(job->pollers.begin(), job->pollers.end(), has_poller)->get();
    }
  } else {
    for (std::size_t e = 0; e < job->hosted.size(); ++e) {
      executors.push_back(impl_->system.spawn<CafExecutor>(job, static_cast<int>(e)));
      job->executors.push_back(executors.back().address());
    }
  }
  auto runtime = std::make_unique<JobRuntime>(std::move(job));
  runtime->executors_->handles = std::move(executors);
  return runtime;
}

JobRuntime::JobRuntime(std::shared_ptr<Impl> impl) : impl_(std::move(impl)), executors_(std::make_unique<Executors>()) {}

JobRuntime::~JobRuntime() {
  Shutdown();
  OnReceive();
  // The pollers' and device streams' threads end here, on the owner's thread. Left to the Impl, they
  // could end with it on one of those threads: a poller hands a completion to an executor through a
  // strong handle that can be the executor's last, whose state holds the Impl, and a thread cannot
  // join itself.
  impl_->pollers.clear();
  impl_->device_streams.clear();
}

void JobRuntime::Launch(const std::shared_ptr<CallRecord>& record) {
  record->launched = std::chrono::steady_clock::now();
  if (impl_->instrument.load(std::memory_order_relaxed)) record->profiled_launch = record->launched;
  {
    std::lock_guard lock(impl_->calls_mutex);
    impl_->calls_in_flight.push_back(record);
  }
  const auto executor = static_cast<std::size_t>(impl_->task_executor[static_cast<std::size_t>(impl_->plan->source_task)]);
  if (!impl_->lent.empty()) {
    impl_->lent[executor]->Post(LaunchMsg{record.get()});
    return;
  }
  BeforeSend();
  caf::anon_send(executors_->handles[executor], launch_atom::value, LaunchMsg{record.get()});
}

bool JobRuntime::Shutdown() {
  std::unique_lock lock(impl_->mutex);
  if (impl_->shut_down) return impl_->clean_shutdown;
  if (!impl_->launched_close) {
    impl_->launched_close = true;
    const auto executor = static_cast<std::size_t>(impl_->task_executor[static_cast<std::size_t>(impl_->plan->source_task)]);
    if (!impl_->lent.empty()) {
      lock.unlock();  // the cascade may run here, and its executors report to this lock
      impl_->lent[executor]->Post(close_atom::value);
      lock.lock();
    } else {
      BeforeSend();
      caf::anon_send(executors_->handles[executor], close_atom::value);
    }
  }
  const bool clean = impl_->finished_cv.wait_for(lock, impl_->options.shutdown_timeout,
                                                 [&] { return impl_->executors_running == 0 || impl_->fault; });
  if (!clean || impl_->fault) {
    // The cascade stalled (a stuck kernel or a runtime fault): stop every executor by force.
    for (const caf::actor& executor : executors_->handles) {
      BeforeSend();
      caf::anon_send_exit(executor, caf::exit_reason::user_shutdown);
    }
    for (const auto& executor : impl_->lent) executor->Stop();
  }
  // Executors hold no handles to themselves once they exit; dropping ours lets CAF reclaim them.
  impl_->shut_down = true;
  impl_->clean_shutdown = clean && !impl_->fault;
  lock.unlock();
  executors_->handles.clear();
  return impl_->clean_shutdown;
}

const Plan& JobRuntime::GetPlan() const { return *impl_->plan; }

int JobRuntime::CallsInFlight() const {
  std::lock_guard lock(impl_->calls_mutex);
  return static_cast<int>(impl_->calls_in_flight.size());
}

bool JobRuntime::CompleteNext() { return impl_->only_poller != nullptr && impl_->only_poller->CompleteNext(); }

void JobRuntime::SetCallDoneHook(std::function<void()> hook) { impl_->call_done_hook = std::move(hook); }

void JobRuntime::SetProfiling(bool on) {
  if (on) {
    for (const auto& task : impl_->tasks) {
      task->Counters().firings.store(0, std::memory_order_relaxed);
      task->Counters().busy_nanos.store(0, std::memory_order_relaxed);
      task->Counters().kept.store(0, std::memory_order_relaxed);
    }
    impl_->profiled_calls.store(0, std::memory_order_relaxed);
    impl_->profiled_call_nanos.store(0, std::memory_order_relaxed);
  }
  impl_->SetInstrument(kInstrumentProfile, on);
}

void JobRuntime::SetTracing(bool on) {
  if (on) {
    for (const auto& task : impl_->tasks) task->Firings().clear();
    impl_->traced_calls.clear();
  }
  impl_->SetInstrument(kInstrumentTrace, on);
}

JobTrace JobRuntime::Trace() const {
  const Plan& plan = *impl_->plan;
  JobTrace trace;
  trace.job = plan.job_name;
  trace.calls = impl_->traced_calls;
  for (const auto& task : impl_->tasks) {
    const TaskDesc& desc = task->Desc();
    if (task->Firings().empty()) continue;
    TracedTask traced;
    traced.task_id = desc.id;
    for (int reg : desc.consumed) {
      const int producer = plan.registers[static_cast<std::size_t>(reg)].producer;
      if (plan.tasks[static_cast<std::size_t>(producer)].stream != desc.stream &&
          plan.registers[static_cast<std::size_t>(reg)].slot_bytes > 0) {  // data, not a tick or a control edge
        traced.fed_from_other_streams.push_back(producer);
      }
    }
    traced.name = desc.name;
    traced.kind = std::string(Name(desc.kind));
    if (desc.kind == TaskKind::kKernel) traced.op_type = desc.op_type;
    traced.device = plan.DeviceName(desc);
    traced.collective = desc.collective;
    traced.stream = plan.streams[static_cast<std::size_t>(desc.stream)].ToString();
    for (const TensorMeta& meta : desc.output_metas) traced.bytes += static_cast<std::int64_t>(meta.NumBytes());
    traced.firings = task->Firings();
    trace.tasks.push_back(std::move(traced));
  }
  return trace;
}

JobCounters JobRuntime::Profile() const {
  JobCounters profile;
  profile.job = impl_->plan->job_name;
  profile.calls = impl_->profiled_calls.load(std::memory_order_relaxed);
  profile.call_ns = impl_->profiled_call_nanos.load(std::memory_order_relaxed);
  for (const auto& task : impl_->tasks) {
    const TaskDesc& desc = task->Desc();
    ProfiledTask actor;
    actor.name = desc.name;
    actor.kind = std::string(Name(desc.kind));
    if (desc.kind == TaskKind::kKernel) actor.op_type = desc.op_type;
    actor.device = impl_->plan->DeviceName(desc);
    actor.firings = task->Counters().firings.load(std::memory_order_relaxed);
    actor.busy_ns = task->Counters().busy_nanos.load(std::memory_order_relaxed);
    actor.kept = task->Counters().kept.load(std::memory_order_relaxed);
    profile.tasks.push_back(std::move(actor));
  }
  return profile;
}

std::string JobRuntime::DescribeWaiting() const {
  auto request = std::make_shared<DescribeRequest>();
  const std::size_t count = impl_->hosted.size();
  request->answers.resize(count);
  request->pending = static_cast<int>(count);
  for (const auto& executor : impl_->lent) executor->Post(DescribeMsg{request});
  for (const caf::actor& executor : executors_->handles) {
    BeforeSend();
    caf::anon_send(executor, describe_atom::value, DescribeMsg{request});
  }
  std::string oldest;
  int in_flight = 0;
  {
    std::lock_guard lock(impl_->calls_mutex);
    in_flight = static_cast<int>(impl_->calls_in_flight.size());
    if (in_flight > 0) {
      const CallRecord& call = *impl_->calls_in_flight.front();
      oldest = fmt::format("; the oldest, call {}, was launched {:.1f} s ago", call.call_id,
                           std::chrono::duration<double>(std::chrono::steady_clock::now() - call.launched).count());
    }
  }
  std::unique_lock lock(request->mutex);
  // An executor inside a kernel answers only when the kernel returns: wait a little, not for it.
  request->answered.wait_for(lock, std::chrono::seconds(1), [&] { return request->pending == 0; });
  const Plan& plan = *impl_->plan;
  // The kernels that have not returned come first: they are what everything else waits for (a
  // collective waiting for another process, a kernel that hangs).
  std::string inside;
  std::string waiting;
  for (std::size_t e = 0; e < request->answers.size(); ++e) {
    if (!request->answers[e].empty()) {
      waiting += request->answers[e];
      continue;
    }
    const int running = impl_->progress[e].running.load(std::memory_order_relaxed);
    if (running >= 0) {
      const TaskDesc& task = plan.tasks[static_cast<std::size_t>(running)];
      inside += fmt::format("  executor {} ({}): inside '{}' ({}), which has not returned\n", e,
                            plan.streams[static_cast<std::size_t>(task.stream)].ToString(), task.name, KindAndOp(task));
    } else {
      waiting += fmt::format("  executor {}: did not answer within 1 s (finished, or busy)\n", e);
    }
  }
  return fmt::format("job '{}': {} call(s) in flight{}\n{}{}", plan.job_name, in_flight, oldest, inside, waiting);
}

std::int64_t JobRuntime::Acts() const {
  std::int64_t acts = 0;
  for (std::size_t e = 0; e < impl_->hosted.size(); ++e) acts += impl_->progress[e].acts.load(std::memory_order_relaxed);
  return acts;
}

}  // namespace weir::internal
