#include "graph/quantization_pass.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "kernels/functors/fake_quantization.hpp"
#include "weir/ops.hpp"

namespace weir::internal {

namespace {

// A constant (1,)-or-`shape` tensor of `dtype` (f32, f64 or i64) filled with `value`.
Blob Filled(const std::shared_ptr<JobGraph>& graph, const Shape& shape, DType dtype, double value) {
  Tensor tensor(shape, dtype);
  if (dtype == DType::kF32) std::fill_n(tensor.Data<float>(), tensor.NumElements(), static_cast<float>(value));
  else if (dtype == DType::kF64) std::fill_n(tensor.Data<double>(), tensor.NumElements(), value);
  else std::fill_n(tensor.Data<std::int64_t>(), tensor.NumElements(), static_cast<std::int64_t>(value));
  return AddConstant(graph, tensor, {});
}

// The range an observer measures over `axes` (all when empty): (max|x|, max|x|) for the symmetric
// grids, (max, min) for affine.
std::pair<Blob, Blob> Range(const Blob& x, const QuantizationGridKind& grid, const std::vector<int>& axes) {
  if (!grid.affine || grid.cambricon) {
    const Blob top = ReduceMax(Abs(x), {.axes = axes});
    return {top, top};
  }
  return {ReduceMax(x, {.axes = axes}), ReduceMin(x, {.axes = axes})};
}

// The observers' formulas from a range's top (the largest magnitude, symmetric) and bottom.
std::pair<Blob, Blob> ScaleAndZeroPoint(const Blob& high, const Blob& low, const QuantizationGridKind& grid) {
  const std::shared_ptr<JobGraph>& graph = high.Graph();
  const Blob zeros = Filled(graph, high.GetShape(), high.GetDType(), 0.0);
  if (grid.cambricon) {
    // floor(log2(high)), corrected where the logarithm rounds across an integer (high a power of two).
    Blob exponent = Floor(ScalarMul(Log(high), 1.0 / std::numbers::ln2));
    const Blob two = Filled(graph, high.GetShape(), high.GetDType(), 2.0);
    const Blob below = Compare(Pow(two, ScalarAdd(exponent, 1.0)), high, {CompareOpKind::kLessEqual});
    const Blob above = Compare(Pow(two, exponent), high, {CompareOpKind::kGreater});
    exponent = Sub(Add(exponent, Cast(below, {high.GetDType()})), Cast(above, {high.GetDType()}));
    return {ScalarAdd(exponent, -static_cast<double>(grid.bits - 2)), zeros};
  }
  if (!grid.affine) return {ScalarMul(high, 1.0 / (std::exp2(grid.bits - 1) - 1)), zeros};
  const Blob scale = ScalarMul(Sub(high, low), 1.0 / (std::exp2(grid.bits) - 1));
  return {scale, Div(Negative(low), scale)};
}

}  // namespace

std::pair<Blob, Blob> MinMaxObserver(const Blob& x, const QuantizationGridKind& grid, bool per_layer) {
  const int rank = x.GetShape().Rank();
  if (per_layer || grid.cambricon || rank < 2) {
    const auto [top, bottom] = Range(x, grid, {});
    return ScaleAndZeroPoint(Reshape(top, {.shape = {1}}), Reshape(bottom, {.shape = {1}}), grid);
  }
  std::vector<int> axes(static_cast<std::size_t>(rank - 1));
  for (int axis = 1; axis < rank; ++axis) axes[static_cast<std::size_t>(axis - 1)] = axis;
  const auto [top, bottom] = Range(x, grid, axes);
  return ScaleAndZeroPoint(top, bottom, grid);
}

std::pair<Blob, Blob> MovingAverageObserver(const Blob& x, const QuantizationGridKind& grid, double momentum,
                                            const std::string& max_name, const std::string& min_name, bool training,
                                            std::optional<std::int64_t> stop_update_after_iters) {
  const std::shared_ptr<JobGraph>& graph = x.Graph();
  const VariableSpec spec{.shape = Shape{1}, .dtype = x.GetDType(), .trainable = false};
  Blob statistics[2] = {AddVariable(graph, max_name, spec), AddVariable(graph, min_name, spec)};
  if (training) {
    const auto [top, bottom] = Range(x, grid, {});
    const Blob ranges[2] = {Reshape(top, {.shape = {1}}), Reshape(bottom, {.shape = {1}})};
    Blob update_now;
    if (stop_update_after_iters) {
      // The train step as this call reads it: the step counter's increment comes after every reader.
      const Blob step = AddVariable(graph, TrainStepVariableName(graph->name),
                                    {.shape = Shape{1}, .dtype = DType::kI64, .trainable = false});
      update_now = Compare(step, Filled(graph, Shape{1}, DType::kI64, static_cast<double>(*stop_update_after_iters)),
                           {CompareOpKind::kLessEqual});
    }
    const Blob zero = Filled(graph, Shape{1}, x.GetDType(), 0.0);
    for (int i = 0; i < 2; ++i) {
      const Blob blended = Add(ScalarMul(statistics[i], momentum), ScalarMul(ranges[i], 1.0 - momentum));
      Blob fresh = Where(Compare(statistics[i], zero, {CompareOpKind::kEqual}), ranges[i], blended);
      if (update_now.Defined()) fresh = Where(update_now, fresh, statistics[i]);
      Assign(statistics[i], fresh);
      statistics[i] = fresh;
    }
  }
  return ScaleAndZeroPoint(statistics[0], statistics[1], grid);
}

namespace {

// One use of a value: input `input` of node `node`.
struct Use {
  int node;
  int input;
};

class QuantizationAwareTraining {
 public:
  explicit QuantizationAwareTraining(const std::shared_ptr<JobGraph>& graph)
      : graph_(graph), config_(*graph->config.quantization_aware_training) {
    if (config_.target_backend != "" && config_.target_backend != "cambricon") {
      throw std::invalid_argument(fmt::format("[quantization_aware_training] job '{}': target_backend must be \"\" or "
                                              "\"cambricon\", got \"{}\"", graph->name, config_.target_backend));
    }
    cambricon_ = config_.target_backend == "cambricon";
    grid_ = {8, !config_.symmetric, cambricon_};
  }

