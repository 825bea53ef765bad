// weir::Session: validates calls, compiles jobs on first use, and feeds calls to their runtimes
// through the session's dispatcher (one ordered stream of calls).
#include "weir/session.hpp"

#include <cstdio>
#include <cstdlib>
#include <future>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <condition_variable>
#include <iterator>
#include <numeric>
#include <thread>
#include <set>

#include "actors/dispatcher.hpp"
#include "actors/runtime.hpp"
#include "api/cluster.hpp"
#include "api/trace.hpp"
#include "api/variable_store.hpp"
#include "common/cuda_backend.hpp"
#include "common/cuda_runtime.hpp"
#include "common/intra_op_pool.hpp"
#include "common/wait_interrupter.hpp"
#include "graph/op_registry.hpp"
#include "graph/planner.hpp"
#include "kernels/collectives/process_group.hpp"
#include "kernels/kernel.hpp"

namespace weir {

Outputs::Outputs(std::vector<std::string> names, std::vector<Tensor> tensors)
    : names_(std::make_shared<const std::vector<std::string>>(std::move(names))), tensors_(std::move(tensors)) {}

Outputs::Outputs(std::shared_ptr<const std::vector<std::string>> names, std::vector<Tensor> tensors)
    : names_(std::move(names)), tensors_(std::move(tensors)) {}

const std::vector<std::string>& Outputs::Names() const {
  static const std::vector<std::string> kNone;
  return names_ ? *names_ : kNone;
}

const Tensor& Outputs::operator[](std::size_t index) const {
  if (index >= tensors_.size()) {
    throw std::out_of_range(fmt::format("[Outputs] index {} out of range: the job has {} outputs", index, tensors_.size()));
  }
  return tensors_[index];
}

Outputs::Outputs(std::shared_ptr<const std::vector<std::string>> names, std::vector<Tensor> tensors,
                 std::shared_ptr<const PieceLayout> layout)
    : names_(std::move(names)), tensors_(std::move(tensors)), layout_(std::move(layout)) {}

std::size_t Outputs::IndexOf(std::string_view name) const {
  const std::vector<std::string>& names = Names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return i;
  }
  throw std::out_of_range(fmt::format("[Outputs] no output named '{}'; outputs are: {}", name, fmt::join(names, ", ")));
}

const Tensor& Outputs::operator[](std::string_view name) const { return tensors_[IndexOf(name)]; }

std::vector<Tensor> Outputs::Pieces(std::size_t index) const {
  const Tensor& whole = (*this)[index];
  if (!layout_ || index >= layout_->pieces.size() || layout_->pieces[index] == 1) return {whole};
  const int pieces = layout_->pieces[index];
  const Shape& shape = layout_->piece_shapes[index];
  const std::size_t bytes = static_cast<std::size_t>(shape.NumElements()) * SizeOf(whole.GetDType());
  // Views into the whole output: an aliasing shared_ptr keeps its storage alive.
  const std::shared_ptr<std::byte[]> storage(whole.SharedStorage());
  std::vector<Tensor> out;
  for (int p = 0; p < pieces; ++p) {
    out.emplace_back(shape, whole.GetDType(), whole.GetDevice(),
                     std::shared_ptr<std::byte[]>(storage, storage.get() + static_cast<std::size_t>(p) * bytes));
  }
  return out;
}

std::vector<Tensor> Outputs::Pieces(std::string_view name) const { return Pieces(IndexOf(name)); }

