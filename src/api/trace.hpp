#pragma once
// Writes what the actors recorded while tracing (actors/trace.hpp) as a Chrome trace (the JSON
// trace event format that Perfetto and chrome://tracing open).
#include <cstdint>
#include <string>
#include <vector>

#include "actors/trace.hpp"

namespace weir::internal {

/// Writes `jobs` to `path`: a process per device ("cpu:0", "cpu:0-1" for collective actors) with a
/// track per executor (job and stream), a slice per actor firing (name; category its op type, its
/// kind, or "collective"; args: op type, call id, bytes produced), and a "calls" process with each
/// job's calls as async spans from launch to completion. Times are microseconds since `start_ns`.
/// Throws std::runtime_error naming the path if it cannot be written.
void WriteChromeTrace(const std::string& path, const std::vector<JobTrace>& jobs, std::int64_t start_ns);

}  // namespace weir::internal
