#include "api/cluster.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "common/stale_files.hpp"
#include "distributed/control_plane.hpp"
#include "distributed/gloo_process_group.hpp"
#include "distributed/nccl_process_group.hpp"
#include "distributed/shm_process_group.hpp"
#include "distributed/stall_report.hpp"

namespace weir {

namespace {

// A whole decimal number in [low, high] from the environment variable `name`, or `fallback` when unset.
long long FromEnv(const char* name, long long fallback, long long low, long long high) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (*end != '\0' || value < low || value > high) {
    throw std::invalid_argument(fmt::format("[distributed] environment variable {}: expected an integer in [{}, {}], got '{}'",
                                            name, low, high, text));
  }
  return value;
}

}  // namespace

DistributedOptions DistributedOptions::FromEnvironment() {
  DistributedOptions options;
  options.world_size = static_cast<int>(FromEnv("WORLD_SIZE", 1, 1, 1 << 20));
  options.rank = static_cast<int>(FromEnv("RANK", 0, 0, options.world_size - 1));
  if (options.world_size > 1) options.local_rank = static_cast<int>(FromEnv("LOCAL_RANK", 0, 0, options.rank));
  if (const char* addr = std::getenv("MASTER_ADDR"); addr != nullptr && *addr != '\0') options.master_addr = addr;
  options.master_port = static_cast<int>(FromEnv("MASTER_PORT", options.master_port, 1, 65535));
  options.rendezvous_timeout = std::chrono::seconds(FromEnv("WEIR_RDZV_TIMEOUT", 300, 1, 1 << 30));
  if (const char* collectives = std::getenv("WEIR_COLLECTIVES"); collectives != nullptr && *collectives != '\0') {
    options.collectives = collectives;
  }
  if (const char* token = std::getenv("WEIR_JOB_TOKEN"); token != nullptr) options.job_token = token;
  return options;
}

namespace internal {

void ValidateDistributedOptions(const DistributedOptions& options) {
  auto fail = [](std::string_view field, std::string_view expected, const auto& got) {
    throw std::invalid_argument(fmt::format("[DistributedOptions] {}: expected {}, got {}", field, expected, got));
  };
  if (options.world_size < 1) fail("world_size", "at least 1", options.world_size);
  if (options.rank < 0 || options.rank >= options.world_size) {
    fail("rank", fmt::format("0 <= rank < world_size={}", options.world_size), options.rank);
  }
  if (options.local_rank < 0 || options.local_rank > options.rank) {
    fail("local_rank", fmt::format("0 <= local_rank <= rank={}", options.rank), options.local_rank);
  }
  if (options.master_port < 1 || options.master_port > 65535) fail("master_port", "1..65535", options.master_port);
  if (options.rendezvous_timeout.count() <= 0) fail("rendezvous_timeout", "> 0 ms", options.rendezvous_timeout.count());
  if (options.collective_timeout.count() <= 0) fail("collective_timeout", "> 0 ms", options.collective_timeout.count());
  if (options.collectives != "auto" && options.collectives != "shm" && options.collectives != "gloo") {
    fail("collectives", "\"auto\", \"shm\" or \"gloo\"", fmt::format("\"{}\"", options.collectives));
  }
}

namespace {

ControlPlaneOptions ControlPlaneOptionsOf(const DistributedOptions& options) {
  ControlPlaneOptions cp;
  cp.master_addr = options.master_addr;
  cp.master_port = options.master_port;
  cp.rank = options.rank;
  cp.world_size = options.world_size;
  cp.rendezvous_timeout = options.rendezvous_timeout;
  cp.job_token = options.job_token;
  if (const char* token = std::getenv("WEIR_JOB_TOKEN"); cp.job_token.empty() && token != nullptr) cp.job_token = token;
  return cp;
}

// FNV-1a of the plan's structure: its actors, their ops, streams and registers (ToDot has them all).
std::string Fingerprint(const Plan& plan) {
  std::uint64_t hash = 14695981039346656037ull;
  for (const char c : plan.whole_plan_dot.empty() ? plan.ToDot() : plan.whole_plan_dot) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return fmt::format("{:016x}", hash);
}

}  // namespace

Cluster::Cluster(const DistributedOptions& options) : options_(options) {
  ValidateDistributedOptions(options_);
  const ControlPlaneOptions cp = ControlPlaneOptionsOf(options_);
  if (options_.rank == 0) server_ = std::make_unique<ControlPlaneServer>(cp);
  client_ = ControlPlaneClient::Connect(cp);
  address_ = options_.address.empty() ? LocalAddressTowards(options_.master_addr) : options_.address;
  // The data plane: shared memory when every rank runs on this machine (and nothing says otherwise).
  const std::string machine = MachineIdentity();
  client_->Set(fmt::format("weir/machine/{}", options_.rank), machine);
  bool one_machine = true;
  for (int rank = 0; rank < options_.world_size; ++rank) {
    one_machine = one_machine && client_->Get(fmt::format("weir/machine/{}", rank)) == machine;
  }
  if (options_.collectives == "shm" && !one_machine) {
    throw std::invalid_argument("[DistributedOptions] collectives: \"shm\" needs every rank on one machine, but the "
                                "ranks run on several");
  }
  shared_memory_ = options_.collectives == "shm" || (options_.collectives == "auto" && one_machine);
}

Cluster::~Cluster() {
  // After a failed collective the ranks no longer agree on where they are: some may never close (one
  // stopped, or cut off), so waiting for them is bounded by seconds, not the rendezvous timeout.
  const bool failed = std::any_of(group_failures_.begin(), group_failures_.end(),
                                  [](const auto& flag) { return flag->load(std::memory_order_relaxed); });
  const std::chrono::milliseconds wait = failed ? std::min(options_.rendezvous_timeout, kCloseAfterFailure)
                                                : options_.rendezvous_timeout;
  try {
    client_->Barrier("weir/session/close", wait);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "[weir] rank %d: closing the distributed session without the other ranks%s: %s\n",
                 options_.rank, failed ? " (a collective had failed)" : "", error.what());
  }
  client_.reset();
  server_.reset();
}