  int Run() {
    const std::vector<OpNode>& nodes = graph_->nodes;
    uses_.resize(graph_->values.size());
    returned_.assign(graph_->values.size(), false);
    for (const auto& output : graph_->outputs) returned_[static_cast<std::size_t>(output.second)] = true;
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      for (std::size_t i = 0; i < nodes[n].inputs.size(); ++i) {
        uses_[static_cast<std::size_t>(nodes[n].inputs[i])].push_back({static_cast<int>(n), static_cast<int>(i)});
      }
    }
    MarkWhite();
    MarkEdges();
    // Convolution biases last: their scales are those of the convolutions' inputs and weights.
    std::vector<std::pair<int, int>> biases;  // (value, its convolution)
    for (const auto& [value, uses] : marked_) {
      // Only f32 values, as OneFlow's pass (whose jobs are f32): integers and f64 stay as they are.
      if (graph_->values[static_cast<std::size_t>(value)].meta.dtype != DType::kF32) continue;
      if (const int conv = ConvolutionOfBias(uses); conv >= 0) {
        biases.emplace_back(value, conv);
        continue;
      }
      const PlacementOverride placed(*graph_, Node(Producer(value)).placement);  // where the value is made
      Quantize(value, Observe(value));
    }
    for (const auto& [value, conv] : biases) {
      const PlacementOverride placed(*graph_, Node(Producer(value)).placement);
      Quantize(value, ObserveBias(value, conv));
    }
    if (quantized_ > 0) RestoreTopologicalOrder(*graph_);
    return quantized_;
  }

 private:
  const OpNode& Node(int n) const { return graph_->nodes[static_cast<std::size_t>(n)]; }
  int Producer(int value) const { return graph_->values[static_cast<std::size_t>(value)].producer; }

  bool IsInt8(const OpNode& node) const {
    if (node.type == "conv2d" || node.type == "matmul") return true;
    if (cambricon_) return false;
    if (node.type == "add") {  // OneFlow's add_n: operands of one shape
      return graph_->values[static_cast<std::size_t>(node.inputs[0])].meta.shape ==
             graph_->values[static_cast<std::size_t>(node.inputs[1])].meta.shape;
    }
    return node.type == "batch_matmul" || node.type == "avg_pool2d" || node.type == "max_pool2d";
  }
  bool IsTransparent(const OpNode& node) const { return !cambricon_ && node.type == "reshape"; }
  static bool IsRelu(const OpNode& node) {
    return node.type == "unary" && std::any_cast<const UnaryAttrs&>(node.attrs).kind == UnaryOpKind::kRelu;
  }

