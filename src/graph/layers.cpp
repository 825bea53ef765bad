// Layers: compositions of ops that create their own variables.
#include <fmt/format.h>

#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "weir/layers.hpp"
#include "weir/ops.hpp"

namespace weir {

Blob Dense(const Blob& x, std::int64_t units, const DenseOptions& options) {
  if (!x.Defined()) throw std::invalid_argument("[dense] argument 'x' is an undefined blob");
  if (units <= 0) throw std::invalid_argument(fmt::format("[dense] 'units' must be positive, got {}", units));
  const Shape shape = x.GetShape();
  if (shape.Rank() < 2) throw std::invalid_argument(fmt::format("[dense] expects an input of rank >= 2, got {}", shape));
  const std::int64_t in = shape[-1];
  Blob input = shape.Rank() == 2 ? x : Reshape(x, {{-1, in}});
  const Blob weight = internal::AddVariable(x.Graph(), options.name + "-weight",
                                            {.shape = Shape{units, in},
                                             .dtype = x.GetDType(),
                                             .initializer = options.kernel_initializer,
                                             .regularizer = options.kernel_regularizer,
                                             .trainable = options.trainable});
  Blob out = MatMul(input, weight, {.transpose_b = true}, options.name + "-matmul");
  if (options.use_bias) {
    const Blob bias = internal::AddVariable(x.Graph(), options.name + "-bias",
                                            {.shape = Shape{units},
                                             .dtype = x.GetDType(),
                                             .initializer = options.bias_initializer,
                                             .regularizer = options.bias_regularizer,
                                             .trainable = options.trainable});
    out = BiasAdd(out, bias, {.axis = 1}, options.name + "-bias_add");
  }
  switch (options.activation) {
    case Activation::kNone: break;
    case Activation::kRelu: out = Relu(out, options.name + "-activation"); break;
    case Activation::kSigmoid: out = Sigmoid(out, options.name + "-activation"); break;
    case Activation::kTanh: out = Tanh(out, options.name + "-activation"); break;
  }
  if (shape.Rank() == 2) return out;
  std::vector<std::int64_t> dims = shape.Dims();
  dims.back() = units;
  return Reshape(out, {dims});
}

Blob Dropout(const Blob& x, const DropoutOptions& options) {
  if (!x.Defined()) throw std::invalid_argument("[dropout] argument 'x' is an undefined blob");
  if (!(options.rate >= 0.0 && options.rate < 1.0)) {
    throw std::invalid_argument(fmt::format("[dropout] 'rate' must be in [0, 1), got {}", options.rate));
  }
  // OneFlow's dropout is the identity outside training.
  if (x.Graph()->type != JobType::kTrain || options.rate == 0.0) return x;
  return internal::AddOp("dropout", {x}, options, options.name).front();
}

}  // namespace weir
