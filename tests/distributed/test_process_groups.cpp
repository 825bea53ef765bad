// The process groups between processes, Gloo (TCP on 127.0.0.1) and shared memory, over the control
// plane: every rank a thread of this process (neither backend can tell). All-reduce and broadcast of
// every dtype against the arithmetic, buffers larger than Gloo's segment and the shared slot (so both
// go in pieces), consecutive collectives kept apart, and a rank that never joins a collective: a bounded
// error naming the collective.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "distributed/control_plane.hpp"
#include "distributed/gloo_process_group.hpp"
#include "distributed/shm_process_group.hpp"
#include "test_watchdog.hpp"

using namespace weir::internal;
using namespace std::chrono_literals;
using weir::DType;
using weir::Shape;
using weir::testing::Watchdog;

namespace {

enum class Backend { kGloo, kShm };

/// Runs fn(rank, group) on `world` ranks at once, each with its own control-plane client and group.
/// The shared-memory group gets 4 KiB slots, so that buffers above that go in chunks.
void OnRanks(Backend backend, int world, std::chrono::milliseconds timeout,
             const std::function<void(int, HostProcessGroup&, ControlPlaneClient&)>& fn) {
  ControlPlaneOptions base;
  base.master_port = 0;
  base.world_size = world;
  base.rendezvous_timeout = 10000ms;
  ControlPlaneServer server(base);
  std::vector<std::future<void>> ranks;
  for (int rank = 0; rank < world; ++rank) {
    ranks.push_back(std::async(std::launch::async, [&, rank] {
      ControlPlaneOptions options = base;
      options.master_port = server.Port();
      options.rank = rank;
      auto client = ControlPlaneClient::Connect(options);
      auto group = backend == Backend::kGloo
                       ? MakeGlooProcessGroup(*client, {.prefix = "test", .address = "127.0.0.1", .timeout = timeout})
                       : MakeShmProcessGroup(*client, {.prefix = "test", .timeout = timeout, .slot_bytes = 4096});
      fn(rank, *group, *client);
    }));
  }
  for (auto& rank : ranks) rank.get();
}

template <typename T>
std::vector<T> AllReduced(HostProcessGroup& group, std::vector<T> values, DType dtype, ReduceOp op) {
  const TensorMeta meta{Shape{static_cast<std::int64_t>(values.size())}, dtype};
  group.AllReduce(TensorView{values.data(), &meta}, op, "test_all_reduce");
  return values;
}

}  // namespace

const char* Name(Backend backend) { return backend == Backend::kGloo ? "gloo" : "shm"; }

TEST_CASE("process groups: all-reduce sums and averages every dtype over three ranks") {
  Watchdog dog(60s);
  for (Backend backend : {Backend::kGloo, Backend::kShm}) {
    CAPTURE(Name(backend));
    OnRanks(backend, 3, 10000ms, [backend](int rank, HostProcessGroup& group, ControlPlaneClient&) {
      CHECK(group.Backend() == Name(backend));
      CHECK(group.Rank() == rank);
      CHECK(group.Size() == 3);
      // Rank r holds r + 1 + i at i: the sum is 6 + 3i, the mean 2 + i.
      std::vector<float> f(5);
      std::vector<double> d(5);
      std::vector<std::int32_t> i32(5);
      std::vector<std::int64_t> i64(5);
      for (int i = 0; i < 5; ++i) {
        f[static_cast<std::size_t>(i)] = static_cast<float>(rank + 1 + i);
        d[static_cast<std::size_t>(i)] = rank + 1 + i;
        i32[static_cast<std::size_t>(i)] = rank + 1 + i;
        i64[static_cast<std::size_t>(i)] = (std::int64_t{1} << 40) * (rank + 1) + i;
      }
      const auto fs = AllReduced(group, f, DType::kF32, ReduceOp::kSum);
      const auto fm = AllReduced(group, f, DType::kF32, ReduceOp::kMean);
      const auto dm = AllReduced(group, d, DType::kF64, ReduceOp::kMean);
      const auto is = AllReduced(group, i32, DType::kI32, ReduceOp::kSum);
      const auto ls = AllReduced(group, i64, DType::kI64, ReduceOp::kSum);
      for (int i = 0; i < 5; ++i) {
        const auto k = static_cast<std::size_t>(i);
        CHECK(fs[k] == doctest::Approx(6 + 3 * i));
        CHECK(fm[k] == doctest::Approx(2 + i));
        CHECK(dm[k] == doctest::Approx(2 + i));
        CHECK(is[k] == 6 + 3 * i);
        CHECK(ls[k] == (std::int64_t{6} << 40) + 3 * i);
      }
    });
  }
}

