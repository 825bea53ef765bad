// JobBuilder, Blob and Job: the public face of the job IR.
#include <stdexcept>

#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "weir/job.hpp"

namespace weir {

namespace {

const internal::ValueInfo& Value(const std::shared_ptr<internal::JobGraph>& graph, int value) {
  if (!graph) throw std::invalid_argument("[Blob] use of an undefined blob");
  return graph->values.at(static_cast<std::size_t>(value));
}

void CheckBuilding(const internal::JobGraph& graph, std::string_view what) {
  if (graph.built) {
    throw std::logic_error(fmt::format("[{}] job '{}' is already built; ops cannot be added", what, graph.name));
  }
}

bool NameTaken(const internal::JobGraph& graph, std::string_view name) {
  for (const internal::OpNode& node : graph.nodes) {
    if (node.name == name) return true;
  }
  return false;
}

std::string UniqueName(internal::JobGraph& graph, std::string_view type, std::string_view requested) {
  if (!requested.empty()) {
    if (NameTaken(graph, requested)) {
      throw std::invalid_argument(fmt::format("[{}] op name '{}' is already used in job '{}'", type, requested, graph.name));
    }
    return std::string(requested);
  }
  std::string name;
  do {
    name = fmt::format("{}_{}", type, graph.next_auto_name++);
  } while (NameTaken(graph, name));
  return name;
}

int AddValue(internal::JobGraph& graph, internal::TensorMeta meta, int producer, int index, std::string name) {
  graph.values.push_back({std::move(meta), producer, index, std::move(name)});
  return static_cast<int>(graph.values.size()) - 1;
}

}  // namespace

const Shape& Blob::GetShape() const { return Value(graph_, value_).meta.shape; }
DType Blob::GetDType() const { return Value(graph_, value_).meta.dtype; }
const std::string& Blob::Name() const { return Value(graph_, value_).name; }

const std::string& Job::Name() const { return graph_->name; }
JobType Job::Type() const { return graph_->type; }
const JobConfig& Job::Config() const { return graph_->config; }
const std::vector<PlaceholderInfo>& Job::Placeholders() const { return graph_->placeholders; }
std::vector<std::string> Job::OutputNames() const {
  std::vector<std::string> names;
  for (const auto& [name, value] : graph_->outputs) names.push_back(name);
  return names;
}

JobBuilder::JobBuilder(std::string name, JobType type, JobConfig config)
    : graph_(std::make_shared<internal::JobGraph>()) {
  if (name.empty()) throw std::invalid_argument("[JobBuilder] argument 'name' must not be empty");
  graph_->name = std::move(name);
  graph_->type = type;
  graph_->config = config;
}

Blob JobBuilder::Placeholder(std::string name, Shape shape, std::optional<DType> dtype) {
  CheckBuilding(*graph_, "placeholder");
  if (name.empty()) throw std::invalid_argument("[placeholder] argument 'name' must not be empty");
  const std::string node_name = UniqueName(*graph_, internal::kPlaceholderOp, name);
  PlaceholderInfo info{name, std::move(shape), dtype.value_or(graph_->config.default_dtype)};
  const int node = static_cast<int>(graph_->nodes.size());
  const int value = AddValue(*graph_, {info.shape, info.dtype}, node, 0, name);
  graph_->nodes.push_back({std::string(internal::kPlaceholderOp), node_name, {}, {value}, info});
  graph_->placeholders.push_back(info);
  graph_->placeholder_values.push_back(value);
  return Blob(graph_, value);
}

Blob JobBuilder::Constant(const Tensor& value, std::string name) {
  CheckBuilding(*graph_, "constant");
  if (!value.Defined()) throw std::invalid_argument("[constant] argument 'value' is an undefined tensor");
  const std::string node_name = UniqueName(*graph_, "constant", name);
  const int node = static_cast<int>(graph_->nodes.size());
  const int out = AddValue(*graph_, {value.GetShape(), value.GetDType()}, node, 0, node_name + "/out");
  graph_->nodes.push_back({"constant", node_name, {}, {out}, value.Clone()});
  return Blob(graph_, out);
}

void JobBuilder::Output(std::string name, const Blob& blob) {
  CheckBuilding(*graph_, "output");
  if (blob.Graph() != graph_) {
    throw std::invalid_argument(fmt::format("[output] blob for output '{}' belongs to another job", name));
  }
  for (const auto& [existing, value] : graph_->outputs) {
    if (existing == name) throw std::invalid_argument(fmt::format("[output] output name '{}' is already used", name));
  }
  graph_->outputs.emplace_back(std::move(name), blob.ValueId());
}

Job JobBuilder::Build() {
  CheckBuilding(*graph_, "build");
  if (graph_->outputs.empty()) {
    throw std::invalid_argument(fmt::format("[build] job '{}' has no outputs", graph_->name));
  }
  graph_->built = true;
  return Job(graph_);
}

namespace internal {

std::vector<Blob> AddOp(std::string_view type, const std::vector<Blob>& inputs, std::any attrs, std::string_view name) {
  const OpDef& def = FindOp(type);
  if (def.num_inputs >= 0 && static_cast<int>(inputs.size()) != def.num_inputs) {
    throw OpError(type, "expects {} inputs, got {}", def.num_inputs, inputs.size());
  }
  if (inputs.empty()) throw OpError(type, "needs at least one input");
  std::shared_ptr<JobGraph> graph = inputs.front().Graph();
  std::vector<TensorMeta> metas;
  std::vector<int> input_values;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string_view input_name = i < def.input_names.size() ? def.input_names[i] : "input";
    if (!inputs[i].Defined()) throw OpError(type, "input '{}' is an undefined blob", input_name);
    if (inputs[i].Graph() != graph) throw OpError(type, "input '{}' belongs to another job", input_name);
    metas.push_back(graph->values[static_cast<std::size_t>(inputs[i].ValueId())].meta);
    input_values.push_back(inputs[i].ValueId());
  }
  CheckBuilding(*graph, type);
  const std::string node_name = UniqueName(*graph, type, name);
  const InferContext context{type, node_name, &attrs, metas};
  std::vector<TensorMeta> output_metas = def.infer(context);

  const int node = static_cast<int>(graph->nodes.size());
  std::vector<int> outputs;
  std::vector<Blob> blobs;
  for (std::size_t i = 0; i < output_metas.size(); ++i) {
    const std::string value_name = output_metas.size() == 1 ? node_name + "/out" : fmt::format("{}/out{}", node_name, i);
    outputs.push_back(AddValue(*graph, std::move(output_metas[i]), node, static_cast<int>(i), value_name));
    blobs.emplace_back(graph, outputs.back());
  }
  graph->nodes.push_back({std::string(type), node_name, std::move(input_values), std::move(outputs), std::move(attrs)});
  return blobs;
}

Blob AddOp1(std::string_view type, const std::vector<Blob>& inputs, std::any attrs, std::string_view name) {
  return AddOp(type, inputs, std::move(attrs), name).front();
}

}  // namespace internal
}  // namespace weir
