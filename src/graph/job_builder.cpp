// JobBuilder, Blob and Job: the public face of the job IR.
#include <algorithm>
#include <functional>
#include <stdexcept>

#include <fmt/ranges.h>

#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/batch_norm_folding.hpp"
#include "graph/layout_pass.hpp"
#include "graph/mixed_precision_pass.hpp"
#include "graph/quantization_pass.hpp"
#include "graph/train_lowering.hpp"
#include "weir/job.hpp"
#include "weir/optimizers.hpp"

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

// A job function's parameter named like an op of its body (`def job(x: ...)` with
// `get_variable("x")` inside) is legal, as in OneFlow, where placeholder ops are named Input_<n>: the
// placeholder's op yields the name and becomes Input_<n> (its input keeps the parameter's name).
void YieldPlaceholderName(internal::JobGraph& graph, std::string_view name) {
  int index = 0;
  for (internal::OpNode& node : graph.nodes) {
    if (node.type != internal::kPlaceholderOp) continue;
    if (node.name == name) {
      std::string renamed = fmt::format("Input_{}", index);
      while (NameTaken(graph, renamed)) renamed += "_";
      node.name = std::move(renamed);
      return;
    }
    ++index;
  }
}

std::string UniqueName(internal::JobGraph& graph, std::string_view type, std::string_view requested) {
  if (!requested.empty()) {
    if (type != internal::kPlaceholderOp) YieldPlaceholderName(graph, requested);
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

// A value whose meant rows depend on the data (sync_dynamic_resize's, graph/ops/sync_dynamic_resize.cpp)
// keeps its largest shape; a job returns it cut to its size, but an op or a watch would read the rows
// past that size as if they were meant.
void CheckRowsFixed(const internal::JobGraph& graph, int value, std::string_view what, std::string_view argument) {
  const internal::ValueInfo& info = graph.values[static_cast<std::size_t>(value)];
  if (info.producer >= 0 && graph.nodes[static_cast<std::size_t>(info.producer)].type == "sync_dynamic_resize") {
    throw std::invalid_argument(fmt::format(
        "[{}] {} '{}' has a data-dependent number of rows (from argwhere or sync_dynamic_resize): a job can return "
        "it, cut to its size, but no op or watch can read it",
        what, argument, info.name));
  }
}

int AddValue(internal::JobGraph& graph, internal::TensorMeta meta, int producer, int index, std::string name) {
  graph.values.push_back({std::move(meta), producer, index, std::move(name)});
  return static_cast<int>(graph.values.size()) - 1;
}

}  // namespace

Shape Blob::GetShape() const { return Value(graph_, value_).meta.shape; }
DType Blob::GetDType() const { return Value(graph_, value_).meta.dtype; }
std::string Blob::Name() const { return Value(graph_, value_).name; }
std::optional<Placement> Blob::GetPlacement() const {
  const internal::OpNode& node = graph_->nodes[static_cast<std::size_t>(Value(graph_, value_).producer)];
  if (node.placement < 0) return std::nullopt;
  return graph_->placements[static_cast<std::size_t>(node.placement)];
}

const std::string& Job::Name() const { return graph_->name; }
JobType Job::Type() const { return graph_->type; }
const JobConfig& Job::Config() const { return graph_->config; }
int Job::MixedPrecisionOps() const { return graph_->mixed_precision_ops; }
int Job::QuantizedValues() const { return graph_->quantized_values; }
const std::vector<PlaceholderInfo>& Job::Placeholders() const { return graph_->placeholders; }
std::vector<std::string> Job::OutputNames() const {
  std::vector<std::string> names;
  for (const auto& [name, value] : graph_->outputs) {
    if (!name.starts_with(internal::kWatchOutputPrefix)) names.push_back(name);
  }
  return names;
}

void Watch(const Blob& blob, std::function<void(const Tensor&)> handler) {
  if (!blob.Defined()) throw std::invalid_argument("[watch] argument 'blob' is an undefined blob");
  if (!handler) throw std::invalid_argument("[watch] argument 'handler' is empty");
  CheckBuilding(*blob.Graph(), "watch");
  CheckRowsFixed(*blob.Graph(), blob.ValueId(), "watch", "blob");
  blob.Graph()->watches.push_back({blob.ValueId(), false, std::move(handler)});
}

void WatchDiff(const Blob& blob, std::function<void(const Tensor&)> handler) {
  if (!blob.Defined()) throw std::invalid_argument("[watch_diff] argument 'blob' is an undefined blob");
  if (!handler) throw std::invalid_argument("[watch_diff] argument 'handler' is empty");
  CheckBuilding(*blob.Graph(), "watch_diff");
  if (blob.Graph()->type != JobType::kTrain) {
    throw std::invalid_argument(fmt::format("[watch_diff] job '{}' is a predict job: only train jobs have gradients",
                                            blob.Graph()->name));
  }
  if (blob.GetDType() == DType::kTensorBuffer) {
    throw std::invalid_argument(fmt::format("[watch_diff] blob '{}' is a tensor_buffer: it has no gradient", blob.Name()));
  }
  blob.Graph()->watches.push_back({blob.ValueId(), true, std::move(handler)});
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
  if (info.dtype == DType::kTensorBuffer) {
    throw std::invalid_argument(fmt::format("[placeholder] '{}': a placeholder cannot be a tensor_buffer; the data ops "
                                            "make those (flow.data.ofrecord_reader)", name));
  }
  const int node = static_cast<int>(graph_->nodes.size());
  const int value = AddValue(*graph_, {info.shape, info.dtype}, node, 0, name);
  graph_->nodes.push_back({std::string(internal::kPlaceholderOp), node_name, {}, {value}, info,
                           internal::CurrentPlacement(*graph_)});
  graph_->placeholders.push_back(info);
  graph_->placeholder_values.push_back(value);
  return Blob(graph_, value);
}

Blob JobBuilder::Constant(const Tensor& value, std::string name) {
  return internal::AddConstant(graph_, value, name);
}

void JobBuilder::Output(std::string name, const Blob& blob) {
  CheckBuilding(*graph_, "output");
  if (blob.Graph() != graph_) {
    throw std::invalid_argument(fmt::format("[output] blob for output '{}' belongs to another job", name));
  }
  for (const auto& [existing, value] : graph_->outputs) {
    if (existing == name) throw std::invalid_argument(fmt::format("[output] output name '{}' is already used", name));
  }
  if (graph_->values[static_cast<std::size_t>(blob.ValueId())].meta.dtype == DType::kTensorBuffer) {
    throw std::invalid_argument(fmt::format(
        "[output] '{}' is a tensor_buffer (records or decoded images), which cannot leave the job: decode it into a "
        "tensor first (an OFRecord raw decoder, an image resize to a fixed size, or crop_mirror_normalize)", name));
  }
  graph_->outputs.emplace_back(std::move(name), blob.ValueId());
}

Blob JobBuilder::Variable(const std::string& name, const VariableSpec& spec) {
  CheckBuilding(*graph_, "variable");
  if (name.empty()) throw std::invalid_argument("[variable] argument 'name' must not be empty");
  return internal::AddVariable(graph_, name, spec);
}

void JobBuilder::Minimize(const Optimizer& optimizer, const Blob& loss) {
  CheckBuilding(*graph_, "minimize");
  if (graph_->type != JobType::kTrain) {
    throw std::invalid_argument(fmt::format(
        "[minimize] job '{}' is a predict job; only train jobs may have an optimizer", graph_->name));
  }
  if (graph_->optimizer) throw std::invalid_argument(fmt::format("[minimize] job '{}' already has an optimizer", graph_->name));
  if (!loss.Defined() || loss.Graph() != graph_) {
    throw std::invalid_argument(fmt::format("[minimize] argument 'loss' must be a blob of job '{}'", graph_->name));
  }
  internal::ValidateOptimizer(optimizer);
  // An integer loss has integer gradients (cast back to floating ones at the variables), which a
  // loss scale would overflow and its inverse round to zero.
  if (optimizer.dynamic_loss_scale && !IsFloating(loss.GetDType())) {
    throw std::invalid_argument(fmt::format("[minimize] dynamic loss scaling needs a floating loss, got {} loss '{}'",
                                            loss.GetDType(), loss.Name()));
  }
  graph_->optimizer = std::make_shared<const Optimizer>(optimizer);
  graph_->loss_value = loss.ValueId();
}

Job JobBuilder::Build() {
  CheckBuilding(*graph_, "build");
  // A job may do nothing but write variables in place (assign).
  const bool writes = std::any_of(graph_->nodes.begin(), graph_->nodes.end(), [](const internal::OpNode& node) {
    const internal::OpDef* def = internal::TryFindOp(node.type);
    return def != nullptr && !def->mutates_inputs.empty();
  });
  if (graph_->outputs.empty() && !graph_->optimizer && graph_->watches.empty() && !writes) {
    throw std::invalid_argument(
        fmt::format("[build] job '{}' has no outputs, watches nothing and writes no variable", graph_->name));
  }
  // First, on the job as written (NCHW convolutions, f32): the fake quantization is then trained
  // through like any op.
  graph_->quantized_values = internal::UseQuantizationAwareTraining(graph_);
  // A predict job's normalizations after convolutions become the convolutions' weights and biases,
  // before the layout and mixed-precision passes, which then treat them as any convolution's. Not
  // under CUDA mixed precision: there batch norm and relu follow float16 chains, and a folded bias
  // has no float16 kernel to keep the chain float16.
  const auto& mixed_precision = graph_->config.mixed_precision;
  const bool cuda_mixed = mixed_precision && mixed_precision->device == Device::Kind::kCuda;
  if (graph_->type == JobType::kPredict && !cuda_mixed) internal::FoldBatchNormIntoConvolutions(graph_);
  // Before autodiff, so that the backward pass follows the layout chosen here.
  if (graph_->config.channels_last_convolutions) internal::UseChannelsLastConvolutions(graph_);
  // After the layout pass, whose f32 NHWC convolutions it then runs in 16 bits.
  if (mixed_precision && mixed_precision->dtype != DType::kBF16 && mixed_precision->dtype != DType::kF16) {
    throw std::invalid_argument(fmt::format("[build] job '{}': JobConfig::mixed_precision.dtype: expected bf16 or f16, got {}",
                                            graph_->name, mixed_precision->dtype));
  }
  graph_->mixed_precision_ops = internal::UseMixedPrecision(graph_);
  if (graph_->type == JobType::kTrain) {
    if (!graph_->optimizer) {
      throw std::invalid_argument(fmt::format(
          "[build] job '{}' is a train job but has no optimizer: call Minimize(optimizer, loss)", graph_->name));
    }
    internal::LowerTraining(graph_);
  }
  for (std::size_t i = 0; i < graph_->watches.size(); ++i) {
    const internal::WatchSpec& watch = graph_->watches[i];
    if (!watch.diff) graph_->outputs.emplace_back(fmt::format("{}{}", internal::kWatchOutputPrefix, i), watch.value);
  }
  graph_->built = true;
  return Job(graph_);
}

void JobBuilder::PushPlacement(const Placement& placement) {
  CheckBuilding(*graph_, "placement");
  graph_->placements.push_back(placement);
  graph_->placement_scopes.push_back(static_cast<int>(graph_->placements.size()) - 1);
}

void JobBuilder::PopPlacement() {
  if (graph_->placement_scopes.empty()) {
    throw std::logic_error(fmt::format("[placement] job '{}': PopPlacement without an open placement scope", graph_->name));
  }
  graph_->placement_scopes.pop_back();
}

void JobBuilder::PushQuantizationScope(bool quantize) {
  CheckBuilding(*graph_, "quantization scope");
  graph_->quantization_scopes.push_back(quantize);
}

void JobBuilder::PopQuantizationScope() {
  if (graph_->quantization_scopes.empty()) {
    throw std::logic_error(fmt::format("[quantization scope] job '{}': PopQuantizationScope without an open scope",
                                       graph_->name));
  }
  graph_->quantization_scopes.pop_back();
}

namespace {

// "3" or "0-3" (after the machine id and colon) as a device range; false if malformed.
bool ParseRange(std::string_view text, int& first, int& last) {
  auto number = [](std::string_view digits, int& out) {
    if (digits.empty() || digits.size() > 6) return false;
    out = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return false;
      out = out * 10 + (c - '0');
    }
    return true;
  };
  const std::size_t dash = text.find('-');
  if (dash == std::string_view::npos) {
    if (!number(text, first)) return false;
    last = first;
    return true;
  }
  return number(text.substr(0, dash), first) && number(text.substr(dash + 1), last) && first <= last;
}

}  // namespace

