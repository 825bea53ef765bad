// Profile tables (weir/profile.hpp).
#include "weir/profile.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

namespace weir {

double JobProfile::BusySeconds() const {
  return std::accumulate(actors.begin(), actors.end(), 0.0,
                         [](double sum, const ActorProfile& actor) { return sum + actor.busy_seconds; });
}

std::string Profile::Format(std::size_t max_actors) const {
  std::string out = fmt::format("profile: {:.3f} s wall, {} job(s)\n", wall_seconds, jobs.size());
  for (const JobProfile& job : jobs) {
    const double busy = job.BusySeconds();
    double kernels = 0;
    for (const ActorProfile& actor : job.actors) {
      if (actor.kind == "kernel") kernels += actor.busy_seconds;
    }
    out += fmt::format("job '{}': {} call(s)", job.job, job.calls);
    if (job.calls > 0) {
      const double per_call = 1e3 / static_cast<double>(job.calls);
      const double latency = job.call_seconds * per_call;
      out += fmt::format(", {:.3f} ms a call from launch to completion\n", latency);
      out += fmt::format("  busy {:.3f} ms a call (kernels {:.3f}, copies {:.3f}); the rest, {:.3f} ms, is messages, "
                         "scheduling and waiting when calls run one at a time\n",
                         busy * per_call, kernels * per_call, (busy - kernels) * per_call,
                         latency - busy * per_call);
    } else {
      out += "\n";
    }
    // Busy time per device, in order of first appearance: shows whether the devices share the work.
    std::vector<std::pair<std::string, double>> devices;
    for (const ActorProfile& actor : job.actors) {
      auto it = std::find_if(devices.begin(), devices.end(), [&](const auto& d) { return d.first == actor.device; });
      if (it == devices.end()) it = devices.insert(devices.end(), {actor.device, 0.0});
      it->second += actor.busy_seconds;
    }
    if (devices.size() > 1 && job.calls > 0) {
      out += "  busy by device, ms a call:";
      for (const auto& [device, seconds] : devices) {
        out += fmt::format(" {} {:.3f}", device, seconds * 1e3 / static_cast<double>(job.calls));
      }
      out += "\n";
    }
    std::vector<const ActorProfile*> order;
    for (const ActorProfile& actor : job.actors) {
      if (actor.firings > 0) order.push_back(&actor);
    }
    std::stable_sort(order.begin(), order.end(), [](const ActorProfile* a, const ActorProfile* b) {
      return a->busy_seconds > b->busy_seconds;
    });
    out += fmt::format("  {:<40} {:<8} {:<11} {:<34} {:>8} {:>10} {:>11} {:>7}\n", "actor", "device", "kind", "op type",
                       "firings", "total ms", "a firing us", "share");
    const std::size_t shown = max_actors == 0 ? order.size() : std::min(order.size(), max_actors);
    for (std::size_t i = 0; i < shown; ++i) {
      const ActorProfile& actor = *order[i];
      out += fmt::format("  {:<40} {:<8} {:<11} {:<34} {:>8} {:>10.3f} {:>11.1f} {:>6.1f}%", actor.name, actor.device,
                         actor.kind, actor.op_type, actor.firings, actor.busy_seconds * 1e3,
                         actor.busy_seconds * 1e6 / static_cast<double>(actor.firings),
                         busy > 0 ? 100 * actor.busy_seconds / busy : 0.0);
      out += actor.kept > 0 ? fmt::format("  ({} kept earlier results)\n", actor.kept) : std::string("\n");
    }
    if (shown < order.size()) {
      double rest = 0;
      for (std::size_t i = shown; i < order.size(); ++i) rest += order[i]->busy_seconds;
      out += fmt::format("  ({} more actors: {:.3f} ms, {:.1f}%)\n", order.size() - shown, rest * 1e3,
                         busy > 0 ? 100 * rest / busy : 0.0);
    }
  }
  return out;
}

}  // namespace weir