namespace internal {

namespace {

std::string DescribeInputs(const std::vector<PlaceholderInfo>& placeholders) {
  std::vector<std::string> parts;
  for (const PlaceholderInfo& p : placeholders) parts.push_back(fmt::format("{}: {}{}", p.name, p.dtype, p.shape));
  return fmt::format("{}", fmt::join(parts, ", "));
}

// `pieces`: the plan's pieces per placeholder (one per device for a mirrored placeholder).
void ValidateInputs(const Job& job, const std::vector<Tensor>& inputs, const std::vector<int>& pieces) {
  const auto& placeholders = job.Placeholders();
  const std::size_t expected = static_cast<std::size_t>(std::accumulate(pieces.begin(), pieces.end(), 0));
  if (inputs.size() != expected) {
    if (expected == placeholders.size()) {
      throw std::invalid_argument(fmt::format("[job '{}'] expects {} inputs ({}), got {}", job.Name(),
                                              placeholders.size(), DescribeInputs(placeholders), inputs.size()));
    }
    std::vector<std::string> parts;
    for (std::size_t p = 0; p < placeholders.size(); ++p) {
      parts.push_back(fmt::format("{} x {}", pieces[p], placeholders[p].name));
    }
    throw std::invalid_argument(fmt::format(
        "[job '{}'] expects {} inputs, one per device of each mirrored placeholder ({}: {}), got {}", job.Name(),
        expected, fmt::join(parts, ", "), DescribeInputs(placeholders), inputs.size()));
  }
  std::size_t i = 0;
  for (std::size_t p_index = 0; p_index < placeholders.size(); ++p_index) {
    for (int piece = 0; piece < pieces[p_index]; ++piece, ++i) {
      const PlaceholderInfo& p = placeholders[p_index];
      const Tensor& input = inputs[i];
      const std::string label = pieces[p_index] == 1 ? p.name : fmt::format("{}[{}]", p.name, piece);
      if (!input.Defined()) {
        throw std::invalid_argument(fmt::format("[job '{}'] input '{}': expected a {}{} tensor, got an undefined tensor",
                                                job.Name(), label, p.dtype, p.shape));
      }
      if (input.GetDType() != p.dtype) {
        throw std::invalid_argument(fmt::format("[job '{}'] input '{}': expected dtype {}, got {}", job.Name(), label,
                                                p.dtype, input.GetDType()));
      }
      if (input.GetShape() != p.shape) {
        throw std::invalid_argument(fmt::format("[job '{}'] input '{}': expected shape {}, got {}", job.Name(), label,
                                                p.shape, input.GetShape()));
      }
      if (input.GetDevice().kind != Device::Kind::kCpu) {
        throw std::invalid_argument(fmt::format("[job '{}'] input '{}': expected a tensor on cpu, got one on {}",
                                                job.Name(), label, input.GetDevice().ToString()));
      }
    }
  }
}

std::vector<Tensor> OrderByName(const Job& job, const std::map<std::string, Tensor>& named) {
  const auto& placeholders = job.Placeholders();
  for (const auto& [name, tensor] : named) {
    const bool known = std::any_of(placeholders.begin(), placeholders.end(),
                                   [&](const PlaceholderInfo& p) { return p.name == name; });
    if (!known) {
      throw std::invalid_argument(fmt::format("[job '{}'] no placeholder named '{}'; placeholders are: {}", job.Name(),
                                              name, DescribeInputs(placeholders)));
    }
  }
  std::vector<Tensor> ordered;
  for (const PlaceholderInfo& p : placeholders) {
    const auto it = named.find(p.name);
    if (it == named.end()) {
      throw std::invalid_argument(fmt::format("[job '{}'] input '{}' ({}{}) is missing", job.Name(), p.name, p.dtype, p.shape));
    }
    ordered.push_back(it->second);
  }
  return ordered;
}

void CheckJob(const Job& job) {
  if (!job.Defined()) throw std::invalid_argument("[session] argument 'job' is an undefined job (use JobBuilder::Build)");
}

}  // namespace

// Why a session that asks for GPUs gets CPU devices instead, or nothing when it gets its GPUs. A
// process runs on gpu_devices GPUs; a session of several processes runs process local_rank on GPUs
// local_rank * gpu_devices onwards, with NCCL between the processes.
std::string WhyNotGpu(const SessionOptions& options) {
  if (!CudaBuilt()) return "this build has no CUDA";
  const int n = options.gpu_devices;
  const bool distributed = options.distributed.world_size > 1;
  const int first = distributed ? options.distributed.local_rank * n : 0;
  if (CudaDeviceCount() < first + n) {
    const std::string gpus = n == 1 ? fmt::format("GPU {}", first) : fmt::format("GPUs {}-{}", first, first + n - 1);
    return distributed ? fmt::format("local rank {} needs {} of its own, and {} GPU(s) are visible",
                                     options.distributed.local_rank, gpus, CudaDeviceCount())
                       : fmt::format("{} GPU(s) visible ({})", CudaDeviceCount(), CudaDescribe());
  }
  return {};
}

// The devices a session gets: its GPU when it asks for one and one is there, else CPU devices.
SessionOptions ResolveDevices(SessionOptions options) {
  if (options.cpu_devices < 1) {
    throw std::invalid_argument(fmt::format("[SessionOptions] cpu_devices must be at least 1, got {}", options.cpu_devices));
  }
  if (options.gpu_devices < 0) {
    throw std::invalid_argument(fmt::format("[SessionOptions] gpu_devices must be at least 0, got {}", options.gpu_devices));
  }
  if (options.cpu_compute_streams < 1) {
    throw std::invalid_argument(fmt::format("[SessionOptions] cpu_compute_streams must be at least 1, got {}",
                                            options.cpu_compute_streams));
  }
  ValidateDistributedOptions(options.distributed);
  if (options.gpu_devices > 0) {
    if (const std::string why = WhyNotGpu(options); !why.empty()) {
      std::fprintf(stderr, "[weir] %d GPU device(s) requested: %s, so the session runs on %d CPU device(s) instead\n",
                   options.gpu_devices, why.c_str(), std::max(options.cpu_devices, options.gpu_devices));
      options.cpu_devices = std::max(options.cpu_devices, options.gpu_devices);
      options.gpu_devices = 0;
    } else if (options.distributed.world_size > 1) {
      // This process's cuda:0 is the first of its local rank's GPUs.
      CudaUseDevicesFrom(options.distributed.local_rank * options.gpu_devices);
    }
  }
  // Every device needs an actor thread of its own to compute beside the others (a GPU's, to keep it
  // fed); and with several processes, the collectives one more, so that a transfer or an all-reduce
  // waiting for another process does not hold up this process's compute (the next call's, in a
  // pipeline).
  const int devices = std::max(options.cpu_devices, options.gpu_devices);
  if (options.scheduler_threads == 0 && devices > 1) options.scheduler_threads = devices;
  if (options.scheduler_threads == 0 && options.distributed.world_size > 1) options.scheduler_threads = devices + 1;
  return options;
}

class SessionImpl {
 public:
  explicit SessionImpl(const SessionOptions& options)
      : options_(ResolveDevices(options)),
        cluster_(options_.distributed.world_size > 1 ? std::make_unique<Cluster>(options_.distributed) : nullptr),
        variables_(options.seed),
        dispatcher_(std::make_unique<Dispatcher>(options.max_calls_in_flight)),
        runtime_(std::make_unique<Runtime>(RuntimeOptions{
            options_.scheduler_threads,
            options.hosting == ActorHosting::kActorPerOp ? Hosting::kActorPerTask : Hosting::kActorPerStream,
            options.shutdown_timeout, /*share_work=*/std::max(options_.cpu_devices, options_.gpu_devices) > 1,
            options.async_cpu_streams, /*waits_on_devices=*/options_.gpu_devices > 0 || options.async_cpu_streams,
            options.lend_executors})) {
    StartWatchdog();
  }

