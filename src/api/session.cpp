// weir::Session: validates calls, compiles jobs on first use, and feeds calls to their runtimes
// through the session's dispatcher (one ordered stream of calls).
#include "weir/session.hpp"

#include <cstdio>
#include <future>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

#include "actors/dispatcher.hpp"
#include "actors/runtime.hpp"
#include "graph/planner.hpp"

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

const Tensor& Outputs::operator[](std::string_view name) const {
  const std::vector<std::string>& names = Names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return tensors_[i];
  }
  throw std::out_of_range(fmt::format("[Outputs] no output named '{}'; outputs are: {}", name, fmt::join(names, ", ")));
}

namespace internal {

namespace {

std::string DescribeInputs(const std::vector<PlaceholderInfo>& placeholders) {
  std::vector<std::string> parts;
  for (const PlaceholderInfo& p : placeholders) parts.push_back(fmt::format("{}: {}{}", p.name, p.dtype, p.shape));
  return fmt::format("{}", fmt::join(parts, ", "));
}

void ValidateInputs(const Job& job, const std::vector<Tensor>& inputs) {
  const auto& placeholders = job.Placeholders();
  if (inputs.size() != placeholders.size()) {
    throw std::invalid_argument(fmt::format("[job '{}'] expects {} inputs ({}), got {}", job.Name(), placeholders.size(),
                                            DescribeInputs(placeholders), inputs.size()));
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const PlaceholderInfo& p = placeholders[i];
    const Tensor& input = inputs[i];
    if (!input.Defined()) {
      throw std::invalid_argument(fmt::format("[job '{}'] input '{}': expected a {}{} tensor, got an undefined tensor",
                                              job.Name(), p.name, p.dtype, p.shape));
    }
    if (input.GetDType() != p.dtype) {
      throw std::invalid_argument(fmt::format("[job '{}'] input '{}': expected dtype {}, got {}", job.Name(), p.name,
                                              p.dtype, input.GetDType()));
    }
    if (input.GetShape() != p.shape) {
      throw std::invalid_argument(fmt::format("[job '{}'] input '{}': expected shape {}, got {}", job.Name(), p.name,
                                              p.shape, input.GetShape()));
    }
    if (input.GetDevice().kind != Device::Kind::kCpu) {
      throw std::invalid_argument(fmt::format("[job '{}'] input '{}': expected a tensor on cpu, got one on {}",
                                              job.Name(), p.name, input.GetDevice().ToString()));
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

class SessionImpl {
 public:
  explicit SessionImpl(const SessionOptions& options)
      : options_(options),
        dispatcher_(std::make_unique<Dispatcher>(options.max_calls_in_flight)),
        runtime_(std::make_unique<Runtime>(RuntimeOptions{
            options.scheduler_threads,
            options.hosting == ActorHosting::kActorPerOp ? Hosting::kActorPerTask : Hosting::kActorPerStream,
            options.shutdown_timeout})) {
    if (options.cpu_compute_streams < 1) {
      throw std::invalid_argument(fmt::format("[SessionOptions] cpu_compute_streams must be at least 1, got {}",
                                              options.cpu_compute_streams));
    }
  }

  ~SessionImpl() {
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
    jobs_.clear();        // end-of-stream cascade through every job's actors
    runtime_.reset();     // the actor system waits for its actors
    dispatcher_.reset();  // runs the remaining callbacks, joins the callback thread
  }

  struct Launched {
    std::shared_ptr<CallRecord> record;
    JobRuntime* runtime;
  };

  Launched Launch(const Job& job, std::vector<Tensor> inputs, Session::Callback callback) {
    CheckJob(job);
    ValidateInputs(job, inputs);
    JobRuntime& runtime = Compiled(job);
    auto record = std::make_shared<CallRecord>();
    record->inputs = std::move(inputs);
    record->is_sync = !callback;
    record->issued_from_callback = dispatcher_->OnCallbackThread();
    if (callback) {
      // Callbacks may run after the job's runtime is gone (session shutdown): capture the names.
      record->callback = [callback = std::move(callback), names = runtime.OutputNames()](CallRecord& done) {
        CallResult result;
        result.error = done.Error();
        if (!result.error) result.outputs = Outputs(names, std::move(done.outputs));
        callback(std::move(result));
      };
    }
    dispatcher_->Admit(record, [&] { runtime.Launch(record); });
    return {std::move(record), &runtime};
  }

  static Outputs Wait(const Launched& launched) {
    launched.record->promise.get_future().get();
    if (std::exception_ptr error = launched.record->Error()) std::rethrow_exception(error);
    return Outputs(launched.runtime->OutputNames(), std::move(launched.record->outputs));
  }

  JobRuntime& Compiled(const Job& job) {
    std::lock_guard lock(jobs_mutex_);
    auto it = jobs_.find(job.Graph().get());
    if (it == jobs_.end()) {
      PlanOptions plan_options;
      plan_options.compute_streams = options_.cpu_compute_streams;
      std::shared_ptr<const Plan> plan = CompilePlan(job.Graph(), plan_options);
      it = jobs_.emplace(job.Graph().get(), Entry{job, runtime_->Instantiate(std::move(plan), *dispatcher_)}).first;
    }
    return *it->second.runtime;
  }

  Dispatcher& GetDispatcher() { return *dispatcher_; }

 private:
  struct Entry {
    Job job;  // keeps the graph (and so the map key) alive
    std::unique_ptr<JobRuntime> runtime;
  };

  SessionOptions options_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<Runtime> runtime_;
  std::mutex jobs_mutex_;
  std::map<const JobGraph*, Entry> jobs_;
};

}  // namespace internal

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

std::string Session::PlanDot(const Job& job) {
  internal::CheckJob(job);
  return impl_->Compiled(job).GetPlan().ToDot();
}

}  // namespace weir
