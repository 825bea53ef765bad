// The control plane: rendezvous, store, barriers, bounded waits, bad input, and ranks that die or go silent;
// the job token (forged and tokenless peers, an impostor master), the bounds on peers that have not
// authenticated (frame size, deadline, connection caps, memory under 40 connections announcing 256 MiB), and a
// seeded fuzz of the frame decoder. Every test runs under a watchdog that ends the process if it hangs, so a
// hang fails instead of stalling.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "distributed/control_plane.hpp"
#include "test_watchdog.hpp"

using namespace weir::internal;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using ClientPtr = std::unique_ptr<ControlPlaneClient>;
using weir::testing::Watchdog;

namespace {

ControlPlaneOptions Options(int port, int rank, int world, std::chrono::milliseconds timeout = 5000ms) {
  ControlPlaneOptions o;
  o.master_port = port;
  o.rank = rank;
  o.world_size = world;
  o.rendezvous_timeout = timeout;
  o.heartbeat_interval = 100ms;
  o.heartbeat_timeout = 1000ms;
  return o;
}

/// Connects ranks 0..world-1 concurrently (threads in this process).
std::vector<ClientPtr> ConnectAll(int port, int world) {
  std::vector<std::future<ClientPtr>> futures;
  for (int r = 0; r < world; ++r)
    futures.push_back(
        std::async(std::launch::async, [=] { return ControlPlaneClient::Connect(Options(port, r, world)); }));
  std::vector<ClientPtr> clients;
  for (auto& f : futures) clients.push_back(f.get());
  return clients;
}

template <class F>
std::string ErrorOf(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

TEST_CASE("three ranks rendezvous, share keys, count and meet at barriers") {
  Watchdog dog(30s);
  ControlPlaneServer server(Options(0, 0, 3));
  REQUIRE(server.Port() > 0);
  auto c = ConnectAll(server.Port(), 3);
  REQUIRE(c.size() == 3);
  CHECK(c[2]->Rank() == 2);
  CHECK(c[2]->WorldSize() == 3);

  // Set on one rank, Get on the others; values are byte strings.
  const std::string bytes("a\0b\xff", 4);
  c[0]->Set("nccl_id", bytes);
  CHECK(c[1]->Get("nccl_id") == bytes);
  CHECK(c[2]->Get("nccl_id", 1000ms) == bytes);
  c[1]->Set("nccl_id", "overwritten");
  CHECK(c[0]->Get("nccl_id") == "overwritten");

  // Get waits for a later Set; Wait waits for every key.
  auto late = std::async(std::launch::async, [&] { return c[2]->Get("late", 5000ms); });
  auto both = std::async(std::launch::async, [&] { c[0]->Wait({"late", "later"}, 5000ms); });
  std::this_thread::sleep_for(200ms);
  CHECK(late.wait_for(0ms) == std::future_status::timeout);
  c[1]->Set("late", "value");
  CHECK(late.get() == "value");
  CHECK(both.wait_for(100ms) == std::future_status::timeout);
  c[1]->Set("later", "");
  both.get();

  // Add from every rank at once: each result is distinct and the total is exact.
  constexpr int kAdds = 200;
  std::vector<std::future<std::vector<std::int64_t>>> adders;
  for (int r = 0; r < 3; ++r)
    adders.push_back(std::async(std::launch::async, [&, r] {
      std::vector<std::int64_t> seen;
      for (int i = 0; i < kAdds; ++i) seen.push_back(c[static_cast<std::size_t>(r)]->Add("counter", 1));
      return seen;
    }));
  std::vector<std::int64_t> all;
  for (auto& a : adders) {
    auto seen = a.get();
    all.insert(all.end(), seen.begin(), seen.end());
  }
  std::sort(all.begin(), all.end());
  for (int i = 0; i < 3 * kAdds; ++i) REQUIRE(all[static_cast<std::size_t>(i)] == i + 1);
  CHECK(c[0]->Add("counter", -600) == 0);
  CHECK(c[1]->Add("fresh", 5) == 5);
  CHECK(c[2]->Get("fresh") == "5");

  // Barrier: nobody passes before the last rank arrives; the same name works again afterwards.
  for (int round = 0; round < 3; ++round) {
    const auto start = Clock::now();
    std::vector<std::future<double>> ranks;
    for (int r = 0; r < 3; ++r)
      ranks.push_back(std::async(std::launch::async, [&, r] {
        if (r == 0) std::this_thread::sleep_for(200ms);
        c[static_cast<std::size_t>(r)]->Barrier("step", 5000ms);
        return SecondsSince(start);
      }));
    for (auto& r : ranks) CHECK(r.get() >= 0.19);
  }
  for (auto& client : c) CHECK(client->LostRanks().empty());
}

TEST_CASE("a rank that leaves cleanly is not a lost rank") {
  Watchdog dog(30s);
  ControlPlaneServer server(Options(0, 0, 2));
  auto c = ConnectAll(server.Port(), 2);
  c[1]->Set("bye", "1");
  c[1].reset();
  std::this_thread::sleep_for(1500ms);  // longer than the heartbeat timeout
  CHECK(c[0]->Get("bye") == "1");
  CHECK(c[0]->LostRanks().empty());
}

TEST_CASE("a rank that never connects: the rendezvous fails at its timeout naming the rank") {
  Watchdog dog(30s);
  ControlPlaneServer server(Options(0, 0, 2));
  const auto start = Clock::now();
  const auto error = ErrorOf([&] { ControlPlaneClient::Connect(Options(server.Port(), 0, 2, 1000ms)); });
  const double took = SecondsSince(start);
  CHECK(error == fmt::format("[control plane] waiting for 1 of 2 ranks at 127.0.0.1:{} for 1 s: rank 1 never connected",
                             server.Port()));
  CHECK(took >= 0.9);
  CHECK(took < 3.5);

  ControlPlaneServer four(Options(0, 0, 4));
  const auto error4 = ErrorOf([&] { ControlPlaneClient::Connect(Options(four.Port(), 2, 4, 500ms)); });
  CHECK(error4 == fmt::format("[control plane] waiting for 3 of 4 ranks at 127.0.0.1:{} for 0.5 s: ranks 0, 1, 3 never "
                              "connected", four.Port()));
}

TEST_CASE("no master: Connect retries until its timeout, then names the master and the cause") {
  Watchdog dog(30s);
  int port = 0;
  {
    ControlPlaneServer probe(Options(0, 0, 1));
    port = probe.Port();
  }
  const auto start = Clock::now();
  const auto error = ErrorOf([&] { ControlPlaneClient::Connect(Options(port, 1, 2, 1000ms)); });
  CHECK(error == fmt::format("[control plane] rank 1: the master 127.0.0.1:{} (rank 0) did not answer within 1 s: connection "
                             "refused", port));
  CHECK(SecondsSince(start) >= 0.9);
  CHECK(SecondsSince(start) < 3.0);

  // A master that comes up late is found by the retries.
  auto late = std::async(std::launch::async, [&] { return ControlPlaneClient::Connect(Options(port, 0, 1, 5000ms)); });
  std::this_thread::sleep_for(300ms);
  ControlPlaneServer server(Options(port, 0, 1));
  auto client = late.get();
  client->Barrier("alone");
}

TEST_CASE("waits time out naming the key or the missing ranks") {
  Watchdog dog(30s);
  ControlPlaneServer server(Options(0, 0, 2));
  auto c = ConnectAll(server.Port(), 2);
  auto start = Clock::now();
  CHECK(ErrorOf([&] { c[0]->Get("nope", 500ms); }) ==
        "[control plane] rank 0: Get(\"nope\") timed out after 0.5 s: the key was never set");
  CHECK(SecondsSince(start) >= 0.45);
  CHECK(SecondsSince(start) < 2.0);
  c[0]->Set("here", "x");
  CHECK(ErrorOf([&] { c[1]->Wait({"here", "missing"}, 300ms); }) ==
        "[control plane] rank 1: Wait timed out after 0.3 s: keys never set: \"missing\"");
  start = Clock::now();
  CHECK(ErrorOf([&] { c[1]->Barrier("half", 400ms); }) ==
        "[control plane] rank 1: Barrier(\"half\") timed out after 0.4 s: rank 0 did not arrive");
  CHECK(SecondsSince(start) < 2.0);
  // After the timeouts the ranks still work together.
  auto other = std::async(std::launch::async, [&] { c[0]->Barrier("half", 5000ms); });
  c[1]->Barrier("half", 5000ms);
  other.get();
  CHECK(c[1]->Get("here") == "x");
}

TEST_CASE("bad input is an error at once, naming both values") {
  Watchdog dog(30s);
  ControlPlaneServer server(Options(0, 0, 2));
  const int port = server.Port();

  auto start = Clock::now();
  CHECK(ErrorOf([&] { ControlPlaneClient::Connect(Options(port, 0, 3)); }) ==
        fmt::format("[control plane] world size mismatch: rank 0 has world_size=3, the master at 127.0.0.1:{} has "
                    "world_size=2", port));
  CHECK(SecondsSince(start) < 1.0);

  CHECK(ErrorOf([&] { ControlPlaneClient::Connect(Options(port, 2, 2)); }) ==
        "[control plane] invalid option rank: expected 0 <= rank < world_size=2, got 2");
  CHECK_THROWS_AS(ControlPlaneClient::Connect(Options(port, -1, 2)), std::invalid_argument);

  // Rank 0 waits for rank 1; a second rank 0 is refused at once; then rank 1 completes the rendezvous.
  auto first = std::async(std::launch::async, [&] { return ControlPlaneClient::Connect(Options(port, 0, 2)); });
  std::this_thread::sleep_for(300ms);
  start = Clock::now();
  const auto dup = ErrorOf([&] { ControlPlaneClient::Connect(Options(port, 0, 2)); });
  CHECK(Contains(dup, "[control plane] rank 0 registered twice: rank 0 already registered from 127.0.0.1:"));
  CHECK(SecondsSince(start) < 1.0);
  auto second = ControlPlaneClient::Connect(Options(port, 1, 2));
  auto rank0 = first.get();
  auto other = std::async(std::launch::async, [&] { second->Barrier("ok", 5000ms); });
  rank0->Barrier("ok", 5000ms);
  other.get();
  CHECK(rank0->LostRanks().empty());  // the refused duplicate did not count as rank 0 lost
}

TEST_CASE("a port in use and bad options are clear errors") {
  Watchdog dog(30s);
  ControlPlaneServer server(Options(0, 0, 1));
  CHECK(ErrorOf([&] { ControlPlaneServer again(Options(server.Port(), 0, 1)); }) ==
        fmt::format("[control plane] cannot listen on 127.0.0.1:{}: address already in use", server.Port()));

  auto bad = Options(0, 0, 1);
  bad.heartbeat_timeout = 100ms;
  CHECK(ErrorOf([&] { ControlPlaneServer s(bad); }) ==
        "[control plane] invalid option heartbeat_timeout: expected more than heartbeat_interval=100 ms and at most a year, got 100 ms");
  CHECK(ErrorOf([&] { ControlPlaneServer s(Options(70000, 0, 1)); }) ==
        "[control plane] invalid option master_port: expected 0 <= master_port <= 65535, got 70000");
  CHECK(ErrorOf([&] { ControlPlaneClient::Connect(Options(0, 0, 1)); }) ==
        "[control plane] invalid option master_port: expected 1 <= master_port <= 65535, got 0");
  CHECK(ErrorOf([&] { ControlPlaneServer s(Options(1, 0, 0)); }) ==
        "[control plane] invalid option world_size: expected world_size >= 1, got 0");
  auto no_time = Options(1, 0, 1);
  no_time.rendezvous_timeout = 0ms;
  CHECK(ErrorOf([&] { ControlPlaneClient::Connect(no_time); }) ==
        "[control plane] invalid option rendezvous_timeout: expected a positive duration of at most a year, got 0 ms");
}

namespace {

/// Forks a child that connects as rank 1 of 2 to the port it reads from a pipe, writes one byte once
/// connected, then either _exit()s 300 ms later or waits to be killed. The fork happens before this process
/// starts the master or the watchdog, while the test thread is its only thread.
struct Child {
  pid_t pid = -1;
  int port_pipe[2] = {-1, -1};
  int ready_pipe[2] = {-1, -1};

  explicit Child(bool wait_to_be_killed) {
    REQUIRE(pipe(port_pipe) == 0);
    REQUIRE(pipe(ready_pipe) == 0);
    pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      alarm(20);  // the child never outlives a hung test
      int port = 0;
      if (read(port_pipe[0], &port, sizeof port) != sizeof port) _exit(3);
      try {
        auto client = ControlPlaneClient::Connect(Options(port, 1, 2));
        const char byte = 1;
        if (write(ready_pipe[1], &byte, 1) != 1) _exit(4);
        if (wait_to_be_killed) {
          for (;;) pause();
        }
        std::this_thread::sleep_for(300ms);
        _exit(0);  // no destructor runs: no goodbye, the kernel closes the socket
      } catch (...) {
        _exit(2);
      }
    }
  }
  void SendPort(int port) { REQUIRE(write(port_pipe[1], &port, sizeof port) == sizeof port); }
  void WaitReady() {
    char byte = 0;
    REQUIRE(read(ready_pipe[0], &byte, 1) == 1);
  }
  int Reap() {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    return status;
  }
  ~Child() {
    for (int fd : {port_pipe[0], port_pipe[1], ready_pipe[0], ready_pipe[1]}) close(fd);
  }
};

}  // namespace

TEST_CASE("a rank process that exits fails the others' pending barrier within a bound") {
  Child child(/*wait_to_be_killed=*/false);  // first: fork while this process has one thread
  Watchdog dog(30s);
  ControlPlaneServer server(Options(0, 0, 2));
  child.SendPort(server.Port());
  auto rank0 = ControlPlaneClient::Connect(Options(server.Port(), 0, 2));
  const auto start = Clock::now();
  const auto error = ErrorOf([&] { rank0->Barrier("never", 20000ms); });
  CHECK(error == "[control plane] rank 1 lost: connection closed (rank 0 was waiting in Barrier(\"never\"))");
  CHECK(SecondsSince(start) < 5.0);
  CHECK(rank0->LostRanks() == std::vector<int>{1});
  // Every later wait fails at once instead of waiting for a rank that cannot come.
  CHECK(Contains(ErrorOf([&] { rank0->Get("absent", 20000ms); }), "rank 1 lost: connection closed"));
  const int status = child.Reap();
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("a rank process killed with SIGKILL fails the others' pending barrier within a bound") {
  Child child(/*wait_to_be_killed=*/true);  // first: fork while this process has one thread
  Watchdog dog(30s);
  ControlPlaneServer server(Options(0, 0, 2));
  child.SendPort(server.Port());
  auto rank0 = ControlPlaneClient::Connect(Options(server.Port(), 0, 2));
  child.WaitReady();
  auto killer = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(300ms);
    kill(child.pid, SIGKILL);
  });
  const auto start = Clock::now();
  const auto error = ErrorOf([&] { rank0->Barrier("never", 20000ms); });
  killer.get();
  CHECK(Contains(error, "[control plane] rank 1 lost: connection closed"));
  CHECK(SecondsSince(start) < 5.0);
  const int status = child.Reap();
  CHECK(WIFSIGNALED(status));
}