Placement::Placement(std::string device_tag, const std::vector<std::string>& machine_device_ids)
    : device_tag_(std::move(device_tag)), ids_(machine_device_ids) {
  if (device_tag_ != "cpu" && device_tag_ != "gpu") {
    throw std::invalid_argument(fmt::format("[placement] argument 'device_tag' must be \"cpu\" or \"gpu\", got \"{}\"",
                                            device_tag_));
  }
  if (ids_.empty()) throw std::invalid_argument("[placement] argument 'machine_device_ids' must name at least one device");
  for (const std::string& id : ids_) {
    const std::size_t colon = id.find(':');
    int machine = 0;
    int first = 0;
    int last = 0;
    if (colon == std::string::npos || !ParseRange(std::string_view(id).substr(0, colon), machine, last) ||
        machine != last || !ParseRange(std::string_view(id).substr(colon + 1), first, last)) {
      throw std::invalid_argument(fmt::format(
          "[placement] machine_device_ids entries look like \"0:0\" or \"0:0-3\", got \"{}\"", id));
    }
    for (int device = first; device <= last; ++device) {
      const DeviceId entry{machine, device};
      if (std::find(devices_.begin(), devices_.end(), entry) != devices_.end()) {
        throw std::invalid_argument(fmt::format("[placement] device {}:{} is named twice in {}", machine, device,
                                                fmt::join(ids_, ", ")));
      }
      devices_.push_back(entry);
    }
  }
}