  /// Whether `graph` runs on the session's GPU: a GPU session runs its jobs there, except a job placed
  /// on the CPU (every placement scope of it "cpu").
  bool OnGpu(const JobGraph& graph) const {
    if (options_.gpu_devices == 0) return false;
    return graph.placements.empty() ||
           !std::all_of(graph.placements.begin(), graph.placements.end(),
                        [](const Placement& placement) { return placement.DeviceTag() == "cpu"; });
  }

  /// Each device's share of the cores; 0 (every core) with one device.
  int ThreadsPerDevice() const {
    if (options_.cpu_devices == 1) return 0;
    return std::max(1, UsableCores() / options_.cpu_devices);
  }

  Resource GetResource() const {
    Resource resource;
    resource.cpu_devices = options_.cpu_devices;
    resource.gpu_devices = options_.gpu_devices;
    resource.threads_per_device = ThreadsPerDevice() == 0 ? IntraOpThreads() : ThreadsPerDevice();
    resource.scheduler_threads = runtime_->SchedulerThreads();
    if (cluster_) {
      resource.processes = cluster_->Size();
      resource.rank = cluster_->Rank();
      resource.collectives = options_.gpu_devices > 0 ? "nccl" : cluster_->Collectives();
    }
    return resource;
  }

  ~SessionImpl() {
    {
      std::lock_guard lock(watchdog_mutex_);
      watchdog_stop_ = true;
    }
    watchdog_cv_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
    dispatcher_->Close();
    if (!dispatcher_->WaitAllCompleted(options_.shutdown_timeout)) {
      std::string dump;
      {
        std::lock_guard lock(jobs_mutex_);
        for (const auto& [graph, entry] : jobs_) dump += entry.runtime->DescribeWaiting();
      }
      std::fprintf(stderr, "[weir] session shutdown: calls still in flight after %lld ms; actors:\n%s",
                   static_cast<long long>(options_.shutdown_timeout.count()), dump.c_str());
      dispatcher_->FailOutstanding(
          std::make_exception_ptr(std::runtime_error("[session] shut down before the call completed")));
    }
    // Before the jobs' groups close their connections: a rank still waiting in one of their collectives
    // learns why no answer will come (they made different numbers of calls).
    if (cluster_) cluster_->AnnounceClose(CallsSummary());
    jobs_.clear();        // end-of-stream cascade through every job's actors
    runtime_.reset();     // the actor system waits for its actors
    dispatcher_.reset();  // runs the remaining callbacks, joins the callback thread
  }

  /// What turns a finished call's outputs (or error) into the caller's: the user-visible names, the
  /// watch handlers fed by the hidden outputs that follow them, and this process's side of an error a
  /// collective reports when another process left the job.
  struct OutputShape {
    std::shared_ptr<const std::vector<std::string>> names;
    std::vector<std::function<void(const Tensor&)>> watch_handlers;  // by hidden output, in order

    std::shared_ptr<const Outputs::PieceLayout> layout;  // null when every output has one piece
    int rank = 0;     // this process's
    std::string job;  // the job's name

    Outputs Deliver(std::vector<Tensor> all) const {
      const std::size_t visible = names->size();
      for (std::size_t i = visible; i < all.size(); ++i) watch_handlers[i - visible](all[i]);
      all.resize(visible);
      return Outputs(names, std::move(all), layout);
    }

    /// `error`, where another process left the job (they made different numbers of calls), with which
    /// call of which job this process is in.
    std::exception_ptr Explain(std::exception_ptr error, std::int64_t call) const {
      if (!error) return error;
      try {
        std::rethrow_exception(error);
      } catch (const PeerLeftError& left) {
        return std::make_exception_ptr(
            PeerLeftError(fmt::format("{}; rank {} is in call {} of job '{}'", left.what(), rank, call, job)));
      } catch (...) {
        return error;
      }
    }
  };

  struct Launched {
    std::shared_ptr<CallRecord> record;
    std::shared_ptr<const OutputShape> output_shape;
    std::atomic<std::int64_t>* sync_latency_ns = nullptr;  // the job's (Entry::sync_latency_ns)
    JobRuntime* runtime = nullptr;                         // the job's (Entry::runtime)
  };