TEST_CASE("a rank whose heartbeats stop is lost: every pending wait on every other rank fails") {
  Watchdog dog(30s);
  ControlPlaneServer server(Options(0, 0, 3));  // heartbeat timeout 1 s
  auto c = ConnectAll(server.Port(), 3);
  c[2]->PauseHeartbeatsForTesting(true);
  const auto start = Clock::now();
  auto barrier = std::async(std::launch::async, [&] { return ErrorOf([&] { c[0]->Barrier("b", 20000ms); }); });
  auto get = std::async(std::launch::async, [&] { return ErrorOf([&] { c[1]->Get("never", 20000ms); }); });
  const auto barrier_error = barrier.get();
  const auto get_error = get.get();
  CHECK(barrier_error == "[control plane] rank 2 lost: no heartbeat for 1 s (rank 0 was waiting in Barrier(\"b\"))");
  CHECK(get_error == "[control plane] rank 2 lost: no heartbeat for 1 s (rank 1 was waiting in Get(\"never\"))");
  CHECK(SecondsSince(start) >= 0.9);
  CHECK(SecondsSince(start) < 4.0);
  CHECK(c[0]->LostRanks() == std::vector<int>{2});
  CHECK(c[1]->LostRanks() == std::vector<int>{2});
  // The silent rank was dropped: its own next call fails instead of waiting.
  std::this_thread::sleep_for(100ms);
  CHECK(Contains(ErrorOf([&] { c[2]->Get("x", 20000ms); }), "[control plane] rank 2: the connection to the master"));
}

