#pragma once
// Turns a train job's Minimize(optimizer, loss) into ops: the backward pass, the division of every
// gradient by the loss's element count (OneFlow's semantics), the learning rate from the train-step
// counter, one update op per trainable variable, and the counter's increment.
#include <memory>

#include "graph/job_graph.hpp"
#include "kernels/attrs/update_attrs.hpp"

namespace weir::internal {

/// Throws std::invalid_argument naming the optimizer and the bad parameter.
void ValidateOptimizer(const Optimizer& optimizer);
/// Appends the training ops to `graph` (a train job with an optimizer, not yet built).
void LowerTraining(const std::shared_ptr<JobGraph>& graph);

}  // namespace weir::internal