  Launched Launch(const Job& job, std::vector<Tensor> inputs, Session::Callback callback) {
    CheckJob(job);
    Entry& entry = CompiledEntry(job);
    ValidateInputs(job, inputs, entry.runtime->GetPlan().input_pieces);
    JobRuntime& runtime = *entry.runtime;
    GateGuard gate(*this, entry);
    // No call of a job that reads these variables runs now (the gate), and the next one starts after
    // this call: it finds them changed, and derives again what it keeps from them.
    for (const auto& version : entry.written_versions) version->fetch_add(1, std::memory_order_release);
    auto record = std::make_shared<CallRecord>();
    record->job_call = entry.calls->fetch_add(1, std::memory_order_relaxed) + 1;
    record->inputs = std::move(inputs);
    record->is_sync = !callback;
    record->issued_from_callback = dispatcher_->OnCallbackThread();
    if (callback) {
      // Callbacks may run after the job's runtime is gone (session shutdown): capture by value.
      record->callback = [callback = std::move(callback), shape = entry.output_shape](CallRecord& done) {
        CallResult result;
        result.error = shape->Explain(done.Error(), done.job_call);
        if (!result.error) {
          try {
            result.outputs = shape->Deliver(std::move(done.outputs));
          } catch (...) {  // a watch handler's exception is this call's error, which the callback gets
            result.error = std::current_exception();
          }
        }
        callback(std::move(result));
      };
    }
    dispatcher_->Admit(record, [&] { runtime.Launch(record); });
    return {std::move(record), entry.output_shape, entry.sync_latency_ns.get(), &runtime};
  }

  // How long a sync caller spins before it sleeps: twice the job's typical call, for calls short enough
  // that a wake-up (tens of microseconds here) would be a large part of them; no spin for longer ones,
  // which a wake-up barely slows and a spin would take a core from, nor with one usable core, where the
  // spin would hold up the very threads it waits for.
  static constexpr std::chrono::microseconds kMaxSyncSpin{250};
  // With WEIR_CALLER_COMPLETION_US=N, a sync caller of a job on one device stream (a GPU's) whose typical
  // call takes at most N us waits for the device's completion itself and handles it
  // (JobRuntime::CompleteNext): one wake-up after the device instead of the poller's and then the
  // caller's. Off by default until a GPU has measured it (the CPU stand-in shows no difference, and on
  // a GPU the caller's wait spins 20 us first, as the poller's does). Never for long calls: that wait
  // cannot always be interrupted (a CUDA event's, once asleep), and Ctrl-C must stay prompt.
  static std::int64_t MaxCompletedByCallerNs() {
    static const std::int64_t limit = [] {
      const char* text = std::getenv("WEIR_CALLER_COMPLETION_US");
      const std::int64_t us = text != nullptr && *text != '\0' ? std::strtoll(text, nullptr, 10) : 0;
      return 1000 * std::min<std::int64_t>(us, 2000);
    }();
    return limit;
  }

  static Outputs Wait(const Launched& launched) {
    static const bool may_spin = UsableCores() > 1;
    const std::int64_t typical = launched.sync_latency_ns->load(std::memory_order_relaxed);
    const std::chrono::nanoseconds spin(
        may_spin && typical > 0 && 2 * typical <= std::chrono::nanoseconds(kMaxSyncSpin).count() ? 2 * typical : 0);
    if (typical > 0 && typical <= MaxCompletedByCallerNs()) {
      while (!launched.record->Fulfilled() && launched.runtime->CompleteNext()) {
      }
    }
    launched.record->AwaitFulfilled(spin);
    // The typical latency: a moving average of the calls' launch-to-return times (the first call sets it).
    const std::int64_t took =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - launched.record->launched)
            .count();
    launched.sync_latency_ns->store(typical == 0 ? took : typical + (took - typical) / 8, std::memory_order_relaxed);
    if (std::exception_ptr error = launched.record->Error()) {
      std::rethrow_exception(launched.output_shape->Explain(error, launched.record->job_call));
    }
    return launched.output_shape->Deliver(std::move(launched.record->outputs));
  }

  JobRuntime& Compiled(const Job& job) { return *CompiledEntry(job).runtime; }

  void Release(const Job& job) {
    std::unique_ptr<JobRuntime> runtime;  // shut down once the locks are let go: its actors may call back
    {
      std::lock_guard lock(jobs_mutex_);
      std::lock_guard gate(gate_mutex_);  // the gate reads the entries' conflicts and counts
      const auto it = jobs_.find(job.Graph().get());
      if (it == jobs_.end()) return;
      Entry& entry = it->second;
      if (entry.launching > 0 || entry.runtime->CallsInFlight() > 0) {
        throw std::logic_error(
            fmt::format("[session] job '{}' cannot be released while a call of it is in flight", job.Name()));
      }
      for (Entry* other : entry.conflicts) std::erase(other->conflicts, &entry);
      runtime = std::move(entry.runtime);
      jobs_.erase(it);
    }
  }

  Dispatcher& GetDispatcher() { return *dispatcher_; }
  Cluster* GetCluster() { return cluster_.get(); }
  VariableStore& Variables() { return variables_; }

  /// Runs `fn` while no call is in flight and none can start (variables are then safe to read and
  /// write). Calls already admitted finish first.
  template <typename Fn> auto Exclusive(Fn&& fn) {
    std::unique_lock lock(gate_mutex_);
    gate_cv_.wait(lock, [&] { return !exclusive_; });
    exclusive_ = true;
    lock.unlock();
    struct Release {
      SessionImpl& session;
      ~Release() {
        {
          std::lock_guard lock(session.gate_mutex_);
          session.exclusive_ = false;
        }
        session.gate_cv_.notify_all();
      }
    } release{*this};
    dispatcher_->WaitAllCompleted(std::chrono::hours(24 * 365));
    return fn();
  }

  void StartProfiling() {
    std::lock_guard lock(jobs_mutex_);
    profiling_ = true;
    profile_start_ = std::chrono::steady_clock::now();
    for (auto& [graph, entry] : jobs_) entry.runtime->SetProfiling(true);
  }