TEST_CASE("the master going away fails every pending wait at once") {
  Watchdog dog(30s);
  auto server = std::make_unique<ControlPlaneServer>(Options(0, 0, 2));
  auto c = ConnectAll(server->Port(), 2);
  const int port = server->Port();
  auto get = std::async(std::launch::async, [&] { return ErrorOf([&] { c[1]->Get("never", 20000ms); }); });
  std::this_thread::sleep_for(200ms);
  const auto start = Clock::now();
  server.reset();
  CHECK(get.get() == fmt::format("[control plane] rank 1: the connection to the master 127.0.0.1:{} (rank 0) closed", port));
  CHECK(SecondsSince(start) < 2.0);
  CHECK(ErrorOf([&] { c[0]->Barrier("b", 20000ms); }) ==
        fmt::format("[control plane] rank 0: the connection to the master 127.0.0.1:{} (rank 0) closed", port));
}

// ------------------------------------------------------------------------------------ the job token and the wire

namespace {

namespace wire = weir::internal::control_plane_wire;

ControlPlaneOptions WithToken(ControlPlaneOptions o, std::string token) {
  o.job_token = std::move(token);
  return o;
}

/// This process's resident set (VmRSS of /proc/self/status), in kB.
long VmRssKb() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  REQUIRE(f != nullptr);
  char line[256];
  long kb = -1;
  while (std::fgets(line, sizeof line, f) != nullptr)
    if (std::sscanf(line, "VmRSS: %ld kB", &kb) == 1) break;
  std::fclose(f);
  REQUIRE(kb > 0);
  return kb;
}

