// The intra-op pool: every chunk runs exactly once, concurrent callers all finish, errors come back.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common/intra_op_pool.hpp"

using namespace weir::internal;

TEST_CASE("ParallelFor runs every chunk exactly once, loop after loop") {
  CHECK(IntraOpThreads() >= 1);
  for (int round = 0; round < 2000; ++round) {
    const int n = 1 + round % 7;
    std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
    ParallelFor(n, [&](int i) { hits[static_cast<std::size_t>(i)].fetch_add(1); });
    for (int i = 0; i < n; ++i) REQUIRE(hits[static_cast<std::size_t>(i)].load() == 1);
  }
}

TEST_CASE("ParallelFor from several threads at once: each caller's loop completes") {
  constexpr int kCallers = 4;
  std::vector<std::thread> callers;
  std::atomic<long> total{0};
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&] {
      for (int round = 0; round < 500; ++round) {
        std::atomic<int> sum{0};
        ParallelFor(5, [&](int i) { sum.fetch_add(i + 1); });
        REQUIRE(sum.load() == 15);
        total.fetch_add(sum.load());
      }
    });
  }
  for (std::thread& t : callers) t.join();
  CHECK(total.load() == 15L * 500 * kCallers);
}

TEST_CASE("an exception in a chunk comes back to the caller after every chunk ran") {
  std::atomic<int> ran{0};
  CHECK_THROWS_WITH_AS(ParallelFor(6,
                                   [&](int i) {
                                     ran.fetch_add(1);
                                     if (i == 3) throw std::runtime_error("chunk 3 failed");
                                   }),
                       "chunk 3 failed", std::runtime_error);
  CHECK(ran.load() == 6);
  std::atomic<int> after{0};
  ParallelFor(3, [&](int) { after.fetch_add(1); });  // the pool still works
  CHECK(after.load() == 3);
}

TEST_CASE("ChunkBegin covers the range without gaps or overlaps") {
  for (std::int64_t total : {0, 1, 7, 100, 784}) {
    for (int chunks : {1, 2, 3, 8}) {
      CHECK(ChunkBegin(total, chunks, 0) == 0);
      CHECK(ChunkBegin(total, chunks, chunks) == total);
      for (int i = 0; i < chunks; ++i) CHECK(ChunkBegin(total, chunks, i) <= ChunkBegin(total, chunks, i + 1));
    }
  }
}

TEST_CASE("a pool shuts down after its workers fell asleep, every time") {
  // Regression: a worker whose thread started after the pool's last wake-up (here: after two loops
  // the caller ran alone, and the shutdown) took that wake-up as already seen and slept through the
  // shutdown; join() hung, as a process that used the pool only briefly did at exit. Some rounds let
  // the workers start and fall asleep first, the other ones race their start-up.
  std::atomic<int> runs{0};
  for (int round = 0; round < 200; ++round) {
    weir::internal::RunPrivatePool(2, 2, 4, [&](int) { runs.fetch_add(1); });
    if (round % 20 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(runs.load() == 200 * 2 * 4);
}