  void StartTrace() {
    Exclusive([&] {
      std::lock_guard lock(jobs_mutex_);
      if (tracing_) throw std::logic_error("[session] StartTrace: a trace is already being recorded (call StopTrace first)");
      tracing_ = true;
      trace_start_ns_ = TraceNanos(std::chrono::steady_clock::now());
      for (auto& [graph, entry] : jobs_) entry.runtime->SetTracing(true);
    });
  }

  void StopTrace(const std::string& path) {
    std::vector<JobTrace> traces;
    const std::int64_t start_ns = Exclusive([&] {
      std::lock_guard lock(jobs_mutex_);
      if (!tracing_) throw std::logic_error("[session] StopTrace: no trace is being recorded (call StartTrace first)");
      tracing_ = false;
      for (Entry* entry : EntriesInCompileOrder()) {
        entry->runtime->SetTracing(false);
        JobTrace trace = entry->runtime->Trace();
        if (!trace.calls.empty() || !trace.tasks.empty()) traces.push_back(std::move(trace));
      }
      return trace_start_ns_;
    });
    WriteChromeTrace(path, traces, start_ns);
  }

  std::string DescribeState() {
    std::lock_guard lock(jobs_mutex_);
    std::string out;
    for (const Entry* entry : EntriesInCompileOrder()) {
      if (entry->runtime->CallsInFlight() > 0) out += entry->runtime->DescribeWaiting();
    }
    return out.empty() ? "no calls in flight\n" : out;
  }

  // The watchdog: while calls are in flight, reports once per stall when no actor of any job has
  // fired for options_.watchdog_timeout. Polls the executors' act counters (no cost to them).
  void StartWatchdog() {
    if (options_.watchdog_timeout.count() <= 0) return;
    watchdog_ = std::thread([this] {
      using Clock = std::chrono::steady_clock;
      const auto timeout = options_.watchdog_timeout;
      const auto poll = std::clamp<std::chrono::milliseconds>(timeout / 4, std::chrono::milliseconds(10),
                                                               std::chrono::milliseconds(1000));
      std::int64_t last_acts = -1;
      Clock::time_point last_progress = Clock::now();
      bool reported = false;
      std::unique_lock lock(watchdog_mutex_);
      while (!watchdog_cv_.wait_for(lock, poll, [&] { return watchdog_stop_; })) {
        lock.unlock();
        std::int64_t acts = 0;
        int in_flight = 0;
        {
          std::lock_guard jobs(jobs_mutex_);
          for (const auto& [graph, entry] : jobs_) {
            acts += entry.runtime->Acts();
            in_flight += entry.runtime->CallsInFlight();
          }
        }
        const Clock::time_point now = Clock::now();
        if (in_flight == 0 || acts != last_acts) {
          last_acts = acts;
          last_progress = now;
          reported = false;
        } else if (!reported && now - last_progress >= timeout) {
          reported = true;
          const std::string report = fmt::format(
              "[weir] watchdog: no actor has fired for {:.1f} s with {} call(s) in flight:\n{}",
              std::chrono::duration<double>(now - last_progress).count(), in_flight, DescribeState());
          if (options_.watchdog_handler) {
            options_.watchdog_handler(report);
          } else {
            std::fputs(report.c_str(), stderr);
          }
        }
        lock.lock();
      }
    });
  }

