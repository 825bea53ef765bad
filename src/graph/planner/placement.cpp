#include "graph/planner/placement.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace weir::internal {

namespace {

std::vector<int> DevicesOf(const JobGraph& graph, const OpNode& node, const Topology& topology) {
  const int devices = topology.devices;  // per machine
  const int machines = topology.split_processes;
  const int processes = topology.processes;
  const Placement* placement = nullptr;
  if (node.placement >= 0) placement = &graph.placements[static_cast<std::size_t>(node.placement)];
  else if (graph.config.default_placement) placement = &*graph.config.default_placement;
  std::vector<int> ids;
  if (placement == nullptr) {
    for (int d = 0; d < devices * machines; ++d) ids.push_back(d);
    return ids;
  }
  const int named = machines > 1 ? machines : processes;
  std::vector<std::vector<int>> of_machine(static_cast<std::size_t>(named));
  for (const DeviceId& id : placement->Devices()) {
    if (id.machine >= named || id.device >= devices) {
      // A machine beyond the session's needs more processes; a device beyond them, more devices.
      const std::string remedy =
          id.machine >= named ? fmt::format("place it on machine{} or run {} processes (weir-launch --nproc_per_node "
                                            "or --nnodes, or flow.env.machine's list)",
                                            named == 1 ? " 0" : fmt::format("s 0-{}", named - 1), id.machine + 1)
                              : "set the device count with SessionOptions::cpu_devices (flow.config.cpu_device_num)";
      throw std::invalid_argument(fmt::format(
          "[placement] job '{}': op '{}' is placed on {}, but the session has {} with {} device{} {}({}:0{}); {}",
          graph.name, node.name, placement->ToString(),
          named == 1 ? std::string("one machine (0)") : fmt::format("{} machines (processes 0-{})", named, named - 1),
          devices, devices == 1 ? "" : "s", named == 1 ? "" : "each ", named == 1 ? "0" : "m",
          devices == 1 ? std::string() : fmt::format("-{}", devices - 1), remedy));
    }
    ids.push_back(id.machine * devices + id.device);
    of_machine[static_cast<std::size_t>(id.machine)].push_back(id.device);
  }
  if (machines > 1 || named == 1) return ids;
  // Mirrored across processes: each process's own devices.
  const bool machine_zero_only = std::all_of(of_machine.begin() + 1, of_machine.end(), [](const auto& d) { return d.empty(); });
  const bool same_everywhere = std::all_of(of_machine.begin(), of_machine.end(), [&](const auto& d) { return d == of_machine[0]; });
  if (!machine_zero_only && !same_everywhere) {
    throw std::invalid_argument(fmt::format(
        "[placement] job '{}': op '{}' is placed on {}, but a mirrored job runs in each of the {} processes on its own "
        "devices: name the same devices on every machine (\"0:0-1\", \"1:0-1\"), or machine 0's only",
        graph.name, node.name, placement->ToString(), processes));
  }
  return of_machine[0];
}

}  // namespace

std::vector<std::vector<int>> PlaceNodes(const JobGraph& graph, const std::vector<bool>& live, const Topology& topology) {
  std::vector<std::vector<int>> devices(graph.nodes.size());
  std::vector<bool> placed(graph.nodes.size(), false);
  auto place = [&](int node) {
    if (placed[static_cast<std::size_t>(node)]) return;
    devices[static_cast<std::size_t>(node)] = DevicesOf(graph, graph.nodes[static_cast<std::size_t>(node)], topology);
    placed[static_cast<std::size_t>(node)] = true;
  };
  for (int value : graph.placeholder_values) place(graph.values[static_cast<std::size_t>(value)].producer);
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (live[n]) place(static_cast<int>(n));
  }
  return devices;
}

}  // namespace weir::internal
