// The control plane: a small TCP service that rank 0 hosts and every rank (rank 0 included) uses for
// rendezvous, a key-value store, barriers and heartbeats. Gloo's rendezvous store and the NCCL unique id
// are meant to travel through it, hence string keys and byte-string values.
//
// Every wait is bounded: each operation takes a timeout, and a rank whose connection drops or whose
// heartbeats stop fails every pending wait on every surviving rank with an error naming the lost rank.
// The protocol and the threading are described at the top of control_plane.cpp. No Asio type appears here.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace weir::internal {

struct ControlPlaneOptions {
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;  // 0 is allowed for the server only: any free port, see ControlPlaneServer::Port()
  int rank = 0;
  int world_size = 1;
  std::chrono::milliseconds rendezvous_timeout{300000};
  std::chrono::milliseconds heartbeat_interval{1000};
  std::chrono::milliseconds heartbeat_timeout{10000};
};

/// Throws std::invalid_argument naming the field, what it expects and what it got. `for_server` allows
/// master_port 0 (bind any free port).
void ValidateControlPlaneOptions(const ControlPlaneOptions& options, bool for_server);

/// Every failure of the control plane at run time (timeouts, lost ranks, rejected registration, unreachable
/// master). Messages start with "[control plane]".
class ControlPlaneError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Hosted by rank 0: binds master_addr:master_port and serves on an io_context thread of its own until
/// destroyed. A port in use throws ControlPlaneError at once. It uses world_size and heartbeat_timeout of
/// the options; rank is ignored.
class ControlPlaneServer {
 public:
  explicit ControlPlaneServer(const ControlPlaneOptions& options);
  ~ControlPlaneServer();
  ControlPlaneServer(const ControlPlaneServer&) = delete;
  ControlPlaneServer& operator=(const ControlPlaneServer&) = delete;

  /// The port actually bound (differs from options.master_port when that was 0).
  int Port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// One rank's connection to the master. Blocking calls with deadlines; safe to call from several threads.
class ControlPlaneClient {
 public:
  using Bytes = std::string;
  using Timeout = std::chrono::milliseconds;
  static constexpr Timeout kDefaultTimeout{-1};  // means options.rendezvous_timeout

  /// Connects (retrying until rendezvous_timeout), registers options.rank and returns once all world_size
  /// ranks registered. Throws ControlPlaneError when the master does not answer, rejects the registration
  /// (world size mismatch, rank out of range, rank registered twice) or some rank never connects.
  static std::unique_ptr<ControlPlaneClient> Connect(const ControlPlaneOptions& options);
  ~ControlPlaneClient();  // says goodbye to the master, so a clean exit is not reported as a lost rank
  ControlPlaneClient(const ControlPlaneClient&) = delete;
  ControlPlaneClient& operator=(const ControlPlaneClient&) = delete;

  void Set(const std::string& key, const Bytes& value, Timeout timeout = kDefaultTimeout);
  /// Waits until `key` exists, then returns its value.
  Bytes Get(const std::string& key, Timeout timeout = kDefaultTimeout);
  /// Waits until every key exists.
  void Wait(const std::vector<std::string>& keys, Timeout timeout = kDefaultTimeout);
  /// Atomically adds `delta` to the counter `key` (missing = 0) and returns the new value. Counters are
  /// stored as decimal text, so Get() of a counter returns e.g. "42".
  std::int64_t Add(const std::string& key, std::int64_t delta, Timeout timeout = kDefaultTimeout);
  /// Returns once every rank called Barrier(name); the same name can be reused after it completes.
  void Barrier(const std::string& name, Timeout timeout = kDefaultTimeout);

  /// Ranks the master reported lost (connection closed or heartbeats stopped), in the order lost.
  std::vector<int> LostRanks() const;
  /// Why the job is broken, for a rank waiting on its peers by other means (a data plane): the lost
  /// ranks, or the master's connection closing; empty while all is well. Cheap (one lock).
  std::string Broken() const;
  int Rank() const;
  int WorldSize() const;

  /// Test hook: stops (true) or resumes (false) the background heartbeats without closing the socket.
  void PauseHeartbeatsForTesting(bool paused);

 private:
  struct Impl;
  explicit ControlPlaneClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace weir::internal
