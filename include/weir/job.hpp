#pragma once
/// \file Defining jobs: placeholders, ops and outputs. No data flows while a job is built;
/// shapes and dtypes are inferred as each op is added.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weir/dtype.hpp"
#include "weir/shape.hpp"
#include "weir/tensor.hpp"

namespace weir {

namespace internal {
struct JobGraph;
}

/// Predict jobs only compute; train jobs also run a backward pass and an optimizer update.
enum class JobType : std::uint8_t { kPredict, kTrain };

/// Per-job settings.
struct JobConfig {
  /// The dtype of placeholders (and later variables) that do not name one.
  DType default_dtype = DType::kF32;
};

/// A value inside a job being built: the output of a placeholder or of an op.
class Blob {
 public:
  Blob() = default;
  const Shape& GetShape() const;
  DType GetDType() const;
  /// "<op name>/out" or the placeholder's name.
  const std::string& Name() const;
  bool Defined() const { return graph_ != nullptr; }

  // Implementation access; not part of the stable API.
  Blob(std::shared_ptr<internal::JobGraph> graph, int value) : graph_(std::move(graph)), value_(value) {}
  const std::shared_ptr<internal::JobGraph>& Graph() const { return graph_; }
  int ValueId() const { return value_; }

 private:
  std::shared_ptr<internal::JobGraph> graph_;
  int value_ = -1;
};

/// A placeholder as a caller sees it.
struct PlaceholderInfo {
  std::string name;
  Shape shape;
  DType dtype;
};

/// A built, immutable job. Cheap to copy; copies refer to the same job.
class Job {
 public:
  Job() = default;
  const std::string& Name() const;
  JobType Type() const;
  const JobConfig& Config() const;
  /// Inputs in call order.
  const std::vector<PlaceholderInfo>& Placeholders() const;
  /// Output names in result order.
  std::vector<std::string> OutputNames() const;
  bool Defined() const { return graph_ != nullptr; }

  explicit Job(std::shared_ptr<const internal::JobGraph> graph) : graph_(std::move(graph)) {}
  const std::shared_ptr<const internal::JobGraph>& Graph() const { return graph_; }

 private:
  std::shared_ptr<const internal::JobGraph> graph_;
};

/// Builds one job. Every op function in weir/ops.hpp appends to the builder its inputs belong to.
class JobBuilder {
 public:
  explicit JobBuilder(std::string name, JobType type = JobType::kPredict, JobConfig config = {});

  /// An input of the job, fed at every call. `dtype` defaults to the job's default dtype.
  Blob Placeholder(std::string name, Shape shape, std::optional<DType> dtype = std::nullopt);
  /// A value fixed at build time (a CPU tensor; it is copied).
  Blob Constant(const Tensor& value, std::string name = {});
  /// Marks `blob` as an output; results come back in the order outputs were added.
  void Output(std::string name, const Blob& blob);
  /// Finishes the job; the builder cannot be used afterwards.
  Job Build();

 private:
  std::shared_ptr<internal::JobGraph> graph_;
};

}  // namespace weir