  // The one op that reads node n's output, if exactly one thing does (a job output counts).
  int SoleReader(int n) const {
    const auto value = static_cast<std::size_t>(Node(n).outputs[0]);
    return uses_[value].size() == 1 && !returned_[value] ? uses_[value][0].node : -1;
  }

  // The ops an int8 backend runs, reshapes between them, and a convolution's bias_add -> batch_norm
  // -> relu chain; chain_end_ is where each convolution's result leaves its chain.
  void MarkWhite() {
    const std::vector<OpNode>& nodes = graph_->nodes;
    white_.assign(nodes.size(), false);
    chain_end_.assign(nodes.size(), -1);
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      const OpNode& node = nodes[n];
      if (IsInt8(node)) {
        white_[n] = true;
        chain_end_[n] = static_cast<int>(n);
        if (node.type != "conv2d") continue;
        int next = SoleReader(static_cast<int>(n));
        for (std::string_view step : {"bias_add", "batch_norm"}) {
          if (next < 0 || Node(next).type != step) continue;
          white_[static_cast<std::size_t>(next)] = true;
          chain_end_[n] = next;
          next = SoleReader(next);
        }
        if (next >= 0 && IsRelu(Node(next))) {
          white_[static_cast<std::size_t>(next)] = true;
          chain_end_[n] = next;
        }
      } else if (IsTransparent(node) && !node.inputs.empty() &&
                 std::all_of(node.inputs.begin(), node.inputs.end(),
                             [&](int value) { return Producer(value) >= 0 && white_[static_cast<std::size_t>(Producer(value))]; })) {
        white_[n] = true;
      }
    }
  }

  void Mark(int value, Use use) {
    std::vector<Use>& uses = marked_[value];
    const bool known = std::any_of(uses.begin(), uses.end(),
                                   [&](const Use& u) { return u.node == use.node && u.input == use.input; });
    if (!known) uses.push_back(use);
  }