std::string Placement::ToString() const {
  std::vector<std::string> quoted;
  for (const std::string& id : ids_) quoted.push_back(fmt::format("\"{}\"", id));
  return fmt::format("{} {}", device_tag_, fmt::join(quoted, ", "));
}

namespace internal {

namespace {

std::vector<Blob> AddOpTo(const std::shared_ptr<JobGraph>& graph, std::string_view type, const std::vector<Blob>& inputs,
                          std::any attrs, std::string_view name) {
  const OpDef& def = FindOp(type);
  if (def.num_inputs >= 0 && static_cast<int>(inputs.size()) != def.num_inputs) {
    throw OpError(type, "expects {} inputs, got {}", def.num_inputs, inputs.size());
  }
  std::vector<TensorMeta> metas;
  std::vector<int> input_values;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string_view input_name = i < def.input_names.size() ? def.input_names[i] : "input";
    if (!inputs[i].Defined()) throw OpError(type, "input '{}' is an undefined blob", input_name);
    if (inputs[i].Graph() != graph) throw OpError(type, "input '{}' belongs to another job", input_name);
    CheckRowsFixed(*graph, inputs[i].ValueId(), type, fmt::format("input '{}'", input_name));
    metas.push_back(graph->values[static_cast<std::size_t>(inputs[i].ValueId())].meta);
    input_values.push_back(inputs[i].ValueId());
  }
  CheckBuilding(*graph, type);
  const std::string node_name = UniqueName(*graph, def.name_stem ? def.name_stem(attrs) : std::string(type), name);
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
  graph->nodes.push_back({std::string(type), node_name, std::move(input_values), std::move(outputs), std::move(attrs),
                          CurrentPlacement(*graph)});
  graph->nodes.back().quantize = graph->quantization_scopes.empty() || graph->quantization_scopes.back();
  return blobs;
}

}  // namespace

