#pragma once
/// \file Defining jobs: placeholders, ops and outputs. No data flows while a job is built;
/// shapes and dtypes are inferred as each op is added.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weir/dtype.hpp"
#include "weir/initializers.hpp"
#include "weir/op_attrs.hpp"
#include "weir/shape.hpp"
#include "weir/tensor.hpp"

namespace weir {

namespace internal {
struct JobGraph;
}

/// Predict jobs only compute; train jobs also run a backward pass and an optimizer update.
enum class JobType : std::uint8_t { kPredict, kTrain };

/// How a job on several devices sees its blobs (OneFlow's logical views).
enum class LogicalView : std::uint8_t {
  /// One logical blob over the placement (the default): the compiler splits it over the devices by
  /// the SBP signatures ops declare, data parallel by default (inputs split along the batch,
  /// variables whole unless VariableSpec::distribute splits them), and boxes between them.
  kConsistent,
  /// One replica of every op per device (data parallelism): placeholders and outputs have one piece
  /// per device, every variable is one logical variable, and the gradients of the devices are
  /// averaged before the optimizer's update, so N devices with the batch split N ways train exactly
  /// like one device with the whole batch.
  kMirrored,
};

/// One device of a placement: machine `machine`, device `device` of the placement's kind.
struct DeviceId {
  int machine = 0;
  int device = 0;
  friend bool operator==(const DeviceId&, const DeviceId&) = default;
};

/// Where ops run (OneFlow's flow.scope.placement): a device tag and devices written as
/// "<machine>:<device>" or "<machine>:<first>-<last>", e.g. {"0:0-1"} or {"0:0", "0:3"}.
struct Placement {
  /// Parses and checks the ids; throws std::invalid_argument naming the bad argument.
  Placement(std::string device_tag, const std::vector<std::string>& machine_device_ids);

  /// "cpu" or "gpu".
  const std::string& DeviceTag() const { return device_tag_; }
  /// The devices in the order given, each once.
  const std::vector<DeviceId>& Devices() const { return devices_; }
  /// As written: cpu "0:0-1".
  std::string ToString() const;
  /// The ids as written: {"0:0-1"}.
  const std::vector<std::string>& Ids() const { return ids_; }