/// Sends what this process writes to stderr (the master's log lines) to a file while in scope.
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    saved_ = dup(2);
    file_ = std::tmpfile();
    REQUIRE(saved_ >= 0);
    REQUIRE(file_ != nullptr);
    REQUIRE(dup2(fileno(file_), 2) == 2);
  }
  ~StderrCapture() { Restore(); }
  /// Stops capturing and returns what was written.
  std::string Text() {
    Restore();
    std::string text;
    std::rewind(file_);
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file_)) > 0;) text.append(buffer, n);
    return text;
  }

 private:
  void Restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    saved_ = -1;
  }
  int saved_ = -1;
  std::FILE* file_ = nullptr;
};

/// A plain TCP connection to the master, for peers that do not follow the protocol.
class RawConnection {
 public:
  /// Connects to 127.0.0.1:port, from the local address `from` when given (any 127.x.y.z works on Linux).
  explicit RawConnection(int port, const char* from = nullptr) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    if (from != nullptr) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      REQUIRE(inet_pton(AF_INET, from, &local.sin_addr) == 1);
      REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local) == 0);
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    REQUIRE(inet_pton(AF_INET, "127.0.0.1", &address.sin_addr) == 1);
    REQUIRE(connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  }
  ~RawConnection() { close(fd_); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  /// False when the master closed the connection.
  bool Send(const std::string& bytes) {
    for (std::size_t sent = 0; sent < bytes.size();) {
      const auto n = send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<std::size_t>(n);
    }
    return true;
  }

  /// The next frame; std::nullopt when the connection closed or `timeout` passed first.
  std::optional<wire::Frame> Read(std::chrono::milliseconds timeout = 5000ms) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      while (!pending_.empty()) {
        pending_.erase(0, decoder_.Feed(pending_));
        if (decoder_.HasFrame()) return decoder_.TakeFrame();
      }
      char buffer[4096];
      const auto n = Receive(buffer, sizeof buffer, deadline);
      if (n <= 0) return std::nullopt;
      pending_.append(buffer, static_cast<std::size_t>(n));
    }
  }

  /// Whether the master closed the connection within `timeout` (whatever it sent before is dropped).
  bool ClosedWithin(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    char buffer[4096];
    for (;;) {
      const auto n = Receive(buffer, sizeof buffer, deadline);
      if (n == 0) return true;
      if (n < 0) return errno != ETIMEDOUT;  // a reset is a close too
    }
  }

  /// Completes the handshake as `rank` with `token` and checks the master's proof.
  void Authenticate(const std::string& token, int rank, int world_size) {
    const auto challenge = Read();
    REQUIRE(challenge.has_value());
    REQUIRE(challenge->type == wire::Type::kChallenge);
    REQUIRE(challenge->strs.size() == 2);
    const std::string nonce = wire::RandomNonce();
    REQUIRE(Send(wire::Encode({wire::Type::kAuth, 0, {rank, world_size},
                               {nonce, wire::ClientProof(token, challenge->strs[1], nonce, rank, world_size)}})));
    const auto answer = Read();
    REQUIRE(answer.has_value());
    REQUIRE(answer->type == wire::Type::kAuthOk);
    REQUIRE(answer->strs.size() == 1);
    CHECK(answer->strs[0] == wire::MasterProof(token, challenge->strs[1], nonce, rank, world_size));
  }

 private:
  /// recv() with a deadline: bytes read, 0 at end of file, -1 with errno (ETIMEDOUT at the deadline).
  ssize_t Receive(char* buffer, std::size_t size, Clock::time_point deadline) {
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        errno = ETIMEDOUT;
        return -1;
      }
      pollfd p{fd_, POLLIN, 0};
      const int ready = poll(&p, 1, static_cast<int>(left));
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) continue;  // the deadline check above ends it
      return recv(fd_, buffer, size, 0);
    }
  }

  int fd_ = -1;
  wire::Decoder decoder_{wire::kMaxFrame};
  std::string pending_;
};