TEST_CASE("process groups: buffers of several segments, empty buffers and broadcasts") {
  Watchdog dog(60s);
  for (Backend backend : {Backend::kGloo, Backend::kShm}) {
    CAPTURE(Name(backend));
    OnRanks(backend, 2, 10000ms, [](int rank, HostProcessGroup& group, ControlPlaneClient&) {
      // 3 MB: several of Gloo's 1 MB segments, so the ring pipelines them.
      std::vector<float> big(3 << 18);
      for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>((i % 1000) * (rank + 1));
      const auto sum = AllReduced(group, big, DType::kF32, ReduceOp::kSum);
      bool all = true;
      for (std::size_t i = 0; i < sum.size(); ++i) all = all && sum[i] == static_cast<float>((i % 1000) * 3);
      CHECK(all);
      CHECK(AllReduced(group, std::vector<float>{}, DType::kF32, ReduceOp::kSum).empty());

      std::vector<std::int64_t> values{rank * 10 + 1, rank * 10 + 2, rank * 10 + 3};
      const TensorMeta meta{Shape{3}, DType::kI64};
      group.Broadcast(TensorView{values.data(), &meta}, 1, "test_broadcast");
      CHECK(values == std::vector<std::int64_t>{11, 12, 13});
      // A broadcast of several slots' worth.
      std::vector<double> doubles(3000, rank == 0 ? 2.5 : 0.0);
      const TensorMeta double_meta{Shape{3000}, DType::kF64};
      group.Broadcast(TensorView{doubles.data(), &double_meta}, 0, "test_broadcast");
      CHECK(std::all_of(doubles.begin(), doubles.end(), [](double v) { return v == 2.5; }));
      CHECK_THROWS_WITH_AS(group.Broadcast(TensorView{values.data(), &meta}, 2, "test_broadcast"),
                           doctest::Contains("root must be in [0, 2), got 2"), std::invalid_argument);
      std::vector<std::uint8_t> bytes{1, 2};
      const TensorMeta byte_meta{Shape{2}, DType::kU8};
      CHECK_THROWS_WITH_AS(group.AllReduce(TensorView{bytes.data(), &byte_meta}, ReduceOp::kSum, "test_all_reduce"),
                           doctest::Contains("all-reduce test_all_reduce: all-reduce of u8 is not supported"),
                           std::invalid_argument);
    });
  }
}

TEST_CASE("process groups: point-to-point messages between two of three ranks, in order, chunked, while the third waits") {
  Watchdog dog(60s);
  for (Backend backend : {Backend::kGloo, Backend::kShm}) {
    CAPTURE(Name(backend));
    OnRanks(backend, 3, 10000ms, [](int rank, HostProcessGroup& group, ControlPlaneClient& client) {
      // Rank 0 sends rank 2 three messages (one of several 4 KiB slots, one empty, one small); rank 2
      // sends one back; rank 1 takes no part.
      const TensorMeta big_meta{Shape{5000}, DType::kF32};
      const TensorMeta empty_meta{Shape{0}, DType::kF32};
      const TensorMeta small_meta{Shape{3}, DType::kI64};
      std::vector<float> big(5000);
      std::vector<std::int64_t> small(3);
      if (rank == 0) {
        for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i) * 0.5f;
        small = {7, 8, 9};
        group.Send(ConstTensorView{big.data(), &big_meta}, 2, "test_send");
        group.Send(ConstTensorView{nullptr, &empty_meta}, 2, "test_send");
        group.Send(ConstTensorView{small.data(), &small_meta}, 2, "test_send");
        std::vector<std::int64_t> back(3);
        group.Recv(TensorView{back.data(), &small_meta}, 2, "test_recv");
        CHECK(back == std::vector<std::int64_t>{70, 80, 90});
        CHECK_THROWS_WITH_AS(group.Send(ConstTensorView{small.data(), &small_meta}, 0, "test_send"),
                             doctest::Contains("the peer must be another rank in [0, 3), got 0"), std::invalid_argument);
      } else if (rank == 2) {
        group.Recv(TensorView{big.data(), &big_meta}, 0, "test_recv");
        group.Recv(TensorView{nullptr, &empty_meta}, 0, "test_recv");
        group.Recv(TensorView{small.data(), &small_meta}, 0, "test_recv");
        bool same = true;
        for (std::size_t i = 0; i < big.size(); ++i) same = same && big[i] == static_cast<float>(i) * 0.5f;
        CHECK(same);
        CHECK(small == std::vector<std::int64_t>{7, 8, 9});
        const std::vector<std::int64_t> back{70, 80, 90};
        group.Send(ConstTensorView{back.data(), &small_meta}, 0, "test_send");
      }
      // The collectives still line up on every rank after messages only some took part in.
      CHECK(AllReduced(group, std::vector<float>{1, 2}, DType::kF32, ReduceOp::kSum) == std::vector<float>{3, 6});
      client.Barrier("done", 10000ms);
    });
  }
}

