#include "api/trace.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

namespace weir::internal {
namespace {

// A JSON string literal: quotes, backslashes and control characters escaped.
std::string Quoted(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace

void WriteChromeTrace(const std::string& path, const std::vector<JobTrace>& jobs, std::int64_t start_ns) {
  auto micros = [start_ns](std::int64_t ns) { return static_cast<double>(ns - start_ns) * 1e-3; };
  std::vector<std::string> events;
  auto metadata = [&](std::string_view what, int pid, int tid, std::string_view name) {
    events.push_back(fmt::format(R"({{"ph":"M","name":"{}","pid":{},"tid":{},"args":{{"name":{}}}}})", what, pid, tid,
                                 Quoted(name)));
  };

  // pid 0: the calls, one track per job; then one process per device, in order of their names.
  metadata("process_name", 0, 0, "calls");
  std::map<std::string, int> device_pid;
  for (const JobTrace& job : jobs) {
    for (const TracedTask& task : job.tasks) device_pid.emplace(task.device, 0);
  }
  int next_pid = 1;
  for (auto& [device, pid] : device_pid) {
    pid = next_pid++;
    metadata("process_name", pid, 0, device);
    events.push_back(fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})",
                                 pid, pid));
  }

  std::map<std::pair<int, std::string>, int> track_tid;  // (pid, job + stream) -> tid
  std::int64_t next_flow = 0;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const JobTrace& job = jobs[j];
    // Where each actor's firing for each call ran: (task id, call id) -> (pid, tid, start).
    std::map<std::pair<int, std::int64_t>, std::tuple<int, int, std::int64_t>> fired;
    const int calls_tid = static_cast<int>(j) + 1;
    metadata("thread_name", 0, calls_tid, job.job);
    for (const TracedCall& call : job.calls) {
      for (const auto& [phase, ns] : {std::pair{'b', call.launch_ns}, std::pair{'e', call.done_ns}}) {
        events.push_back(fmt::format(R"({{"ph":"{}","cat":"call","name":{},"id":{},"pid":0,"tid":{},"ts":{:.3f},)"
                                     R"("args":{{"call":{}}}}})",
                                     phase, Quoted(job.job), call.call_id, calls_tid, micros(ns), call.call_id));
      }
    }
    for (const TracedTask& task : job.tasks) {
      const int pid = device_pid.at(task.device);
      // The track of a track name in this device's process, named when first used.
      const auto track = [&](const std::string& track_name) {
        const auto [it, added] = track_tid.try_emplace({pid, track_name}, 0);
        if (added) {
          it->second = static_cast<int>(track_tid.size());
          metadata("thread_name", pid, it->second, track_name);
        }
        return it->second;
      };
      const std::string executor_track = job.job + " " + task.stream;
      const std::string_view category = task.collective ? "collective"
                                        : task.op_type.empty()       ? std::string_view(task.kind)
                                                                     : std::string_view(task.op_type);
      const std::string args_tail = fmt::format(R"("kind":{},"op_type":{},"bytes":{})", Quoted(task.kind),
                                                Quoted(task.op_type), task.bytes);
      for (const TracedFiring& firing : task.firings) {
        // A device act: its submission and completion on the executor's track, the device's work
        // between them on the stream's own track.
        using Phase = TracedFiring::Phase;
        const int tid = track(firing.phase == Phase::kDevice ? executor_track + " (device)" : executor_track);
        const std::string name = firing.phase == Phase::kCompletion ? Quoted(task.name + " (done)") : Quoted(task.name);
        events.push_back(fmt::format(R"({{"ph":"X","cat":{},"name":{},"pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f},)"
                                     R"("args":{{"call":{},{}}}}})",
                                     Quoted(firing.phase == Phase::kDevice ? "device" : category), name, pid, tid,
                                     micros(firing.start_ns), static_cast<double>(firing.duration_ns) * 1e-3,
                                     firing.call_id, args_tail));
        if (firing.phase == Phase::kAct) {
          fired.emplace(std::pair{task.task_id, firing.call_id}, std::tuple{pid, tid, firing.start_ns});
        }
      }
    }
    // Flow arrows for the register hand-offs between tracks: from the producer's firing for a call to
    // the consumer's firing for the same call (each bound to its enclosing slice).
    for (const TracedTask& task : job.tasks) {
      for (const int producer : task.fed_from_other_streams) {
        for (const TracedFiring& firing : task.firings) {
          const auto from = fired.find({producer, firing.call_id});
          const auto to = fired.find({task.task_id, firing.call_id});
          if (from == fired.end() || to == fired.end()) continue;
          const auto& [from_pid, from_tid, from_ns] = from->second;
          const auto& [to_pid, to_tid, to_ns] = to->second;
          const std::int64_t id = next_flow++;
          events.push_back(fmt::format(R"({{"ph":"s","cat":"register","name":"hand-off","id":{},"pid":{},"tid":{},)"
                                       R"("ts":{:.3f}}})", id, from_pid, from_tid, micros(from_ns)));
          events.push_back(fmt::format(R"({{"ph":"f","bp":"e","cat":"register","name":"hand-off","id":{},"pid":{},)"
                                       R"("tid":{},"ts":{:.3f}}})", id, to_pid, to_tid, micros(to_ns)));
        }
      }
    }
  }

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    throw std::runtime_error(fmt::format("[session] StopTrace: cannot write '{}': {}", path, std::strerror(errno)));
  }
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  for (std::size_t i = 0; i < events.size(); ++i) out << events[i] << (i + 1 < events.size() ? ",\n" : "\n");
  out << "]}\n";
  out.flush();
  if (!out) throw std::runtime_error(fmt::format("[session] StopTrace: writing '{}' failed", path));
}

}  // namespace weir::internal