  Profile StopProfiling() {
    std::lock_guard lock(jobs_mutex_);
    if (!profiling_) throw std::logic_error("[session] StopProfiling: profiling is not on (call StartProfiling first)");
    profiling_ = false;
    Profile profile;
    profile.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - profile_start_).count();
    for (Entry* entry : EntriesInCompileOrder()) {
      entry->runtime->SetProfiling(false);
      const JobCounters counters = entry->runtime->Profile();
      JobProfile job{counters.job, counters.calls, static_cast<double>(counters.call_ns) * 1e-9, {}};
      for (const ProfiledTask& task : counters.tasks) {
        job.actors.push_back({task.name, task.kind, task.op_type, task.device, task.firings,
                              static_cast<double>(task.busy_ns) * 1e-9, task.kept});
      }
      const bool ran = job.calls > 0 || std::any_of(job.actors.begin(), job.actors.end(),
                                                    [](const ActorProfile& actor) { return actor.firings > 0; });
      if (ran) profile.jobs.push_back(std::move(job));
    }
    return profile;
  }

  std::vector<std::string> VariableNamesInUse() {
    std::lock_guard lock(jobs_mutex_);
    std::set<std::string> names;
    for (const auto& [graph, entry] : jobs_) names.insert(entry.reads.begin(), entry.reads.end());
    return {names.begin(), names.end()};
  }

 private:
  struct Entry {
    Job job;  // keeps the graph (and so the map key) alive
    std::unique_ptr<JobRuntime> runtime;
    std::set<std::string> reads;   // variables
    std::set<std::string> writes;
    std::vector<Entry*> conflicts;  // other jobs that write what this one touches, or touch what it writes
    int launching = 0;              // passed the gate, not yet launched; guarded by gate_mutex_
    std::shared_ptr<const OutputShape> output_shape;
    std::size_t order = 0;          // compile order, for profiles
    bool across_processes = false;  // has collectives across processes (Plan::process_collectives)
    // The typical sync call, for the caller's spin (Wait); on the heap, as the entry moves into the map.
    std::unique_ptr<std::atomic<std::int64_t>> sync_latency_ns = std::make_unique<std::atomic<std::int64_t>>(0);
    std::unique_ptr<std::atomic<std::int64_t>> calls = std::make_unique<std::atomic<std::int64_t>>(0);  // launched
    // The versions of the variables it writes, advanced at each call (VariableStore::Version).
    std::vector<std::shared_ptr<std::atomic<std::uint64_t>>> written_versions;
  };

  /// What this process did, for the ranks that may still wait for it when it closes: "after 3 calls of
  /// job 'train'" (the jobs with collectives across processes).
  std::string CallsSummary() {
    std::vector<std::string> jobs;
    std::lock_guard lock(jobs_mutex_);
    for (const Entry* entry : EntriesInCompileOrder()) {
      if (entry->across_processes) {
        jobs.push_back(fmt::format("{} calls of job '{}'", entry->calls->load(std::memory_order_relaxed), entry->job.Name()));
      }
    }
    return jobs.empty() ? std::string("with no call of a job across processes") : fmt::format("after {}", fmt::join(jobs, ", "));
  }

  /// The compiled jobs in the order they were compiled; with jobs_mutex_ held.
  std::vector<Entry*> EntriesInCompileOrder() {
    std::vector<Entry*> entries;
    for (auto& [graph, entry] : jobs_) entries.push_back(&entry);
    std::sort(entries.begin(), entries.end(), [](const Entry* a, const Entry* b) { return a->order < b->order; });
    return entries;
  }

  // Calls of one job pipeline freely; calls of two jobs that share a variable one of them writes
  // (a train and an eval job) never overlap: a call waits until the other job's calls are done.
  class GateGuard {
   public:
    GateGuard(SessionImpl& session, Entry& entry) : session_(session), entry_(entry) {
      std::unique_lock lock(session.gate_mutex_);
      ++session.gate_waiters_;
      session.gate_cv_.wait(lock, [&] { return !session.exclusive_ && !session.ConflictBusy(entry); });
      --session.gate_waiters_;
      ++entry.launching;
    }
    ~GateGuard() {
      {
        std::lock_guard lock(session_.gate_mutex_);
        --entry_.launching;
      }
      if (session_.gate_waiters_.load() > 0) session_.gate_cv_.notify_all();
    }

   private:
    SessionImpl& session_;
    Entry& entry_;
  };

  bool ConflictBusy(const Entry& entry) const {
    for (const Entry* other : entry.conflicts) {
      if (other->launching > 0 || other->runtime->CallsInFlight() > 0) return true;
    }
    // Collectives across processes: one job's calls overlap (its plan issues each call's collectives
    // after the previous call's, graph/planner/process_split.hpp: GateCollectiveCalls), but two jobs' calls do
    // not, so that every process issues them in the same order, which is what keeps blocking collectives
    // from waiting on each other across processes.
    if (entry.across_processes) {
      for (const auto& [graph, other] : jobs_) {
        if (&other == &entry || !other.across_processes) continue;
        if (other.launching > 0 || other.runtime->CallsInFlight() > 0) return true;
      }
    }
    return false;
  }

  Entry& CompiledEntry(const Job& job) {
    std::lock_guard lock(jobs_mutex_);
    auto it = jobs_.find(job.Graph().get());
    if (it != jobs_.end()) return it->second;
    PlanOptions plan_options;
    plan_options.compute_streams = options_.cpu_compute_streams;
    plan_options.devices = options_.cpu_devices;
    plan_options.threads_per_device = ThreadsPerDevice();
    plan_options.processes = cluster_ ? cluster_->Size() : 1;
    plan_options.rank = cluster_ ? cluster_->Rank() : 0;
    plan_options.stream_graphs = options_.stream_graphs;
    plan_options.tensor_float_32 = options_.tensor_float_32;
    plan_options.fusion_threshold_bytes = options_.distributed.fusion_threshold_bytes;
    plan_options.async_cpu_streams = options_.async_cpu_streams;
    plan_options.commit_before_writes = options_.commit_before_writes;
    if (OnGpu(*job.Graph())) {
      plan_options.device_kind = Device::Kind::kCuda;
      plan_options.devices = options_.gpu_devices;
    }
    std::shared_ptr<const Plan> plan;
    std::shared_ptr<ProcessGroup> processes;
    // Every process compiles its jobs in the same order, failed ones included: the n-th must be the
    // same everywhere.
    const std::size_t order = compiled_count_++;
    try {
      try {
        plan = CompilePlan(job.Graph(), plan_options);
      } catch (const std::exception&) {
        if (cluster_) cluster_->PublishCompileFailure(job.Name(), order);  // the others fail at once
        throw;
      }
      if (cluster_) {
        cluster_->CheckSamePlan(*plan, order);
        if (plan->process_collectives) processes = cluster_->MakeJobGroup(*plan, order);
      }
    } catch (const std::invalid_argument& error) {
      // Nothing of the job is kept: the session stays usable for every other job.
      throw std::invalid_argument(fmt::format("[session] job '{}' does not compile: {}", job.Name(), error.what()));
    } catch (const std::exception& error) {
      throw std::runtime_error(fmt::format("[session] job '{}' does not compile: {}", job.Name(), error.what()));
    }
    for (const std::string& notice : plan->notices) std::fprintf(stderr, "[weir] %s\n", notice.c_str());
    for (const OpNode& node : job.Graph()->nodes) {
      if (node.type == kVariableOp) variables_.GetOrCreate(std::any_cast<const VariableAttrs&>(node.attrs), job.Name());
    }
    auto output_shape = std::make_shared<OutputShape>();
    output_shape->names = std::make_shared<const std::vector<std::string>>(job.OutputNames());
    output_shape->rank = cluster_ ? cluster_->Rank() : 0;
    output_shape->job = job.Name();
    if (plan->mirrored &&
        std::any_of(plan->output_pieces.begin(), plan->output_pieces.end(), [](int pieces) { return pieces > 1; })) {
      auto layout = std::make_shared<Outputs::PieceLayout>();
      layout->pieces = plan->output_pieces;
      for (const TensorMeta& meta : plan->output_metas) layout->piece_shapes.push_back(meta.shape);
      output_shape->layout = std::move(layout);
    }
    for (const std::string& name : plan->output_names) {
      if (!name.starts_with(kWatchOutputPrefix)) continue;
      const std::size_t watch = std::stoul(name.substr(kWatchOutputPrefix.size()));
      output_shape->watch_handlers.push_back(job.Graph()->watches[watch].handler);
    }
    Entry entry{job, nullptr, {plan->variables_read.begin(), plan->variables_read.end()},
                {plan->variables_written.begin(), plan->variables_written.end()}, {}, 0, std::move(output_shape),
                jobs_.size()};
    entry.across_processes = plan->process_collectives;
    for (const std::string& name : entry.writes) entry.written_versions.push_back(variables_.Version(name));
    entry.runtime = runtime_->Instantiate(std::move(plan), *dispatcher_,
                                          [this](const std::string& name, Device device) {
                                            return BoundVariable{variables_.Resident(name, device),
                                                                 variables_.Version(name)};
                                          },
                                          std::move(processes));
    entry.runtime->SetCallDoneHook([this] {
      if (gate_waiters_.load() > 0) {
        { std::lock_guard lock(gate_mutex_); }  // a waiter is either asleep or has not checked yet
        gate_cv_.notify_all();
      }
    });
    if (profiling_) entry.runtime->SetProfiling(true);
    if (tracing_) entry.runtime->SetTracing(true);
    Entry& added = jobs_.emplace(job.Graph().get(), std::move(entry)).first->second;
    std::lock_guard gate(gate_mutex_);
    for (auto& [graph, other] : jobs_) {
      if (&other == &added) continue;
      if (Overlaps(added.writes, other.reads) || Overlaps(other.writes, added.reads)) {
        added.conflicts.push_back(&other);
        other.conflicts.push_back(&added);
      }
    }
    return added;
  }

  static bool Overlaps(const std::set<std::string>& a, const std::set<std::string>& b) {
    return std::any_of(a.begin(), a.end(), [&](const std::string& name) { return b.count(name) > 0; });
  }

  SessionOptions options_;
  std::unique_ptr<Cluster> cluster_;  // several processes; outlives the jobs, whose groups use it
  std::size_t compiled_count_ = 0;    // jobs compiled, or tried (guarded by jobs_mutex_)
  VariableStore variables_;
  std::mutex gate_mutex_;
  std::condition_variable gate_cv_;
  std::atomic<int> gate_waiters_{0};
  bool exclusive_ = false;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<Runtime> runtime_;
  std::mutex jobs_mutex_;
  std::map<const JobGraph*, Entry> jobs_;
  bool profiling_ = false;  // guarded by jobs_mutex_, with profile_start_
  std::thread watchdog_;
  std::mutex watchdog_mutex_;
  std::condition_variable watchdog_cv_;
  bool watchdog_stop_ = false;  // guarded by watchdog_mutex_
  bool tracing_ = false;    // guarded by jobs_mutex_, with trace_start_ns_
  std::int64_t trace_start_ns_ = 0;
  std::chrono::steady_clock::time_point profile_start_;
};

}  // namespace internal

