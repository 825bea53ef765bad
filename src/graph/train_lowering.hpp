#pragma once
// Turns a train job's Minimize(optimizer, loss) into ops: the backward pass, the division of every
// gradient by the loss's element count (OneFlow's semantics), the learning rate from the train-step
// counter, one update op per trainable variable, and the counter's increment; with dynamic loss
// scaling, its scale and counters as variables, the skip flag every update reads, and the schedule.
#include <memory>
#include <string>
#include <string_view>

#include "graph/job_graph.hpp"
#include "kernels/attrs/update_attrs.hpp"

namespace weir::internal {

/// Throws std::invalid_argument naming the optimizer and the bad parameter.
void ValidateOptimizer(const Optimizer& optimizer);
/// Dynamic loss scaling's variables of a job (Optimizer::dynamic_loss_scale): the scale (f32), the
/// finite steps in a row and the skipped steps (i64).
std::string LossScaleVariableName(std::string_view job_name);
std::string LossScaleGoodStepsVariableName(std::string_view job_name);
std::string SkippedStepsVariableName(std::string_view job_name);
/// Appends the training ops to `graph` (a train job with an optimizer, not yet built).
void LowerTraining(const std::shared_ptr<JobGraph>& graph);

}  // namespace weir::internal
