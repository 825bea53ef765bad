#include "api/eager.hpp"

#include <fmt/format.h>

#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"

namespace weir::internal {
namespace {

// Compiles and calls `job` once, then releases it, whether the call succeeded or not.
Outputs CallOnce(Session& session, const Job& job, std::vector<Tensor> feeds) {
  struct Release {
    Session& session;
    const Job& job;
    ~Release() { session.Release(job); }
  } release{session, job};
  return session.Call(job, std::move(feeds));
}

}  // namespace

EagerRun::EagerRun(Session& session, std::shared_ptr<JobGraph> graph) : session_(session), graph_(std::move(graph)) {}

void EagerRun::SetValue(const Blob& blob, Tensor value) { values_[blob.ValueId()] = std::move(value); }

Tensor EagerRun::Value(const Blob& blob) { return ValueOf(blob.ValueId()); }

void EagerRun::Run(const Blob& blob) {
  const OpNode& node = graph_->nodes[static_cast<std::size_t>(graph_->values[static_cast<std::size_t>(blob.ValueId())].producer)];
  if (node.type == kPlaceholderOp || node.type == kVariableOp || node.type == "constant") return;
  ValueOf(blob.ValueId());
}

void EagerRun::RunWriters() {
  for (std::size_t n = 0; n < graph_->nodes.size(); ++n) {
    const OpNode& node = graph_->nodes[n];
    const bool ran = n < ran_.size() && ran_[n];
    if (!ran && node.outputs.empty() && node.type != kPlaceholderOp && node.type != kVariableOp) RunNode(static_cast<int>(n));
  }
}

Tensor EagerRun::ValueOf(int value) {
  const auto known = values_.find(value);
  if (known != values_.end()) return known->second;
  const ValueInfo& info = graph_->values[static_cast<std::size_t>(value)];
  const OpNode& node = graph_->nodes[static_cast<std::size_t>(info.producer)];
  if (node.type == kPlaceholderOp) throw std::logic_error(fmt::format("[eager] placeholder '{}' has no value", node.name));
  if (node.type == "constant") return values_[value] = std::any_cast<const Tensor&>(node.attrs);
  if (node.type == kVariableOp) {
    // Made (and initialised) as a job that holds it would make it, and read as it is now; not kept:
    // an op of this call may write it.
    JobBuilder read(fmt::format("eager_read_{}", node.name));
    const auto& attrs = std::any_cast<const VariableAttrs&>(node.attrs);
    read.Output("value", read.Variable(attrs.name, attrs.spec));
    return CallOnce(session_, read.Build(), {})[0];
  }
  RunNode(info.producer);
  return values_.at(value);
}

void EagerRun::RunNode(int node_id) {
  const OpNode node = graph_->nodes[static_cast<std::size_t>(node_id)];  // a copy: running reads the graph
  JobBuilder job_builder(fmt::format("eager_{}", node.name), JobType::kPredict, graph_->config);
  std::vector<Blob> inputs;
  std::vector<Tensor> feeds;
  for (std::size_t i = 0; i < node.inputs.size(); ++i) {
    const int value = node.inputs[i];
    const ValueInfo& info = graph_->values[static_cast<std::size_t>(value)];
    const OpNode& producer = graph_->nodes[static_cast<std::size_t>(info.producer)];
    if (producer.type == kVariableOp) {
      // The session's variable itself, so that an op writing it in place (assign) writes it.
      const auto& attrs = std::any_cast<const VariableAttrs&>(producer.attrs);
      inputs.push_back(job_builder.Variable(attrs.name, attrs.spec));
      continue;
    }
    feeds.push_back(ValueOf(value));
    inputs.push_back(job_builder.Placeholder(fmt::format("x{}", i), info.meta.shape, info.meta.dtype));
  }
  const std::vector<Blob> outputs = inputs.empty() ? AddSourceOp(job_builder.Graph(), node.type, node.attrs, node.name)
                                                   : AddOp(node.type, inputs, node.attrs, node.name);
  for (std::size_t k = 0; k < outputs.size(); ++k) job_builder.Output(fmt::format("y{}", k), outputs[k]);
  const Outputs results = CallOnce(session_, job_builder.Build(), std::move(feeds));
  ++ops_run_;
  if (ran_.size() < graph_->nodes.size()) ran_.resize(graph_->nodes.size(), false);
  ran_[static_cast<std::size_t>(node_id)] = true;
  for (std::size_t k = 0; k < node.outputs.size() && k < results.Size(); ++k) values_[node.outputs[k]] = results[k];
}

}  // namespace weir::internal