std::map<std::string, std::vector<DType>> SupportedOps(std::string_view device) {
  if (device != "cpu" && device != "gpu") {
    throw std::invalid_argument(fmt::format("[SupportedOps] device: expected \"cpu\" or \"gpu\", got \"{}\"", device));
  }
  // The CUDA kernels register themselves as the CUDA backend loads.
  if (device == "gpu" && internal::CudaBuilt()) internal::LoadCudaBackend();
  std::map<std::string, std::vector<DType>> ops;
  for (const internal::KernelKey& key :
       internal::RegisteredKernels(device == "gpu" ? Device::Kind::kCuda : Device::Kind::kCpu)) {
    ops[key.op_type].push_back(key.dtype);
  }
  if (device == "gpu" && internal::CudaBuilt()) {  // the data pipeline: host-only ops, which GPU jobs run too
    for (const internal::KernelKey& key : internal::RegisteredKernels(Device::Kind::kCpu)) {
      const internal::OpDef* def = internal::TryFindOp(key.op_type);
      if (def != nullptr && def->host_only) ops[key.op_type].push_back(key.dtype);
    }
  }
  return ops;
}

int VisibleGpus() { return internal::CudaDeviceCount(); }

Session::Session(SessionOptions options) : impl_(std::make_unique<internal::SessionImpl>(options)) {}

Session::~Session() = default;

Outputs Session::Call(const Job& job, std::vector<Tensor> inputs) {
  return internal::SessionImpl::Wait(impl_->Launch(job, std::move(inputs), nullptr));
}