TEST_CASE("process groups: a receive whose sender never sends fails within the timeout, naming it") {
  Watchdog dog(60s);
  for (Backend backend : {Backend::kGloo, Backend::kShm}) {
    CAPTURE(Name(backend));
    OnRanks(backend, 2, 1000ms, [](int rank, HostProcessGroup& group, ControlPlaneClient& client) {
      if (rank == 0) {
        std::vector<float> values(2);
        const TensorMeta meta{Shape{2}, DType::kF32};
        const auto start = std::chrono::steady_clock::now();
        CHECK_THROWS_WITH_AS(group.Recv(TensorView{values.data(), &meta}, 1, "test_recv"),
                             doctest::Contains("recv test_recv"), std::runtime_error);
        CHECK(std::chrono::steady_clock::now() - start < 6s);
      }
      client.Barrier("after", 10000ms);
    });
  }
}

TEST_CASE("process groups: a rank that never joins a collective fails the others within the timeout") {
  Watchdog dog(60s);
  for (Backend backend : {Backend::kGloo, Backend::kShm}) {
    CAPTURE(Name(backend));
    OnRanks(backend, 2, 1000ms, [backend](int rank, HostProcessGroup& group, ControlPlaneClient& client) {
      if (rank == 1) {
        client.Barrier("after", 10000ms);  // stays alive but never all-reduces
        return;
      }
      std::vector<float> values{1, 2};
      const auto start = std::chrono::steady_clock::now();
      std::string error;
      try {
        AllReduced(group, values, DType::kF32, ReduceOp::kSum);
      } catch (const std::runtime_error& e) {
        error = e.what();
      }
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (backend == Backend::kGloo) {
        CHECK(error.find("[gloo] rank 0: all-reduce test_all_reduce failed (no rank was reported lost)") !=
              std::string::npos);
        CHECK(error.find("Timed out") != std::string::npos);
      } else {
        CHECK(error.find("[shm] rank 0: all-reduce test_all_reduce timed out after 1000 ms") != std::string::npos);
      }
      CHECK(seconds < 6);  // the 1 s timeout, plus the 2 s the error waits for a lost-rank notice
      client.Barrier("after", 10000ms);
    });
  }
}

TEST_CASE("process groups: bad options name the field") {
  ControlPlaneOptions options;
  options.master_port = 0;
  ControlPlaneServer server(options);
  options.master_port = server.Port();
  auto client = ControlPlaneClient::Connect(options);
  CHECK_THROWS_WITH_AS(MakeGlooProcessGroup(*client, {.prefix = "", .address = "127.0.0.1"}),
                       doctest::Contains("prefix must not be empty"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(MakeGlooProcessGroup(*client, {.prefix = "p", .address = ""}),
                       doctest::Contains("address must not be empty"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(MakeGlooProcessGroup(*client, {.prefix = "p", .address = "127.0.0.1", .timeout = 0ms}),
                       doctest::Contains("timeout must be positive, got 0 ms"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(MakeShmProcessGroup(*client, {.prefix = "p", .slot_bytes = 100}),
                       doctest::Contains("slot_bytes must be a positive multiple of 64, got 100"),
                       std::invalid_argument);
  CHECK(LocalAddressTowards("127.0.0.1") == "127.0.0.1");
  CHECK(LocalAddressTowards("localhost") == "127.0.0.1");  // regression: a host name was refused
  CHECK(MachineIdentity() == MachineIdentity());
  CHECK_THROWS_WITH_AS(LocalAddressTowards("not-an-address"), doctest::Contains("is not an IPv4 address"),
                       ControlPlaneError);
}