std::string LengthPrefix(std::uint32_t n) {
  return {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8), static_cast<char>(n)};
}

/// Feeds `bytes` to a decoder in pieces of `piece` bytes; the frames, or the decoder's error message.
std::vector<wire::Frame> DecodeAll(const std::string& bytes, std::uint32_t max_body, std::size_t piece,
                                   std::string* error = nullptr) {
  wire::Decoder decoder(max_body);
  std::vector<wire::Frame> frames;
  try {
    for (std::size_t pos = 0; pos < bytes.size();) {
      std::string_view chunk(bytes.data() + pos, std::min(piece, bytes.size() - pos));
      while (!chunk.empty()) {
        const auto used = decoder.Feed(chunk);
        chunk.remove_prefix(used);
        pos += used;
        if (decoder.HasFrame()) frames.push_back(decoder.TakeFrame());
      }
    }
  } catch (const ControlPlaneError& e) {
    if (error != nullptr) *error = e.what();
  }
  return frames;
}

}  // namespace

TEST_CASE("the decoder reads frames in any pieces and names what is wrong with a malformed one") {
  Watchdog dog(30s);
  const wire::Frame a{wire::Type::kSet, 7, {}, {"key", std::string("v\0x", 3)}};
  const wire::Frame b{wire::Type::kHello, 1, {1, 2, -3, 4}, {}};
  const std::string two = wire::Encode(a) + wire::Encode(b);
  for (std::size_t piece : {1, 3, 17, 4096}) CHECK(DecodeAll(two, 4096, piece) == std::vector<wire::Frame>{a, b});

  auto error_of = [](const std::string& bytes, std::uint32_t max_body = 4096) {
    std::string error = "(no error)";
    DecodeAll(bytes, max_body, bytes.size() + 1, &error);
    return error;
  };
  const std::string body = wire::Encode(a).substr(4);
  CHECK(error_of(LengthPrefix(0)) == "[control plane] malformed frame: an empty body");
  CHECK(error_of(LengthPrefix((256u << 20) - 1)) ==
        "[control plane] malformed frame: a body of 268435455 bytes announced, at most 4096 allowed");
  CHECK(error_of(LengthPrefix(4097)) == "[control plane] malformed frame: a body of 4097 bytes announced, at most 4096 allowed");
  CHECK(error_of(LengthPrefix(1) + "\x63") == "[control plane] malformed frame: unknown type 99 (a body of 1 bytes)");
  CHECK(error_of(LengthPrefix(5) + std::string("\x02\0\0\0\0", 5)) ==
        "[control plane] malformed frame: it ends inside the request id: 4 of 8 bytes (a body of 5 bytes)");
  std::string many_ints = std::string("\x07", 1) + std::string(8, '\0') + "\xff\xff" + std::string(4, '\0');
  CHECK(error_of(LengthPrefix(static_cast<std::uint32_t>(many_ints.size())) + many_ints) ==
        "[control plane] malformed frame: 65535 integers need 524280 bytes, 4 are left (a body of 15 bytes)");
  std::string long_string = std::string("\x02", 1) + std::string(8, '\0') + std::string("\0\0\0\x01\0\0\0\x09", 8) + "abc";
  CHECK(error_of(LengthPrefix(static_cast<std::uint32_t>(long_string.size())) + long_string) ==
        "[control plane] malformed frame: string 1 of 1 announces 9 bytes, 3 are left (a body of 20 bytes)");
  CHECK(error_of(LengthPrefix(static_cast<std::uint32_t>(body.size() + 2)) + body + "zz") ==
        fmt::format("[control plane] malformed frame: 2 bytes follow the last string (a body of {} bytes)", body.size() + 2));
}