std::vector<Blob> AddOp(std::string_view type, const std::vector<Blob>& inputs, std::any attrs, std::string_view name) {
  if (inputs.empty()) throw OpError(type, "needs at least one input");
  return AddOpTo(inputs.front().Graph(), type, inputs, std::move(attrs), name);
}

std::vector<Blob> AddSourceOp(const std::shared_ptr<JobGraph>& graph, std::string_view type, std::any attrs,
                              std::string_view name) {
  // A source may take optional inputs (a reader's iteration variable); other ops need theirs.
  const OpDef& def = FindOp(type);
  if (def.num_inputs != 0 && !def.per_device_source) throw OpError(type, "has inputs: add it with its inputs");
  return AddOpTo(graph, type, {}, std::move(attrs), name);
}

std::string TrainStepVariableName(std::string_view job_name) {
  return fmt::format("System-Train-TrainStep-{}", job_name);
}

Blob AddVariable(const std::shared_ptr<JobGraph>& graph, const std::string& name, VariableSpec spec) {
  if (!spec.dtype) spec.dtype = graph->config.default_dtype;
  Validate(spec.initializer, *spec.dtype);
  for (const OpNode& node : graph->nodes) {
    if (node.type != kVariableOp) continue;
    const auto& attrs = std::any_cast<const VariableAttrs&>(node.attrs);
    if (attrs.name != name) continue;
    if (attrs.spec.shape != spec.shape || attrs.spec.dtype != spec.dtype || !(attrs.spec.initializer == spec.initializer) ||
        !(attrs.spec.regularizer == spec.regularizer) || attrs.spec.trainable != spec.trainable) {
      throw std::invalid_argument(fmt::format("[variable] '{}' is already defined in job '{}' as {}{} with another spec",
                                              name, graph->name, *attrs.spec.dtype, attrs.spec.shape));
    }
    return Blob(graph, node.outputs[0]);
  }
  const std::string node_name = UniqueName(*graph, kVariableOp, name);
  const int node = static_cast<int>(graph->nodes.size());
  const int out = AddValue(*graph, {spec.shape, *spec.dtype}, node, 0, name);
  graph->nodes.push_back({std::string(kVariableOp), node_name, {}, {out}, VariableAttrs{name, std::move(spec)},
                          CurrentPlacement(*graph)});
  return Blob(graph, out);
}