 private:
  std::string device_tag_;
  std::vector<std::string> ids_;
  std::vector<DeviceId> devices_;
};

/// Per-job settings.
struct JobConfig {
  /// The dtype of placeholders (and later variables) that do not name one.
  DType default_dtype = DType::kF32;
  /// Runs f32 NCHW convolutions, and the bias, activation and pooling ops that follow them, in
  /// NHWC internally (transposing at the chain's ends), where oneDNN's CPU kernels are fastest. The
  /// job's inputs, outputs, variables and results are the same either way. For a job on a GPU, turn it
  /// off: cuDNN's NCHW engines measured faster than its NHWC ones plus the transposes (docs/cuda.md);
  /// the Python front end does so for a session on a GPU.
  bool channels_last_convolutions = true;
  LogicalView view = LogicalView::kConsistent;
  /// Where ops outside any placement scope run; unset: every device of the session.
  std::optional<Placement> default_placement;
  /// Automatic mixed precision (OneFlow's enable_auto_mixed_precision): matmul, batch_matmul and
  /// conv2d run in `dtype` (kBF16 or kF16) wherever `device` has kernels for them and their
  /// gradients; the rest of the job, the variables (master weights) and their updates stay f32.
  /// Unset: every op runs in the dtype its inputs have.
  struct MixedPrecision {
    DType dtype = DType::kBF16;
    Device::Kind device = Device::Kind::kCpu;
  };
  std::optional<MixedPrecision> mixed_precision;
  /// Quantization-aware training (OneFlow's enable_qat and its qat config): the job's f32 values
  /// that an int8 backend would quantize pass through fake_quantization, with 8-bit grids that
  /// observers measure (src/graph/quantization_pass.hpp says where). Unset: none.
  struct QuantizationAwareTraining {
    /// Grids symmetric around zero; false: affine (a zero point).
    bool symmetric = true;
    /// A variable's grid per output channel (axis 0) rather than one for the whole variable.
    bool per_channel_weight_quantization = false;
    /// The activations' moving statistics: moving · momentum + the call's range · (1 − momentum).
    double moving_min_max_momentum = 0.95;
    /// The train step after which the moving statistics stay as they are; a job that has activations
    /// to quantize needs it (OneFlow's rule).
    std::optional<std::int64_t> moving_min_max_stop_update_after_iters;
    /// "" (OneFlow's google/TFLite scheme) or "cambricon" (power-of-two scales, before conv2d and
    /// matmul only).
    std::string target_backend;
  };
  std::optional<QuantizationAwareTraining> quantization_aware_training;
};

/// The dtype JobConfig::mixed_precision should use on `device`: bf16 on a CPU that runs it natively
/// (AVX512_BF16 or AMX), f16 on CUDA; nullopt where 16-bit products would be slower than f32.
std::optional<DType> MixedPrecisionDType(Device::Kind device);

/// A value inside a job being built: the output of a placeholder or of an op.
class Blob {
 public:
  Blob() = default;
  /// By value: adding ops to the job may move the job's internal tables.
  Shape GetShape() const;
  DType GetDType() const;
  /// "<op name>/out" or the placeholder's name.
  std::string Name() const;
  /// The placement of the op that made it (JobBuilder::PushPlacement), or nullopt where that op has
  /// the job's default placement.
  std::optional<Placement> GetPlacement() const;
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

/// A variable: state owned by the session, global by name (jobs naming the same variable share
/// it), kept across calls, saved in checkpoints.
struct VariableSpec {
  Shape shape;
  /// Defaults to the job's default dtype.
  std::optional<DType> dtype;
  Initializer initializer = ZerosInitializer();
  Regularizer regularizer;
  /// Trainable variables are updated by the optimizer of a train job.
  bool trainable = true;
  /// Consistent view on several devices: Split(0) gives each device a slice of the rows (model
  /// parallelism; its optimizer slots are split alike); Auto and Broadcast keep it whole. The
  /// variable stays one logical tensor for GetVariable and checkpoints.
  Distribute distribute;
};

/// Calls `handler` with `blob`'s value on every call of the job (OneFlow's flow.watch). Handlers
/// run in call order, off the actor threads: on the caller's thread before a sync call returns, on
/// the callback thread before an async call's callback.
void Watch(const Blob& blob, std::function<void(const Tensor&)> handler);
/// Calls `handler` with the gradient of the loss with respect to `blob` on every call of a train
/// job (OneFlow's flow.watch_diff).
void WatchDiff(const Blob& blob, std::function<void(const Tensor&)> handler);

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
  /// The ops JobConfig::mixed_precision runs in 16 bits (0 when it is unset, or the device has no
  /// 16-bit kernels for the job's products).
  int MixedPrecisionOps() const;
  /// The values JobConfig::quantization_aware_training fake-quantizes (0 when it is unset).
  int QuantizedValues() const;
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
  /// The variable `name` (OneFlow's get_variable). Asking twice for one name in a job returns the
  /// same blob; the spec must then match.
  Blob Variable(const std::string& name, const VariableSpec& spec);
  /// Train jobs only, once: the backward pass from `loss` and `optimizer`'s update of every
  /// trainable variable run in each call. A per-example loss trains on its mean: gradients are
  /// divided by the number of elements of the loss (OneFlow's semantics).
  void Minimize(const Optimizer& optimizer, const Blob& loss);
  /// Marks `blob` as an output; results come back in the order outputs were added.
  void Output(std::string name, const Blob& blob);
  /// Finishes the job; the builder cannot be used afterwards.
  Job Build();

  /// Ops (and variables, constants, placeholders) added until the matching PopPlacement run on
  /// `placement`; scopes nest. Their gradients and updates run where they run. Devices are checked
  /// against the session's when the job is compiled.
  void PushPlacement(const Placement& placement);
  /// Ends the innermost placement scope; throws std::logic_error if there is none.
  void PopPlacement();
  /// Ops added until the matching PopQuantizationScope are (quantize true) or are not (false) subject
  /// to quantization-aware training (OneFlow's scope.config(quantization_aware_training=...));
  /// outside any such scope they are.
  void PushQuantizationScope(bool quantize);
  void PopQuantizationScope();

  /// The graph being built (for op functions that add ops without inputs: the data readers).
  const std::shared_ptr<internal::JobGraph>& Graph() const { return graph_; }

 private:
  std::shared_ptr<internal::JobGraph> graph_;
};

/// A placement scope for C++ callers: `{ ScopedPlacement stage(builder, Placement("cpu", {"0:1"})); ... }`.
class ScopedPlacement {
 public:
  ScopedPlacement(JobBuilder& builder, const Placement& placement) : builder_(builder) {
    builder_.PushPlacement(placement);
  }
  ~ScopedPlacement() { builder_.PopPlacement(); }
  ScopedPlacement(const ScopedPlacement&) = delete;
  ScopedPlacement& operator=(const ScopedPlacement&) = delete;

 private:
  JobBuilder& builder_;
};

}  // namespace weir