Outputs Session::Call(const Job& job, const std::map<std::string, Tensor>& inputs) {
  internal::CheckJob(job);
  return Call(job, internal::OrderByName(job, inputs));
}

void Session::CallAsync(const Job& job, std::vector<Tensor> inputs, Callback callback) {
  if (!callback) throw std::invalid_argument("[session] argument 'callback' of CallAsync is empty");
  impl_->Launch(job, std::move(inputs), std::move(callback));
}

void Session::CallAsync(const Job& job, const std::map<std::string, Tensor>& inputs, Callback callback) {
  internal::CheckJob(job);
  CallAsync(job, internal::OrderByName(job, inputs), std::move(callback));
}

void Session::Sync() { impl_->GetDispatcher().Sync(); }

void SetWaitInterrupter(std::function<void()> hook) { internal::SetWaitInterrupter(std::move(hook)); }

Resource Session::GetResource() const { return impl_->GetResource(); }

std::string Session::PlanDot(const Job& job) {
  internal::CheckJob(job);
  return impl_->Compiled(job).GetPlan().ToDot();
}

void Session::Compile(const Job& job) {
  internal::CheckJob(job);
  impl_->Compiled(job);
}

void Session::Release(const Job& job) {
  internal::CheckJob(job);
  impl_->Release(job);
}

Tensor Session::GetVariable(const std::string& name) {
  return impl_->Exclusive([&] {
    Tensor value = impl_->Variables().Read(name);
    if (!value.Defined()) {
      throw std::invalid_argument(fmt::format("[session] no variable named '{}' (variables are created when a job "
                                              "naming them is compiled)", name));
    }
    return value;
  });
}

std::map<std::string, Tensor> Session::GetVariables() {
  return impl_->Exclusive([&] { return impl_->Variables().Snapshot(); });
}

void Session::SetVariables(const std::map<std::string, Tensor>& values, bool ignore_unknown) {
  impl_->Exclusive([&] {
    internal::VariableStore& store = impl_->Variables();
    // Check everything first: nothing is assigned if anything is wrong.
    for (const auto& [name, value] : values) {
      const Tensor target = store.Find(name);
      if (!target.Defined()) {
        if (ignore_unknown) continue;
        throw std::invalid_argument(fmt::format("[session] SetVariables: no variable named '{}'", name));
      }
      if (!value.Defined() || value.GetShape() != target.GetShape() || value.GetDType() != target.GetDType()) {
        throw std::invalid_argument(fmt::format("[session] SetVariables: '{}' is {}{}, the value given is {}", name,
                                                target.GetDType(), target.GetShape(),
                                                value.Defined() ? fmt::format("{}{}", value.GetDType(), value.GetShape())
                                                                : std::string("undefined")));
      }
    }
    for (const auto& [name, value] : values) {
      if (store.Find(name).Defined()) store.Assign(name, value);
    }
  });
}

void Session::SaveCheckpoint(const std::string& path, SaveOptions options, const std::vector<std::string>& names) {
  // One consistent snapshot between calls, copying only the variables that are saved.
  const std::map<std::string, Tensor> values = impl_->Exclusive([&] {
    if (names.empty()) return impl_->Variables().Snapshot();
    std::map<std::string, Tensor> selected;
    for (const std::string& name : names) {
      Tensor value = impl_->Variables().Read(name);
      if (!value.Defined()) throw std::invalid_argument(fmt::format("[session] SaveCheckpoint: no variable named '{}'", name));
      selected.emplace(name, std::move(value));
    }
    return selected;
  });
  // In a distributed session every process holds the same variables: rank 0 writes them once.
  if (internal::Cluster* cluster = impl_->GetCluster(); cluster != nullptr) {
    cluster->OnRankZero(fmt::format("save the checkpoint '{}'", path), [&] { weir::SaveCheckpoint(path, values, options); });
    return;
  }
  weir::SaveCheckpoint(path, values, options);
}

void Session::StartProfiling() { impl_->StartProfiling(); }

Profile Session::StopProfiling() { return impl_->StopProfiling(); }

void Session::StartTrace() { impl_->StartTrace(); }

std::string Session::DescribeState() { return impl_->DescribeState(); }

void Session::StopTrace(const std::string& path) { impl_->StopTrace(path); }

LoadReport Session::LoadCheckpoint(const std::string& path, const std::vector<std::string>& names) {
  const std::map<std::string, Tensor> loaded = weir::LoadCheckpoint(path);
  const std::vector<std::string> in_use = impl_->VariableNamesInUse();
  for (const std::string& name : names) {
    if (std::find(in_use.begin(), in_use.end(), name) == in_use.end()) {
      throw std::invalid_argument(fmt::format("[session] LoadCheckpoint: no variable named '{}'", name));
    }
  }
  const std::vector<std::string>& wanted = names.empty() ? in_use : names;
  LoadReport report = CompareCheckpoint(loaded, wanted);
  std::map<std::string, Tensor> known;
  for (const auto& [name, value] : loaded) {
    if (std::find(wanted.begin(), wanted.end(), name) != wanted.end()) known.emplace(name, value);
  }
  SetVariables(known, /*ignore_unknown=*/false);
  for (const std::string& name : report.missing) {
    std::fprintf(stderr, "[weir] warning: checkpoint %s has no variable '%s'; it keeps its current value\n",
                 path.c_str(), name.c_str());
  }
  return report;
}

}  // namespace weir
