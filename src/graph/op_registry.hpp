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

namespace weir::internal {

/// What shape/dtype inference sees.
struct InferContext {
  std::string_view op_type;
  std::string_view op_name;
  const std::any* attrs = nullptr;
  std::span<const TensorMeta> inputs;

  template <typename Attrs> const Attrs& Get() const { return std::any_cast<const Attrs&>(*attrs); }
};

struct OpDef {
  std::string_view type;
  /// Number of inputs; -1 for variadic.
  int num_inputs = 1;
  /// Input names for error messages ("a", "b"); may be shorter than num_inputs.
  std::vector<std::string_view> input_names;
  /// Checks the inputs and attrs, returns the output metas. Throws via OpError.
  std::function<std::vector<TensorMeta>(const InferContext&)> infer;
};

void RegisterOp(OpDef def);
/// The OpDef of `type`; throws std::invalid_argument for an unknown type.
const OpDef& FindOp(std::string_view type);

/// std::invalid_argument whose message starts with "[op_type] ".
template <typename... Args>
std::invalid_argument OpError(std::string_view op_type, fmt::format_string<Args...> format, Args&&... args) {
  return std::invalid_argument(fmt::format("[{}] {}", op_type, fmt::format(format, std::forward<Args>(args)...)));
}

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
