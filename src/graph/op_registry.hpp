#pragma once
// The op registry: one OpDef per op type, defined in that op's own file under graph/ops/.
#include <any>
#include <functional>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "common/tensor_meta.hpp"
#include "graph/attrs_by_name.hpp"
#include "graph/sbp.hpp"
#include "weir/job.hpp"

namespace weir::internal {

/// What shape/dtype inference sees.
struct InferContext {
  std::string_view op_type;
  std::string_view op_name;
  const std::any* attrs = nullptr;
  std::span<const TensorMeta> inputs;

  template <typename Attrs> const Attrs& Get() const { return std::any_cast<const Attrs&>(*attrs); }
};

/// What an op's gradient rule sees: the forward op's inputs and outputs (as blobs of the job
/// being built), the gradients flowing into its outputs, and which inputs need a gradient.
struct GradContext {
  std::string_view op_type;
  const std::any* attrs = nullptr;
  std::vector<Blob> inputs;
  std::vector<Blob> outputs;
  std::vector<Blob> output_grads;  // an undefined Blob where no gradient flows into an output
  std::vector<bool> needs_grad;    // per input

  template <typename Attrs> const Attrs& Get() const { return std::any_cast<const Attrs&>(*attrs); }
};

/// Builds the gradient of each input from ops of the same job; an undefined Blob for inputs that
/// need none (or have none, like integer labels).
using GradientFn = std::function<std::vector<Blob>(const GradContext&)>;

/// Inputs an op is run on by the registry-wide checks (tests/kernels/test_op_examples.cpp): its CUDA
/// kernel against its CPU kernel; its gradient against finite differences (the examples whose
/// floating inputs are f64 and few, where the op has a gradient rule); every SBP signature it
/// declares, on 2 and 3 devices. Each input is drawn at random: floats uniformly in [low, high), or
/// from {0, 1, 2} with `ties` (equal values common); integers in [0, classes) when `classes` > 0
/// (labels, indices), else in [-1000, 1000].
struct OpExample {
  std::any attrs;
  std::vector<TensorMeta> inputs;
  double low = -2.0;
  double high = 2.0;
  std::int64_t classes = 0;
  bool ties = false;
};

struct OpDef {
  std::string_view type;
  /// Number of inputs; -1 for variadic.
  int num_inputs = 1;
  /// Input names for error messages ("a", "b"); may be shorter than num_inputs.
  std::vector<std::string_view> input_names;
  /// Checks the inputs and attrs, returns the output metas. Throws via OpError.
  std::function<std::vector<TensorMeta>(const InferContext&)> infer;
  /// The gradient rule; empty for ops no gradient can flow through (argmax, cast to integers).
  GradientFn gradient;
  /// Inputs the kernel writes in place (variables an optimizer updates). The planner orders every
  /// other reader of such an input before the writer, within each call.
  std::vector<int> mutates_inputs;
  /// How the op can run on several devices in the consistent view (graph/sbp.hpp); empty: only with
  /// every input and output broadcast, once on the whole tensors.
  SbpFn sbp;
  /// Reads the op's attributes by name (graph/attrs_by_name.hpp: ReadAttrs), for generic callers such
  /// as the Python binding's add_op; empty for an op that takes none.
  AttrsReader read_attrs;
  /// Adds the op for generic callers where that takes more than its own node (batch_norm's moving
  /// update); empty: AddOp.
  std::function<std::vector<Blob>(const std::vector<Blob>& inputs, const std::any& attrs, std::string_view name)> build;
  /// The stem of the op's automatic names (`<stem>_<n>`) from its attributes, for an op type that
  /// runs many functions (unary: "relu_3", not "unary_3"); empty: the op type.
  std::function<std::string(const std::any& attrs)> name_stem;
  /// Runs on the host in every session (the data pipeline: readers, decoders, image ops), as
  /// OneFlow's CPU-only ops do: in a GPU session it runs on the CPU and its results are copied to the
  /// GPU that reads them. It has CPU kernels only.
  bool host_only = false;
  /// An op that makes new data each call (a reader, random draws; inputs, if any, the same on every
  /// device): in the mirrored view every device runs its own, as each device is fed its own
  /// placeholder piece; the kernel learns which share of the whole it is (KernelSetup::shard).
  bool per_device_source = false;
  /// The kernel's outputs are a function of its inputs alone: no state, no random draws, nothing
  /// from the call. Where every input is (through other such ops) a variable the job never writes,
  /// the runtime keeps the outputs across calls and runs the kernel again only once such a variable
  /// has changed (graph/planner/constant_results.hpp): an inference job's weight casts and layout
  /// transposes run once, not at every call.
  bool pure = false;
  /// The op's examples (OpExample), so that a new op needs no C++ test file of its own; empty for
  /// ops whose checks live in test files.
  std::function<std::vector<OpExample>()> examples;
};

void RegisterOp(OpDef def);
/// Every registered op type (for tests that walk the registry).
std::vector<std::string_view> RegisteredOpTypes();
/// The OpDef of `type`, or nullptr (constants and fused kernels have none).
const OpDef* TryFindOp(std::string_view type);
/// The OpDef of `type`; throws std::invalid_argument for an unknown type.
const OpDef& FindOp(std::string_view type);
/// Adds op `type` to the job of `inputs` with attributes by name (OpDef::read_attrs and build): the
/// generic builder behind the Python binding. Throws std::invalid_argument naming the op for an
/// unknown type or attribute.
std::vector<Blob> AddOpByName(std::string_view type, const std::vector<Blob>& inputs, const AttrMap& attrs,
                              std::string_view name);
/// AddOpByName for an op without inputs, added to `job`.
std::vector<Blob> AddSourceOpByName(const JobBuilder& job, std::string_view type, const AttrMap& attrs, std::string_view name);

/// The inputs an op of `type` with `attrs` and `input_count` inputs writes in place: its
/// OpDef::mutates_inputs that it has (optional ones may be left out), never an update's skip flag
/// (UpdateAttrs::skip_if: the last input, read only, wherever an optional slot would be).
std::vector<int> MutatedInputs(std::string_view type, const std::any& attrs, std::size_t input_count);

struct JobGraph;
/// By value id: whether some live op of `graph` writes the value in place (OpDef::mutates_inputs).
std::vector<bool> WrittenValues(const JobGraph& graph, const std::vector<bool>& live);

/// std::invalid_argument whose message starts with "[op_type] ".
template <typename... Args>
std::invalid_argument OpError(std::string_view op_type, fmt::format_string<Args...> format, Args&&... args) {
  return std::invalid_argument(fmt::format("[{}] {}", op_type, fmt::format(format, std::forward<Args>(args)...)));
}

/// The attributes of a backward op that users also build by name (conv2d_grad_data as
/// conv2d_transpose, slice_grad as pad): another op's (`inner_op`'s, read by its reader) and the
/// output's "shape".
template <typename Attrs, typename Inner>
AttrsReader ReadAttrsWithShape(std::string_view inner_op, Inner Attrs::*inner, Shape Attrs::*shape) {
  return [inner_op, inner, shape](std::string_view op_type, const AttrMap& attrs) -> std::any {
    AttrMap rest = attrs;
    Attrs read;
    const auto given = rest.find("shape");
    if (given == rest.end()) throw OpError(op_type, "needs the attribute 'shape' (the output's shape)");
    ReadAttr(op_type, "shape", given->second, read.*shape);
    rest.erase(given);
    read.*inner = std::any_cast<Inner>(FindOp(inner_op).read_attrs(op_type, rest));
    return read;
  };
}

/// Whether ops of numbers (sums, extremes, clips, sorts) take `dtype`: a float (float16 and bfloat16
/// too: a CPU runs those through the float32 kernels, kernels/cpu/widened.hpp) or i32/i64.
inline bool IsNumber(DType dtype) { return IsFloating(dtype) || dtype == DType::kI32 || dtype == DType::kI64; }

/// Resolves a possibly negative axis against `rank`, or throws OpError naming `what`.
int ResolveAxis(std::string_view op_type, std::string_view what, int axis, int rank);

/// numpy broadcasting of two shapes, or throws OpError.
Shape BroadcastShapes(std::string_view op_type, const Shape& a, const Shape& b);

struct OpRegistrar {
  explicit OpRegistrar(OpDef def) { RegisterOp(std::move(def)); }
};

}  // namespace weir::internal

#define WEIR_OP_CONCAT_INNER(a, b) a##b
#define WEIR_OP_CONCAT(a, b) WEIR_OP_CONCAT_INNER(a, b)
/// Registers an OpDef at static-initialisation time: WEIR_REGISTER_OP({.type = "relu", ...});
#define WEIR_REGISTER_OP(...) \
  static const ::weir::internal::OpRegistrar WEIR_OP_CONCAT(weir_op_registrar_, __LINE__)(::weir::internal::OpDef __VA_ARGS__)
