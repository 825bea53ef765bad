#include "kernels/learning_rate_schedule.hpp"

#include "kernels/functors/learning_rate.hpp"

namespace weir::internal {

double ScheduledLearningRate(const LrSchedule& schedule, std::int64_t train_step) {
  return ScheduledLearningRate(ViewOf(schedule, schedule.boundaries.data(), schedule.values.data(), schedule.scales.data()),
                               train_step);
}

}  // namespace weir::internal