TEST_CASE("fuzz: mutated frames and garbage never crash the decoder, never exceed its bounds, and fail clearly") {
  Watchdog dog(60s);
  std::mt19937_64 rng(0x5eed2026);
  auto uniform = [&](std::uint64_t low, std::uint64_t high) {
    return std::uniform_int_distribution<std::uint64_t>(low, high)(rng);
  };
  const std::vector<wire::Type> types{wire::Type::kHello, wire::Type::kSet, wire::Type::kGet, wire::Type::kWait,
                                      wire::Type::kAdd, wire::Type::kBarrier, wire::Type::kHeartbeat, wire::Type::kBye,
                                      wire::Type::kAuth, wire::Type::kOk, wire::Type::kError, wire::Type::kLost,
                                      wire::Type::kChallenge, wire::Type::kAuthOk, wire::Type::kAuthRefused};
  auto random_bytes = [&](std::size_t n) {
    std::string s(n, '\0');
    for (auto& c : s) c = static_cast<char>(uniform(0, 255));
    return s;
  };
  auto random_frame = [&] {
    wire::Frame f{types[uniform(0, types.size() - 1)], rng(), {}, {}};
    for (auto n = uniform(0, 4); n > 0; --n) f.ints.push_back(static_cast<std::int64_t>(rng()));
    for (auto n = uniform(0, 3); n > 0; --n) f.strs.push_back(random_bytes(uniform(0, uniform(0, 1) ? 40 : 600)));
    return f;
  };
  const auto start = Clock::now();
  int cases = 0;
  int clean = 0;
  int errors = 0;
  int cut_short = 0;
  int frames_decoded = 0;
  for (; cases < 20000 && (cases < 1000 || SecondsSince(start) < 3.0); ++cases) {
    const std::uint32_t limit = cases % 2 ? wire::kMaxUnauthenticatedFrame : 1u << 16;
    std::string bytes;
    std::vector<wire::Frame> originals;
    int mutations = 0;
    if (cases % 5 == 4) {  // garbage, sometimes behind a plausible length
      bytes = random_bytes(uniform(0, 700));
      if (uniform(0, 1) && bytes.size() > 4) bytes.replace(0, 4, LengthPrefix(static_cast<std::uint32_t>(bytes.size() - 4)));
      mutations = 1;
    } else {
      for (auto n = uniform(1, 3); n > 0; --n) {
        originals.push_back(random_frame());
        bytes += wire::Encode(originals.back());
      }
      mutations = static_cast<int>(uniform(0, 4));
      for (int m = 0; m < mutations && !bytes.empty(); ++m) {
        const auto at = uniform(0, bytes.size() - 1);
        switch (uniform(0, 6)) {
          case 0: bytes[at] = static_cast<char>(bytes[at] ^ (1 << uniform(0, 7))); break;
          case 1: bytes[at] = static_cast<char>(uniform(0, 255)); break;
          case 2: bytes.insert(at, random_bytes(uniform(1, 16))); break;
          case 3: bytes.erase(at, uniform(1, 16)); break;
          case 4: bytes.resize(at); break;
          case 5: {  // a length prefix or a count at an extreme value
            const std::uint32_t extremes[] = {0, 1, limit, limit + 1, 0xffffffffu, static_cast<std::uint32_t>(rng())};
            bytes.replace(at, 4, LengthPrefix(extremes[uniform(0, 5)]));
            break;
          }
          default: bytes.insert(at, bytes.substr(at, uniform(1, 64))); break;  // a repeated piece
        }
      }
    }
    wire::Decoder decoder(limit);
    std::vector<wire::Frame> frames;
    std::string error;
    try {
      std::string_view rest(bytes);
      while (!rest.empty()) {
        std::string_view chunk = rest.substr(0, uniform(1, 300));
        rest.remove_prefix(chunk.size());
        while (!chunk.empty()) {
          chunk.remove_prefix(decoder.Feed(chunk));
          REQUIRE(decoder.BufferedCapacity() <= limit);
          if (decoder.HasFrame()) frames.push_back(decoder.TakeFrame());
        }
      }
    } catch (const ControlPlaneError& e) {
      error = e.what();
    } catch (const std::exception& e) {
      FAIL("case ", cases, ": not a ControlPlaneError: ", e.what());
    }
    for (const auto& f : frames) {  // what a frame holds comes from the bytes, not from announced counts
      std::size_t payload = f.ints.size() * 8;
      for (const auto& s : f.strs) payload += s.size();
      REQUIRE(payload <= bytes.size());
    }
    frames_decoded += static_cast<int>(frames.size());
    if (!error.empty()) {
      ++errors;
      REQUIRE(Contains(error, "[control plane] malformed frame: "));
    } else if (decoder.InFrame()) {
      ++cut_short;  // not malformed yet: the master's handshake deadline or the closing connection ends it
    }
    const bool fits = std::all_of(originals.begin(), originals.end(),
                                  [&](const auto& f) { return wire::Encode(f).size() - 4 <= limit; });
    if (mutations == 0 && fits) {  // unchanged frames decode to themselves
      ++clean;
      REQUIRE(error.empty());
      REQUIRE(frames == originals);
    }
  }
  MESSAGE(cases, " cases in ", SecondsSince(start), " s: ", clean, " unchanged, ", errors, " errors, ", cut_short,
          " cut short, ", frames_decoded, " frames decoded");
  CHECK(cases >= 1000);
  CHECK(clean > 50);
  CHECK(errors > cases / 4);
}

TEST_CASE("a job token is required unless the master's address is a loopback address") {
  Watchdog dog(30s);
  for (const char* address : {"127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1", "localhost"}) {
    CAPTURE(address);
    CHECK(IsLoopbackAddress(address));
  }
  for (const char* address : {"10.1.2.3", "0.0.0.0", "::", "192.168.0.1", "::ffff:10.0.0.1"}) {
    CAPTURE(address);
    CHECK_FALSE(IsLoopbackAddress(address));
  }
  auto remote = Options(29500, 1, 2);
  remote.master_addr = "10.1.2.3";
  CHECK(ErrorOf([&] { ValidateControlPlaneOptions(remote, false); }) ==
        "[control plane] no job token, and master_addr 10.1.2.3 is not a loopback address: set WEIR_JOB_TOKEN to the "
        "same secret on every machine of the job (for example the output of `python3 -c \"import secrets; "
        "print(secrets.token_hex(32))\"`), or DistributedOptions::job_token");
  CHECK_NOTHROW(ValidateControlPlaneOptions(WithToken(remote, "secret"), false));
  auto everywhere = Options(0, 0, 2);
  everywhere.master_addr = "0.0.0.0";  // every interface: anyone on the network could join
  CHECK(Contains(ErrorOf([&] { ControlPlaneServer s(everywhere); }), "master_addr 0.0.0.0 is not a loopback address"));
  auto no_time = Options(0, 0, 1);
  no_time.handshake_timeout = 0ms;
  CHECK(ErrorOf([&] { ControlPlaneServer s(no_time); }) ==
        "[control plane] invalid option handshake_timeout: expected a positive duration of at most a year, got 0 ms");
}

