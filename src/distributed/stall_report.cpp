#include "distributed/stall_report.hpp"

#include <charconv>
#include <vector>

#include <fmt/format.h>

#include "distributed/control_plane.hpp"

namespace weir::internal {

namespace {
constexpr std::string_view kDeparted = "weir/departed";  // the rank that closed its session last
}  // namespace

void AnnounceDeparture(ControlPlaneClient& control_plane, const std::string& summary) {
  try {
    control_plane.Set(fmt::format("{}/{}", kDeparted, control_plane.Rank()), summary, std::chrono::seconds(1));
    control_plane.Set(std::string(kDeparted), fmt::format("{}", control_plane.Rank()), std::chrono::seconds(1));
  } catch (const std::exception&) {
    // The master is gone or stalled: the others learn of it from the control plane itself.
  }
}

std::string DescribeDeparture(ControlPlaneClient& control_plane, std::chrono::milliseconds wait) {
  try {
    const std::string rank = control_plane.Get(std::string(kDeparted), wait);
    const std::string summary = control_plane.Get(fmt::format("{}/{}", kDeparted, rank), wait);
    return fmt::format("rank {} closed its session {}", rank, summary);
  } catch (const std::exception&) {
    return "";
  }
}

std::string DescribeStall(ControlPlaneClient& control_plane, std::string_view prefix, std::uint64_t sequence,
                          std::string_view what, std::chrono::milliseconds wait) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + wait;
  auto left = [&] {
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
  };
  try {
    control_plane.Set(fmt::format("{}/stall/{}", prefix, control_plane.Rank()), fmt::format("{} {}", sequence, what),
                      left());
  } catch (const std::exception&) {
    return fmt::format("the master (rank 0) did not answer within {} ms either: rank 0 is stopped, busy outside its "
                       "collectives, or unreachable", wait.count());
  }
  std::vector<std::string> absent;
  std::vector<std::string> elsewhere;
  for (int rank = 0; rank < control_plane.WorldSize(); ++rank) {
    if (rank == control_plane.Rank()) continue;
    std::string word;
    try {
      word = control_plane.Get(fmt::format("{}/stall/{}", prefix, rank), left());
    } catch (const std::exception&) {
      absent.push_back(fmt::format("{}", rank));
      continue;
    }
    std::uint64_t theirs = 0;
    const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), theirs);
    if (error == std::errc() && theirs != sequence) {
      const std::string_view name = end < word.data() + word.size() ? std::string_view(end + 1, word.data() + word.size() - end - 1) : "";
      elsewhere.push_back(fmt::format("rank {} is in collective #{} '{}' instead", rank, theirs + 1, name));
    }
  }
  std::string report;
  if (!absent.empty()) {
    report = fmt::format("{} {} did not reach it (no word within {} ms: stopped, or busy outside its collectives)",
                         absent.size() == 1 ? "rank" : "ranks", fmt::join(absent, ", "), wait.count());
  }
  for (const std::string& line : elsewhere) report += (report.empty() ? "" : "; ") + line;
  return report.empty() ? std::string("every rank reached it, but the data did not arrive (a network partition?)") : report;
}

}  // namespace weir::internal
