#pragma once
// Eager execution (Python's flow.enable_eager_execution): the ops of a job being built run one at a
// time, each as a one-op job of its own in the session, as they are written. The job's values so far
// are kept by value id; an op's inputs are its producers' values (computed first where unknown), or
// the session's variables, read and written in place.
#include <map>
#include <memory>
#include <vector>

#include "weir/session.hpp"

namespace weir::internal {

struct JobGraph;

class EagerRun {
 public:
  /// For the job whose graph is `graph`, run in `session` (which must outlive this).
  EagerRun(Session& session, std::shared_ptr<JobGraph> graph);

  /// A placeholder's value for this call.
  void SetValue(const Blob& blob, Tensor value);
  /// The value of `blob`, running the ops that make it (and their inputs) where not yet run: an op's
  /// node as a one-op job, compiled, called and released; a variable's value as the session holds it
  /// now; a constant's its own. Throws the op's errors as its call would.
  Tensor Value(const Blob& blob);
  /// Runs the op making `blob` now if it is an op's output (not a placeholder, variable or constant).
  void Run(const Blob& blob);
  /// Runs every op added since that no value asked for: those that write in place (assign) and
  /// have no outputs.
  void RunWriters();
  /// One-op jobs run so far.
  int OpsRun() const { return ops_run_; }

 private:
  void RunNode(int node);
  Tensor ValueOf(int value);

  Session& session_;
  std::shared_ptr<JobGraph> graph_;
  std::map<int, Tensor> values_;
  std::vector<bool> ran_;
  int ops_run_ = 0;
};

}  // namespace weir::internal