TEST_CASE("a forged rank 1 is refused, and the real ranks rendezvous and meet at a barrier") {
  Watchdog dog(30s);
  StderrCapture log;
  ControlPlaneServer server(WithToken(Options(0, 0, 2), "the-real-token"));
  const int port = server.Port();
  auto rank0 = std::async(std::launch::async,
                          [&] { return ControlPlaneClient::Connect(WithToken(Options(port, 0, 2), "the-real-token")); });

  // Before the real rank 1: a peer that skips the handshake and says hello as rank 1 is closed unanswered.
  RawConnection raw(port);
  const auto challenge = raw.Read();
  REQUIRE(challenge.has_value());
  CHECK(challenge->type == wire::Type::kChallenge);
  CHECK(challenge->strs.at(0) == "weir-control-plane/1");
  CHECK(challenge->strs.at(1).size() == wire::kNonceBytes);
  REQUIRE(raw.Send(wire::Encode({wire::Type::kHello, 1, {1, 2, 5000, 5000}, {}})));
  CHECK(raw.ClosedWithin(2000ms));

  // A client with the wrong token, or none, is refused at once and does not retry.
  const std::string refused = fmt::format("[control plane] rank 1: the master 127.0.0.1:{} (rank 0) refused this rank: the job "
                                          "token did not match (WEIR_JOB_TOKEN must be the same on every rank)", port);
  auto start = Clock::now();
  CHECK(ErrorOf([&] { ControlPlaneClient::Connect(WithToken(Options(port, 1, 2), "a-guessed-token")); }) == refused);
  CHECK(ErrorOf([&] { ControlPlaneClient::Connect(Options(port, 1, 2)); }) == refused);
  CHECK(SecondsSince(start) < 2.0);

  // The real rank 1 then joins as if nothing happened.
  auto rank1 = ControlPlaneClient::Connect(WithToken(Options(port, 1, 2), "the-real-token"));
  auto c0 = rank0.get();
  auto barrier = std::async(std::launch::async, [&] { c0->Barrier("after the forgery", 5000ms); });
  rank1->Barrier("after the forgery", 5000ms);
  barrier.get();
  rank1->Set("k", "v");
  CHECK(c0->Get("k") == "v");
  CHECK(c0->LostRanks().empty());

  const std::string text = log.Text();
  CHECK(Contains(text, fmt::format("[control plane] master 127.0.0.1:{} closed the connection from 127.0.0.1:", port)));
  CHECK(Contains(text, "before it authenticated: expected an AUTH frame (type 9) with 2 integers and a 32-byte nonce, "
                       "got type 1 with 4 integers and 0 strings"));
  CHECK(Contains(text, fmt::format("[control plane] master 127.0.0.1:{} refused a connection from 127.0.0.1:", port)));
  CHECK(Contains(text, "claiming rank 1: the job token did not match"));
}