Blob AddConstant(const std::shared_ptr<JobGraph>& graph, const Tensor& value, std::string_view name) {
  CheckBuilding(*graph, "constant");
  if (!value.Defined()) throw std::invalid_argument("[constant] argument 'value' is an undefined tensor");
  if (value.GetDevice().kind != Device::Kind::kCpu) {
    throw std::invalid_argument(fmt::format("[constant] argument 'value' must be a cpu tensor, got one on {}",
                                            value.GetDevice().ToString()));
  }
  const std::string node_name = UniqueName(*graph, "constant", name);
  const int node = static_cast<int>(graph->nodes.size());
  const int out = AddValue(*graph, {value.GetShape(), value.GetDType()}, node, 0, node_name + "/out");
  graph->nodes.push_back({"constant", node_name, {}, {out}, value.Clone(), CurrentPlacement(*graph)});
  return Blob(graph, out);
}

Blob AddOp1(std::string_view type, const std::vector<Blob>& inputs, std::any attrs, std::string_view name) {
  return AddOp(type, inputs, std::move(attrs), name).front();
}

void RestoreTopologicalOrder(JobGraph& graph) {
  const std::size_t count = graph.nodes.size();
  const auto producer = [&graph](int value) { return graph.values[static_cast<std::size_t>(value)].producer; };
  std::vector<int> order;
  std::vector<char> state(count, 0);  // 0 new, 1 visiting, 2 placed
  std::function<void(int)> visit = [&](int node) {
    if (state[static_cast<std::size_t>(node)] != 0) return;
    state[static_cast<std::size_t>(node)] = 1;
    for (int input : graph.nodes[static_cast<std::size_t>(node)].inputs) visit(producer(input));
    state[static_cast<std::size_t>(node)] = 2;
    order.push_back(node);
  };
  for (std::size_t n = 0; n < count; ++n) visit(static_cast<int>(n));
  std::vector<OpNode> sorted;
  sorted.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    OpNode& node = graph.nodes[static_cast<std::size_t>(order[i])];
    for (int output : node.outputs) graph.values[static_cast<std::size_t>(output)].producer = static_cast<int>(i);
    sorted.push_back(std::move(node));
  }
  graph.nodes = std::move(sorted);
}

}  // namespace internal
}  // namespace weir
