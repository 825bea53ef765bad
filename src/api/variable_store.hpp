#pragma once
// The session's variables: global by name, created (and initialised) when the first job naming
// them is compiled, shared by every job of the session, kept across calls. A variable's storage is
// on the host until a job's kernels need it on a CUDA device; it then lives there, and reads copy it
// back.
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/job_graph.hpp"
#include "weir/tensor.hpp"

namespace weir::internal {

class VariableStore {
 public:
  explicit VariableStore(std::uint64_t seed) : seed_(seed) {}

  /// The variable `attrs.name`, created from its initializer if new. Throws std::invalid_argument
  /// when a variable of that name exists with another shape or dtype.
  Tensor GetOrCreate(const VariableAttrs& attrs, std::string_view job_name);
  /// The variable's storage (on whichever device it lives); an undefined tensor if there is none.
  Tensor Find(const std::string& name) const;
  /// The variable's storage on `device`, for a job to bind: moved there (copied, the old storage
  /// dropped) if it lives elsewhere and no job has bound it yet. Throws std::invalid_argument if a
  /// bound variable is asked for on another device (jobs would then update two copies).
  Tensor Resident(const std::string& name, Device device);
  /// A host copy of the variable; an undefined tensor if there is none.
  Tensor Read(const std::string& name) const;
  /// Host copies of every variable.
  std::map<std::string, Tensor> Snapshot() const;
  /// Copies `value` into the variable `name`; throws std::invalid_argument on a shape or dtype
  /// mismatch (nothing is written then).
  void Assign(const std::string& name, const Tensor& value);
  /// Re-draws `name` from its initializer.
  void Reinitialize(const std::string& name);
  /// The variable's version (nullptr if there is no such variable). It grows whenever the variable
  /// may change: Assign and Reinitialize advance it, and the session does at each call of a job that
  /// writes the variable, before the call runs. Jobs that only read the variable keep what they derive
  /// from it (its bf16 copy) while the version stays.
  std::shared_ptr<std::atomic<std::uint64_t>> Version(const std::string& name) const;

 private:
  struct Entry {
    Tensor value;
    VariableSpec spec;
    std::string defined_by;  // the job that first named it, for error messages
    bool bound = false;      // a job's registers point into `value`: it stays where it is
    std::shared_ptr<std::atomic<std::uint64_t>> version = std::make_shared<std::atomic<std::uint64_t>>(0);
  };
  std::uint64_t SeedFor(const std::string& name) const;

  std::uint64_t seed_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> variables_;
};

}  // namespace weir::internal
