#pragma once
// Who a timed-out collective waited for. A collective that times out with no rank reported lost (a
// rank stopped, or busy in its own code, or in another collective) says which: every rank that times
// out publishes where it stands through the control plane, and each names the ranks that published
// nothing, or stand elsewhere.
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace weir::internal {

class ControlPlaneClient;

/// How long a rank whose collective timed out waits for the others' words.
inline constexpr std::chrono::milliseconds kStallReportWait{1000};
/// How long a rank whose peer left waits for that peer's notice (it was posted before the peer left).
inline constexpr std::chrono::milliseconds kDepartureNoticeWait{500};

/// Says, through the control plane, that this rank is closing its session, and what it did (`summary`, e.g.
/// "after 300000 calls of job 'train'"), so that a rank still waiting in a collective can say why no
/// answer will come. Best effort: never throws.
void AnnounceDeparture(ControlPlaneClient& control_plane, const std::string& summary);

/// "rank 0 closed its session after 300000 calls of job 'train'", when a rank announced its departure
/// (waiting at most `wait` for the notice); empty otherwise. Never throws.
std::string DescribeDeparture(ControlPlaneClient& control_plane, std::chrono::milliseconds wait);

/// Where this rank stands: the `sequence`-th collective of the group whose keys start with `prefix`,
/// named `what`. Publishes it, waits up to `wait` for the other ranks' words and returns e.g.
/// "rank 1 did not reach it (no word from it within 1 s: it is stopped, or busy outside its collectives)";
/// "rank 2 is in collective #12 'grad-bucket-0' instead". Never throws: a master that does not
/// answer is named instead.
std::string DescribeStall(ControlPlaneClient& control_plane, std::string_view prefix, std::uint64_t sequence,
                          std::string_view what, std::chrono::milliseconds wait);

}  // namespace weir::internal
