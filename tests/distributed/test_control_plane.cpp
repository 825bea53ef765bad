// The control plane: rendezvous, store, barriers, bounded waits, bad input, and ranks that die or go silent.
// Every test runs under a watchdog that ends the process if it hangs, so a hang fails instead of stalling.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
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
  CHECK(error == fmt::format("[control plane] rank 1: the master 127.0.0.1:{} did not answer within 1 s: connection "
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
  CHECK(get.get() == fmt::format("[control plane] rank 1: the connection to the master 127.0.0.1:{} closed", port));
  CHECK(SecondsSince(start) < 2.0);
  CHECK(ErrorOf([&] { c[0]->Barrier("b", 20000ms); }) ==
        fmt::format("[control plane] rank 0: the connection to the master 127.0.0.1:{} closed", port));
}