  void MarkEdges() {
    const std::vector<OpNode>& nodes = graph_->nodes;
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      if (!white_[n]) continue;
      const OpNode& node = nodes[n];
      // Inputs from outside the white ops (a batch norm's inputs are left: a deployed model folds it
      // into the convolution).
      for (std::size_t i = 0; i < node.inputs.size(); ++i) {
        const int producer = Producer(node.inputs[i]);
        if ((producer >= 0 && white_[static_cast<std::size_t>(producer)]) || !node.quantize || node.type == "batch_norm") continue;
        Mark(node.inputs[i], {static_cast<int>(n), static_cast<int>(i)});
      }
      if (!IsInt8(node)) continue;
      if (cambricon_) {  // before the int8 op: every input
        if (!node.quantize) continue;
        for (std::size_t i = 0; i < node.inputs.size(); ++i) Mark(node.inputs[i], {static_cast<int>(n), static_cast<int>(i)});
        continue;
      }
      // Google: after the int8 op (or its chain), every reader of the result, a job output too.
      const OpNode& end = Node(chain_end_[n]);
      if (!end.quantize) continue;
      const int value = end.outputs[0];
      for (const Use& use : uses_[static_cast<std::size_t>(value)]) Mark(value, use);
      if (returned_[static_cast<std::size_t>(value)]) marked_[value];  // quantized for the output alone if nothing reads it
    }
  }

  // The convolution whose bias `value` is, when it is one: the marked use is the bias input of a
  // bias_add whose other input a conv2d makes.
  int ConvolutionOfBias(const std::vector<Use>& uses) const {
    for (const Use& use : uses) {
      const OpNode& node = Node(use.node);
      if (node.type != "bias_add" || use.input != 1) continue;
      const int producer = Producer(node.inputs[0]);
      if (producer >= 0 && Node(producer).type == "conv2d") return producer;
    }
    return -1;
  }

  // A name made from a value's: OneFlow's names put "-" where the value's have "/".
  std::string NameOf(int value, std::string_view suffix) const {
    std::string name = graph_->values[static_cast<std::size_t>(value)].name;
    std::replace(name.begin(), name.end(), '/', '-');
    return name + std::string(suffix);
  }

  std::pair<Blob, Blob> Observe(int value) {
    const Blob blob(graph_, value);
    const int producer = Producer(value);
    if (producer >= 0 && Node(producer).type == kVariableOp) {
      return MinMaxObserver(blob, grid_, !config_.per_channel_weight_quantization);
    }
    if (!config_.moving_min_max_stop_update_after_iters) {
      throw std::invalid_argument(fmt::format(
          "[quantization_aware_training] job '{}': moving_min_max_stop_update_after_iters is not set, and '{}' needs a "
          "moving-average observer (OneFlow: func_config.qat.moving_min_max_stop_update_after_iters(n))",
          graph_->name, blob.Name()));
    }
    const std::string observer = NameOf(value, "-fake-quant-observer");
    return MovingAverageObserver(blob, grid_, config_.moving_min_max_momentum, observer + "-fake-quant-moving-max",
                                 observer + "-fake-quant-moving-min", graph_->type == JobType::kTrain,
                                 config_.moving_min_max_stop_update_after_iters);
  }

  // The scale a value was fake-quantized with, looking through the reshapes it passed.
  Blob ScaleOf(int value) const {
    for (;;) {
      if (const auto found = scales_.find(value); found != scales_.end()) return found->second;
      const int producer = Producer(value);
      if (producer < 0 || !IsTransparent(Node(producer)) || !white_[static_cast<std::size_t>(producer)]) return {};
      value = Node(producer).inputs[0];
    }
  }

  // A convolution's bias: scale = input scale × weight scale, zero point a zeros variable, as a
  // deployed model adds it to the int32 accumulator. Without both scales, an ordinary observer.
  std::pair<Blob, Blob> ObserveBias(int value, int convolution) {
    const OpNode& conv = Node(convolution);
    const Blob input_scale = ScaleOf(conv.inputs[0]);
    const Blob weight_scale = ScaleOf(conv.inputs[1]);
    if (!input_scale.Defined() || !weight_scale.Defined()) return Observe(value);
    const VariableSpec zeros{.shape = weight_scale.GetShape(), .dtype = graph_->values[static_cast<std::size_t>(value)].meta.dtype,
                             .trainable = false};
    return {Mul(input_scale, weight_scale, NameOf(value, "-fake-quant-mul-bias")),
            AddVariable(graph_, NameOf(value, "-fake-quant-zp"), zeros)};
  }

  void Quantize(int value, const std::pair<Blob, Blob>& observed) {
    const FakeQuantizationAttrs attrs{.quantization_bit = 8,
                                      .scheme = grid_.affine ? QuantizationScheme::kAffine : QuantizationScheme::kSymmetric,
                                      .formula = cambricon_ ? QuantizationFormula::kCambricon : QuantizationFormula::kGoogle};
    const Blob quantized =
        AddOp1("fake_quantization", {Blob(graph_, value), observed.first, observed.second}, attrs, NameOf(value, "-fake-quant"));
    scales_[value] = observed.first;  // its readers now read `quantized`: either finds the scale
    scales_[quantized.ValueId()] = observed.first;
    for (const Use& use : marked_.at(value)) {
      graph_->nodes[static_cast<std::size_t>(use.node)].inputs[static_cast<std::size_t>(use.input)] = quantized.ValueId();
    }
    if (returned_[static_cast<std::size_t>(value)]) {
      for (auto& output : graph_->outputs) {
        if (output.second == value) output.second = quantized.ValueId();
      }
    }
    ++quantized_;
  }

  std::shared_ptr<JobGraph> graph_;
  JobConfig::QuantizationAwareTraining config_;
  bool cambricon_ = false;
  QuantizationGridKind grid_;
  std::vector<std::vector<Use>> uses_;  // by value
  std::vector<bool> white_;             // by node
  std::vector<int> chain_end_;          // by node: an int8 op's last op of its chain
  std::map<int, std::vector<Use>> marked_;
  std::vector<bool> returned_;          // by value: whether the job returns it
  std::map<int, Blob> scales_;
  int quantized_ = 0;
};

}  // namespace

int UseQuantizationAwareTraining(const std::shared_ptr<JobGraph>& graph) {
  if (!graph->config.quantization_aware_training) return 0;
  return QuantizationAwareTraining(graph).Run();
}

}  // namespace weir::internal
