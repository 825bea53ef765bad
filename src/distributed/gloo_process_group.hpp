#pragma once
// Collectives between processes on Gloo's TCP transport. The peers find each other through the
// control plane: a gloo::rendezvous::Store over ControlPlaneClient carries each rank's listening
// address, under a prefix of the group's own (one group per job, so two jobs never share Gloo's
// connections or tags). No Gloo type appears here.
#include <chrono>
#include <memory>
#include <string>

#include "distributed/control_plane.hpp"
#include "kernels/collectives/process_group.hpp"

namespace weir::internal {

struct GlooGroupOptions {
  /// Keys of this group in the control plane's store ("job/<name>/gloo").
  std::string prefix;
  /// The address the other ranks reach this one at (LocalAddressTowards(master) is right on one
  /// machine and across machines alike).
  std::string address;
  /// Bounds connecting and every collective.
  std::chrono::milliseconds timeout{180000};
};

/// Connects this rank to every other one (a full mesh; every rank of the control plane must make
/// the same group). Throws ControlPlaneError when a rank does not come within the timeout. The
/// group keeps `control_plane`, whose lost ranks its errors name, and must not outlive it.
std::unique_ptr<HostProcessGroup> MakeGlooProcessGroup(ControlPlaneClient& control_plane, const GlooGroupOptions& options);

/// The local address of the interface that routes to `host`, an IPv4 address or a host name (a
/// connected UDP socket's name; nothing is sent). Throws ControlPlaneError when `host` does not resolve
/// to an IPv4 address or has no route.
std::string LocalAddressTowards(const std::string& host);

}  // namespace weir::internal