namespace {
constexpr std::string_view kCompileFailed = "compile failed";
std::string PlanKey(std::size_t order, int rank) { return fmt::format("weir/plan/{}/{}", order, rank); }
}  // namespace

void Cluster::PublishCompileFailure(const std::string& job_name, std::size_t order) {
  try {
    client_->Set(PlanKey(order, options_.rank), fmt::format("{}\n{}", job_name, kCompileFailed));
  } catch (const std::exception&) {
    // The compile error this follows is what the caller sees.
  }
}

void Cluster::CheckSamePlan(const Plan& plan, std::size_t order) {
  const std::string mine = plan.job_name + "\n" + Fingerprint(plan);
  client_->Set(PlanKey(order, options_.rank), mine);
  std::vector<std::string> differ;
  std::string first;
  for (int rank = 0; rank < options_.world_size; ++rank) {
    std::string theirs;
    try {
      theirs = client_->Get(PlanKey(order, rank), options_.rendezvous_timeout);
    } catch (const ControlPlaneError& error) {
      throw std::runtime_error(fmt::format("[distributed] job '{}' (job #{} compiled here): rank {} did not compile a "
                                           "job #{}: {}", plan.job_name, order + 1, rank, order + 1, error.what()));
    }
    const std::string name = theirs.substr(0, theirs.find('\n'));
    if (theirs.ends_with(kCompileFailed)) {
      throw std::runtime_error(fmt::format("[distributed] job '{}': rank {} could not compile its job #{} ('{}'); see "
                                           "that rank's error", plan.job_name, rank, order + 1, name));
    }
    if (rank == 0) first = theirs;
    if (theirs != first) differ.push_back(fmt::format("rank {} compiled '{}'", rank, name));
  }
  if (!differ.empty()) {
    throw std::invalid_argument(fmt::format(
        "[distributed] job '{}' differs between processes: as job #{} rank 0 compiled '{}', and {} with a different plan "
        "(every process must define and call the same jobs with the same shapes, placements and options)",
        plan.job_name, order + 1, first.substr(0, first.find('\n')), fmt::join(differ, ", ")));
  }
}

void Cluster::OnRankZero(std::string_view what, const std::function<void()>& fn) {
  const std::string key = fmt::format("weir/rank0/{}", rank_zero_runs_++);
  if (options_.rank == 0) {
    std::exception_ptr error;
    std::string outcome = "ok";
    try {
      fn();
    } catch (const std::exception& e) {
      error = std::current_exception();
      outcome = e.what();
    }
    client_->Set(key, outcome);
    if (error) std::rethrow_exception(error);
    return;
  }
  std::string outcome;
  try {
    outcome = client_->Get(key, options_.rendezvous_timeout);
  } catch (const ControlPlaneError& error) {
    throw std::runtime_error(fmt::format("[distributed] rank {}: waiting for rank 0 to {}: {}", options_.rank, what,
                                         error.what()));
  }
  if (outcome != "ok") {
    throw std::runtime_error(fmt::format("[distributed] rank 0 failed to {}: {}", what, outcome));
  }
}

void Cluster::AnnounceClose(const std::string& summary) { AnnounceDeparture(*client_, summary); }

std::shared_ptr<ProcessGroup> Cluster::MakeJobGroup(const Plan& plan, std::size_t order) {
  std::shared_ptr<ProcessGroup> group = MakeGroup(plan, order);
  group_failures_.push_back(group->FailedFlag());
  return group;
}

std::shared_ptr<ProcessGroup> Cluster::MakeGroup(const Plan& plan, std::size_t order) {
  const bool on_gpu = std::any_of(plan.streams.begin(), plan.streams.end(),
                                  [](const StreamId& stream) { return stream.device.kind == Device::Kind::kCuda; });
  try {
    if (on_gpu) {  // one GPU per process: NCCL between them
      return MakeNcclProcessGroup(*client_, {.prefix = fmt::format("weir/nccl/{}", order), .device = 0,
                                             .timeout = options_.collective_timeout});
    }
    if (shared_memory_) {
      return MakeShmProcessGroup(*client_, {.prefix = fmt::format("weir/shm/{}", order),
                                            .timeout = options_.collective_timeout});
    }
    return MakeGlooProcessGroup(*client_, {.prefix = fmt::format("weir/gloo/{}", order), .address = address_,
                                           .timeout = options_.collective_timeout});
  } catch (const std::exception& error) {
    throw std::runtime_error(fmt::format("[distributed] job '{}': connecting its processes failed: {}", plan.job_name,
                                         error.what()));
  }
}

}  // namespace internal
}  // namespace weir