TEST_CASE("a master without the job's token is refused by its ranks, both ways") {
  Watchdog dog(30s);
  // A master with no token: a rank that has one is refused (its proof does not match).
  ControlPlaneServer open(Options(0, 0, 1));
  StderrCapture log;
  CHECK(Contains(ErrorOf([&] { ControlPlaneClient::Connect(WithToken(Options(open.Port(), 0, 1), "secret")); }),
                 "refused this rank: the job token did not match"));
  log.Text();

  // A fake master that accepts any proof but cannot make its own: the rank refuses it.
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(listener >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  REQUIRE(inet_pton(AF_INET, "127.0.0.1", &address.sin_addr) == 1);
  REQUIRE(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(listen(listener, 4) == 0);
  socklen_t length = sizeof address;
  REQUIRE(getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  const int port = ntohs(address.sin_port);
  auto impostor = std::async(std::launch::async, [&] {
    const int fd = accept(listener, nullptr, nullptr);
    if (fd < 0) return std::string("accept failed");
    const std::string challenge = wire::Encode({wire::Type::kChallenge, 0, {}, {"weir-control-plane/1", wire::RandomNonce()}});
    const std::string answer = wire::Encode({wire::Type::kAuthOk, 0, {}, {std::string(wire::kMacBytes, '\x42')}});
    std::string got;
    char buffer[512];
    bool ok = send(fd, challenge.data(), challenge.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(challenge.size());
    ok = ok && recv(fd, buffer, sizeof buffer, 0) > 0;  // the AUTH frame
    ok = ok && send(fd, answer.data(), answer.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(answer.size());
    close(fd);
    return std::string(ok ? "" : "the impostor's exchange failed");
  });
  const auto start = Clock::now();
  CHECK(ErrorOf([&] { ControlPlaneClient::Connect(WithToken(Options(port, 0, 2), "secret")); }) ==
        fmt::format("[control plane] rank 0: the master 127.0.0.1:{} (rank 0) did not prove it knows the job token: it is not "
                    "this job's master, or its WEIR_JOB_TOKEN differs", port));
  CHECK(SecondsSince(start) < 2.0);
  CHECK(impostor.get() == "");
  close(listener);
}

TEST_CASE("a handshake that never completes is closed at its deadline") {
  Watchdog dog(30s);
  StderrCapture log;
  auto options = Options(0, 0, 2);
  options.handshake_timeout = 1000ms;
  ControlPlaneServer server(options);
  const auto start = Clock::now();
  RawConnection silent(server.Port());
  RawConnection partial(server.Port());
  REQUIRE(silent.Read().has_value());  // the challenge, then nothing from us
  REQUIRE(partial.Send(LengthPrefix(100) + "only ten b"));
  CHECK(silent.ClosedWithin(5000ms));
  CHECK(partial.ClosedWithin(5000ms));
  CHECK(SecondsSince(start) >= 0.9);
  CHECK(SecondsSince(start) < 3.0);
  // The job goes on.
  auto c = ConnectAll(server.Port(), 2);
  auto other = std::async(std::launch::async, [&] { c[0]->Barrier("b", 5000ms); });
  c[1]->Barrier("b", 5000ms);
  other.get();
  CHECK(Contains(log.Text(), fmt::format("[control plane] master 127.0.0.1:{} closed a connection from 127.0.0.1:",
                                         server.Port())));
}

TEST_CASE("40 connections announcing 256 MiB frames cost the master less than 64 MB, and the job completes") {
  Watchdog dog(60s);
  StderrCapture log;  // 40 refusals, rate-limited
  ControlPlaneServer server(WithToken(Options(0, 0, 2), "token"));
  const int port = server.Port();
  const long before_kb = VmRssKb();

  // Before authentication: each says only that a body of 256 MiB - 1 follows.
  std::vector<std::unique_ptr<RawConnection>> attackers;
  for (int i = 0; i < 40; ++i) {
    attackers.push_back(std::make_unique<RawConnection>(port));
    attackers.back()->Send(LengthPrefix((256u << 20) - 1));
  }
  int closed = 0;
  for (auto& a : attackers) closed += a->ClosedWithin(5000ms) ? 1 : 0;
  CHECK(closed == 40);
  const long attack_kb = VmRssKb() - before_kb;

  // After authentication a frame is buffered as it arrives: announce 256 MiB, send 4 MiB of it.
  RawConnection authenticated(port);
  authenticated.Authenticate("token", 1, 2);
  REQUIRE(authenticated.Send(LengthPrefix(256u << 20)));
  const std::string chunk(64 << 10, 'x');
  for (int i = 0; i < 64; ++i) REQUIRE(authenticated.Send(chunk));
  std::this_thread::sleep_for(300ms);  // the master reads the 4 MiB

  // The real ranks (rank 1 again: the raw connection authenticated but never said hello).
  std::vector<std::future<ClientPtr>> futures;
  for (int r = 0; r < 2; ++r)
    futures.push_back(std::async(std::launch::async,
                                 [=] { return ControlPlaneClient::Connect(WithToken(Options(port, r, 2), "token")); }));
  std::vector<ClientPtr> c;
  for (auto& f : futures) c.push_back(f.get());
  auto other = std::async(std::launch::async, [&] { c[0]->Barrier("done", 5000ms); });
  c[1]->Barrier("done", 5000ms);
  other.get();
  const long grown_kb = VmRssKb() - before_kb;
  const std::string text = log.Text();
  MESSAGE("the master's process grew by ", attack_kb, " kB (VmRSS) under 40 connections announcing 256 MiB frames, ",
          grown_kb, " kB once an authenticated connection also sent 4 MiB of a 256 MiB frame and the ranks met");
  CHECK(attack_kb < 64 * 1024);
  CHECK(grown_kb < 64 * 1024);
  CHECK(Contains(text, "before it authenticated: malformed frame: a body of 268435455 bytes announced, at most 4096 "
                       "allowed"));
}

TEST_CASE("connections not yet authenticated are capped per remote address and in all") {
  Watchdog dog(60s);
  {  // 127.0.0.2 and friends must be usable as source addresses (Linux routes all of 127/8 to lo)
    const int probe = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in local{};
    local.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.2", &local.sin_addr);
    const bool usable = bind(probe, reinterpret_cast<sockaddr*>(&local), sizeof local) == 0;
    close(probe);
    if (!usable) {
      MESSAGE("skipped: cannot bind 127.0.0.2 here");
      return;
    }
  }
  StderrCapture log;
  auto options = Options(0, 0, 2, 20000ms);
  ControlPlaneServer server(options);
  const int port = server.Port();

  // 16 idle connections from 127.0.0.2 are challenged; the 17th from there is closed at once.
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 16; ++i) {
    held.push_back(std::make_unique<RawConnection>(port, "127.0.0.2"));
    REQUIRE(held.back()->Read().has_value());
  }
  {
    RawConnection one_more(port, "127.0.0.2");
    const auto start = Clock::now();
    CHECK_FALSE(one_more.Read(3000ms).has_value());
    CHECK(SecondsSince(start) < 1.0);
  }
  // Ranks from another address are not held up.
  {
    auto c = ConnectAll(port, 2);
    auto other = std::async(std::launch::async, [&] { c[0]->Barrier("b", 5000ms); });
    c[1]->Barrier("b", 5000ms);
    other.get();
  }

  // 256 in all: 16 more addresses of 15 or 16 each, then one more anywhere is closed at once.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur < 1024) {
    MESSAGE("the overall cap is not checked: fewer than 1024 file descriptors");
    return;
  }
  for (int a = 3; static_cast<int>(held.size()) < 256; ++a) {
    const std::string from = fmt::format("127.0.0.{}", a);
    for (int i = 0; i < 16 && held.size() < 256; ++i) {
      held.push_back(std::make_unique<RawConnection>(port, from.c_str()));
      REQUIRE(held.back()->Read().has_value());
    }
  }
  RawConnection beyond(port, "127.0.0.200");
  CHECK_FALSE(beyond.Read(3000ms).has_value());
  held.clear();
  // Once they are gone, new connections are served again.
  std::this_thread::sleep_for(200ms);
  RawConnection again(port, "127.0.0.200");
  CHECK(again.Read(3000ms).has_value());
  CHECK(Contains(log.Text(), "connections from that address and"));
}
