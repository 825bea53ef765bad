#include "common/wait_interrupter.hpp"

#include <memory>
#include <mutex>

namespace weir::internal {

namespace {
std::mutex hook_mutex;
std::shared_ptr<const std::function<void()>> hook;  // replaced whole, so a poll runs the one it read
}  // namespace

void SetWaitInterrupter(std::function<void()> new_hook) {
  std::lock_guard lock(hook_mutex);
  hook = new_hook ? std::make_shared<const std::function<void()>>(std::move(new_hook)) : nullptr;
}

void PollWaitInterrupter() {
  std::shared_ptr<const std::function<void()>> current;
  {
    std::lock_guard lock(hook_mutex);
    current = hook;
  }
  if (current) (*current)();
}

}  // namespace weir::internal
