#pragma once
// A session's side of several processes (DistributedOptions): the control plane (rank 0 hosts it),
// the check that every rank compiled the same plan for each job, and a Gloo group for each job whose
// collectives span the processes (Gloo or shared memory on CPUs, NCCL on GPUs).
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <string_view>
#include <memory>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "kernels/collectives/process_group.hpp"
#include "weir/session.hpp"

namespace weir::internal {

class ControlPlaneServer;
class ControlPlaneClient;

/// Throws std::invalid_argument naming the field, what it expects and what it got.
void ValidateDistributedOptions(const DistributedOptions& options);

/// How long a session whose collective failed waits for the other ranks to close theirs.
inline constexpr std::chrono::milliseconds kCloseAfterFailure{3000};

class Cluster {
 public:
  /// Rank 0 starts the master; every rank connects and waits for the others (rendezvous_timeout).
  explicit Cluster(const DistributedOptions& options);
  /// Waits (at most the rendezvous timeout; kCloseAfterFailure once a collective of this session failed)
  /// until every rank closes its session, so that the master does not go away under a rank still
  /// finishing its last call; a rank that cannot wait says so on stderr.
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  int Rank() const { return options_.rank; }
  int Size() const { return options_.world_size; }
  /// The jobs' data plane: "shm" or "gloo".
  std::string_view Collectives() const { return shared_memory_ ? "shm" : "gloo"; }

  /// Every rank publishes a fingerprint of the plan it compiled as its `order`-th job and compares
  /// all of them; throws std::invalid_argument naming the job and the ranks that differ. A rank that
  /// never compiles that job is a std::runtime_error after rendezvous_timeout.
  void CheckSamePlan(const Plan& plan, std::size_t order);
  /// This rank could not compile its `order`-th job: the other ranks' CheckSamePlan fails at once.
  void PublishCompileFailure(const std::string& job_name, std::size_t order);
  /// Rank 0 runs `fn` (writing a checkpoint once); every rank returns when it is done, and throws
  /// std::runtime_error naming `what` when it failed on rank 0 (which rethrows its own error). Every
  /// rank must call it in the same order.
  void OnRankZero(std::string_view what, const std::function<void()>& fn);
  /// The process group of the `order`-th job (every rank makes it when compiling that job): NCCL for a
  /// job on GPUs (one per process); else shared memory when every rank is on this machine, or Gloo
  /// (DistributedOptions::collectives).
  std::shared_ptr<ProcessGroup> MakeJobGroup(const Plan& plan, std::size_t order);
  /// This process is closing its session `summary` ("after 3 calls of job 'train'"): a rank still waiting
  /// in a collective says so (PeerLeftError) instead of waiting for the collective timeout.
  void AnnounceClose(const std::string& summary);

 private:
  std::shared_ptr<ProcessGroup> MakeGroup(const Plan& plan, std::size_t order);

  DistributedOptions options_;
  std::vector<std::shared_ptr<const std::atomic<bool>>> group_failures_;  // each job group's FailedFlag()
  std::string address_;  // this rank's data-plane address
  std::unique_ptr<ControlPlaneServer> server_;
  std::unique_ptr<ControlPlaneClient> client_;
  std::size_t rank_zero_runs_ = 0;
  bool shared_memory_ = false;  // the jobs' groups use shared memory (every rank on this machine)
};

}  // namespace weir::internal
