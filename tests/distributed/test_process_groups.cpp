// The process groups between processes, Gloo (TCP on 127.0.0.1) and shared memory, over the control
// plane: every rank a thread of this process (neither backend can tell). All-reduce and broadcast of
// every dtype against the arithmetic, buffers larger than Gloo's segment and the shared slot (so both
// go in pieces), consecutive collectives kept apart, and a rank that never joins a collective: a bounded
// error naming the collective.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <any>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/stale_files.hpp"
#include "distributed/control_plane.hpp"
#include "distributed/gloo_process_group.hpp"
#include "distributed/shm_process_group.hpp"
#include "kernels/collectives/collective_attrs.hpp"
#include "kernels/kernel.hpp"
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

TEST_CASE("shared memory: an all-reduce of several chunks sums in rank order, the same bits on every rank") {
  Watchdog dog(60s);
  // 2 chunks of 1024 floats and 7 more (the 4 KiB slots): three ranks own pieces of 341, 341 and 342
  // elements of each full chunk and 2, 2 and 3 of the last. Values that round differently in another
  // order, so that any other summation order shows.
  const std::size_t count = 2 * 1024 + 7;
  auto value = [](int rank, std::size_t i) {
    return static_cast<float>(std::sin(0.37 * static_cast<double>(i) + rank) * std::pow(10.0, rank - 1));
  };
  OnRanks(Backend::kShm, 3, 10000ms, [&](int rank, HostProcessGroup& group, ControlPlaneClient&) {
    std::vector<float> mine(count);
    for (std::size_t i = 0; i < count; ++i) mine[i] = value(rank, i);
    const auto sum = AllReduced(group, mine, DType::kF32, ReduceOp::kSum);
    const auto mean = AllReduced(group, mine, DType::kF32, ReduceOp::kMean);
    bool exact = true;
    for (std::size_t i = 0; i < count; ++i) {
      const float expected = (value(0, i) + value(1, i)) + value(2, i);
      exact = exact && sum[i] == expected && mean[i] == expected / 3.0f;
    }
    CHECK(exact);
  });
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

TEST_CASE("process groups: a ring of send/recv exchanges, of several slots and empty, does not deadlock") {
  Watchdog dog(60s);
  for (Backend backend : {Backend::kGloo, Backend::kShm}) {
    CAPTURE(Name(backend));
    OnRanks(backend, 3, 10000ms, [](int rank, HostProcessGroup& group, ControlPlaneClient&) {
      // Every rank sends its right neighbour 3000 doubles (several 4 KiB slots) and receives its left
      // neighbour's at once, then the other way round with an empty message one way.
      const int right = (rank + 1) % 3;
      const int left = (rank + 2) % 3;
      const TensorMeta meta{Shape{3000}, DType::kF64};
      std::vector<double> mine(3000), theirs(3000, -1.0);
      for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = rank * 10000.0 + static_cast<double>(i);
      group.SendRecv({mine.data(), &meta}, right, {theirs.data(), &meta}, left, "test_exchange");
      bool same = true;
      for (std::size_t i = 0; i < theirs.size(); ++i) same = same && theirs[i] == left * 10000.0 + static_cast<double>(i);
      CHECK(same);
      const TensorMeta empty{Shape{0}, DType::kF64};
      std::vector<double> back(3000, -1.0);
      // Rank 0 sends nothing left (and rank 2 so receives nothing from its right).
      group.SendRecv({mine.data(), rank == 0 ? &empty : &meta}, left, {back.data(), rank == 2 ? &empty : &meta}, right,
                     "test_exchange");
      if (rank != 2) CHECK(back[2999] == right * 10000.0 + 2999.0);
    });
  }
}

TEST_CASE("process groups: a rank that leaves after its part fails no exchange between the others") {
  // Regression: a shared-memory wait failed on any rank's departure, so rank 1, waiting for rank 2's
  // message, failed ("rank 0 left the group") once rank 0, done with its own part, had left.
  Watchdog dog(60s);
  for (Backend backend : {Backend::kGloo, Backend::kShm}) {
    CAPTURE(Name(backend));
    OnRanks(backend, 3, 10000ms, [](int rank, HostProcessGroup& group, ControlPlaneClient&) {
      const TensorMeta meta{Shape{3}, DType::kI64};
      std::vector<std::int64_t> value{1, 2, 3};
      if (rank == 0) group.Send(ConstTensorView{value.data(), &meta}, 1, "test_early");
      if (rank == 1) {
        group.Recv(TensorView{value.data(), &meta}, 0, "test_early");
        CHECK(value == std::vector<std::int64_t>{1, 2, 3});
        group.Recv(TensorView{value.data(), &meta}, 2, "test_late");
        CHECK(value == std::vector<std::int64_t>{7, 8, 9});
      }
      if (rank == 2) {
        std::this_thread::sleep_for(300ms);  // rank 0 leaves meanwhile
        value = {7, 8, 9};
        group.Send(ConstTensorView{value.data(), &meta}, 1, "test_late");
      }
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
      // The rank that never came is named (it sent no word of where it stands).
      CHECK(error.find(fmt::format("[{}] rank 0: all-reduce test_all_reduce timed out after 1000 ms: rank 1 did not "
                                   "reach it (no word within 1000 ms", Name(backend))) != std::string::npos);
      if (backend == Backend::kGloo) CHECK(error.find("Timed out waiting 1000ms") != std::string::npos);
      CHECK(seconds < 3.5);  // the 1 s timeout, plus the second the error waits for the others' word
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

TEST_CASE("process groups: a shared segment whose maker was killed is removed by the next group's maker") {
  const pid_t child = ::fork();  // a pid that no longer exists
  REQUIRE(child >= 0);
  if (child == 0) ::_exit(0);
  REQUIRE(::waitpid(child, nullptr, 0) == child);
  const std::string suffix = "-0123456789abcdef";
  const std::string killed = "/weir-" + MachineTag() + "-" + std::to_string(child) + suffix;
  const std::string alive = "/weir-" + MachineTag() + "-" + std::to_string(::getpid()) + suffix;
  for (const std::string& name : {killed, alive}) {
    const int fd = shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
    REQUIRE(fd >= 0);
    ::close(fd);
  }
  auto exists = [](const std::string& name) {
    const int fd = shm_open(name.c_str(), O_RDONLY, 0600);
    if (fd >= 0) ::close(fd);
    return fd >= 0;
  };
  RemoveStaleSegments();
  CHECK_FALSE(exists(killed));
  CHECK(exists(alive));
  shm_unlink(alive.c_str());
}

namespace {

// Piece p of 4 of a logical (7, 5) tensor, spread over 3 ranks as pieces {0, 1}, {2}, {3}: what each
// global piece holds (distinct values per piece, so a piece in the wrong place shows).
constexpr int kPieces = 4;
const std::vector<int> kProcessPieces = {0, 2, 3, 4};
const Shape kLogical{7, 5};

std::vector<float> Whole(int seed) {
  std::vector<float> values(static_cast<std::size_t>(kLogical.NumElements()));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f + static_cast<float>(seed);
  return values;
}

// Piece p (along axis) of a whole tensor.
std::vector<float> PieceOf(const std::vector<float>& whole, int axis, int p) {
  const TensorMeta whole_meta{kLogical, DType::kF32};
  const TensorMeta piece_meta{SplitShape(kLogical, axis, kPieces, p), DType::kF32};
  std::vector<float> piece(static_cast<std::size_t>(piece_meta.shape.NumElements()));
  CopyPieceOut({whole.data(), &whole_meta}, axis, kPieces, p, {piece.data(), &piece_meta});
  return piece;
}

// Runs the CPU kernel of `op` (a collective spread over the processes) on this rank's `inputs`, with
// outputs of `output_shapes`; returns the outputs.
std::vector<std::vector<float>> RunSpread(HostProcessGroup& group, const std::string& op, const CollectiveAttrs& attrs,
                                          std::vector<std::vector<float>> inputs, const std::vector<Shape>& input_shapes,
                                          const std::vector<Shape>& output_shapes) {
  std::vector<TensorMeta> in_metas, out_metas;
  for (const Shape& shape : input_shapes) in_metas.push_back({shape, DType::kF32});
  for (const Shape& shape : output_shapes) out_metas.push_back({shape, DType::kF32});
  const std::any any_attrs = attrs;
  KernelSetup setup;
  setup.op_type = op;
  setup.op_name = op;
  setup.attrs = &any_attrs;
  setup.inputs = in_metas;
  setup.outputs = out_metas;
  setup.processes = &group;
  const KernelFactory factory = FindKernel({op, weir::Device::Kind::kCpu, DType::kF32});
  REQUIRE(static_cast<bool>(factory));
  const std::unique_ptr<Kernel> kernel = factory(setup);
  std::vector<std::vector<float>> outputs;
  for (const TensorMeta& meta : out_metas) outputs.emplace_back(static_cast<std::size_t>(meta.shape.NumElements()));
  std::vector<ConstTensorView> in_views;
  std::vector<TensorView> out_views;
  for (std::size_t i = 0; i < inputs.size(); ++i) in_views.push_back({inputs[i].data(), &in_metas[i]});
  for (std::size_t j = 0; j < outputs.size(); ++j) out_views.push_back({outputs[j].data(), &out_metas[j]});
  kernel->Run(in_views, out_views);
  return outputs;
}

void CheckClose(const std::vector<float>& got, const std::vector<float>& expected) {
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-6));
}

}  // namespace

TEST_CASE("collectives spread over processes compute what one process does, pieces of any size on each rank") {
  Watchdog dog(60s);
  for (Backend backend : {Backend::kGloo, Backend::kShm}) {
    CAPTURE(Name(backend));
    OnRanks(backend, 3, 10000ms, [](int rank, HostProcessGroup& group, ControlPlaneClient&) {
      const int first = kProcessPieces[static_cast<std::size_t>(rank)];
      const int last = kProcessPieces[static_cast<std::size_t>(rank) + 1];
      auto attrs_for = [&](int axis, int out_axis, ReduceOp op) {
        return CollectiveAttrs{.op = op, .devices = kPieces, .axis = axis, .out_axis = out_axis,
                               .across_processes = true, .process_pieces = kProcessPieces, .logical = kLogical};
      };
      // The addends of a reduction: one whole tensor per global piece.
      std::vector<float> sum(static_cast<std::size_t>(kLogical.NumElements()), 0.0f);
      for (int p = 0; p < kPieces; ++p) {
        const std::vector<float> addend = Whole(10 * p);
        for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += addend[i];
      }
      std::vector<std::vector<float>> addends;
      std::vector<Shape> whole_shapes;
      for (int p = first; p < last; ++p) {
        addends.push_back(Whole(10 * p));
        whole_shapes.push_back(kLogical);
      }
      for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
        std::vector<float> expected = sum;
        if (op == ReduceOp::kMean) for (float& v : expected) v /= static_cast<float>(kPieces);
        CAPTURE(static_cast<int>(op));
        CheckClose(RunSpread(group, "all_reduce", attrs_for(0, 0, op), addends, whole_shapes, {kLogical})[0], expected);
        for (int axis : {0, 1}) {
          CAPTURE(axis);
          std::vector<Shape> piece_shapes;
          for (int p = first; p < last; ++p) piece_shapes.push_back(SplitShape(kLogical, axis, kPieces, p));
          const auto pieces = RunSpread(group, "reduce_scatter", attrs_for(axis, 0, op), addends, whole_shapes, piece_shapes);
          for (int p = first; p < last; ++p) CheckClose(pieces[static_cast<std::size_t>(p - first)], PieceOf(expected, axis, p));
        }
      }
      const std::vector<float> x = Whole(1);
      for (int axis : {0, 1}) {
        CAPTURE(axis);
        std::vector<std::vector<float>> mine;
        std::vector<Shape> mine_shapes;
        for (int p = first; p < last; ++p) {
          mine.push_back(PieceOf(x, axis, p));
          mine_shapes.push_back(SplitShape(kLogical, axis, kPieces, p));
        }
        CheckClose(RunSpread(group, "all_gather", attrs_for(axis, 0, ReduceOp::kSum), mine, mine_shapes, {kLogical})[0], x);
        const auto scattered = RunSpread(group, "scatter", attrs_for(axis, 0, ReduceOp::kSum), {x}, {kLogical}, mine_shapes);
        for (int p = first; p < last; ++p) CheckClose(scattered[static_cast<std::size_t>(p - first)], PieceOf(x, axis, p));
        for (int out_axis : {0, 1}) {
          CAPTURE(out_axis);
          std::vector<Shape> out_shapes;
          for (int p = first; p < last; ++p) out_shapes.push_back(SplitShape(kLogical, out_axis, kPieces, p));
          const auto moved = RunSpread(group, "all_to_all", attrs_for(axis, out_axis, ReduceOp::kSum), mine, mine_shapes,
                                       out_shapes);
          for (int p = first; p < last; ++p) CheckClose(moved[static_cast<std::size_t>(p - first)], PieceOf(x, out_axis, p));
        }
      }
    });
  }
}

TEST_CASE("a fusion bucket averages each of its tensors over every device of every process") {
  Watchdog dog(60s);
  // Tensors of a bucket: small ones cross the processes packed; one of 70,000 floats, over shared
  // memory's 256 KiB packing limit, in place there (packed on Gloo, whose limit is 4 MiB); an empty one
  // not at all; 2 devices in each of 3 ranks.
  const std::vector<std::int64_t> sizes = {5, 70000, 1, 0, 3};
  constexpr int kDevices = 2;
  for (Backend backend : {Backend::kGloo, Backend::kShm}) {
    CAPTURE(Name(backend));
    OnRanks(backend, 3, 10000ms, [&](int rank, HostProcessGroup& group, ControlPlaneClient&) {
      // Device d of rank r adds (10 r + d + 1) * (i % 7 + 1) at element i of tensor t, plus t.
      auto addend = [](int rank, int device, std::size_t t, std::int64_t i) {
        return static_cast<float>((10 * rank + device + 1) * (i % 7 + 1) + static_cast<std::int64_t>(t));
      };
      std::vector<std::vector<float>> inputs;
      std::vector<Shape> in_shapes, out_shapes;
      for (std::size_t t = 0; t < sizes.size(); ++t) {
        out_shapes.push_back(Shape{sizes[t]});
        for (int d = 0; d < kDevices; ++d) {
          std::vector<float> piece(static_cast<std::size_t>(sizes[t]));
          for (std::int64_t i = 0; i < sizes[t]; ++i) piece[static_cast<std::size_t>(i)] = addend(rank, d, t, i);
          inputs.push_back(std::move(piece));
          in_shapes.push_back(Shape{sizes[t]});
        }
      }
      for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
        CAPTURE(static_cast<int>(op));
        const CollectiveAttrs attrs{.op = op, .devices = kDevices, .tensors = static_cast<int>(sizes.size()),
                                    .across_processes = true};
        const auto outputs = RunSpread(group, "all_reduce", attrs, inputs, in_shapes, out_shapes);
        for (std::size_t t = 0; t < sizes.size(); ++t) {
          CAPTURE(t);
          std::vector<float> expected(static_cast<std::size_t>(sizes[t]), 0.0f);
          for (std::int64_t i = 0; i < sizes[t]; ++i) {
            for (int r = 0; r < 3; ++r) {
              for (int d = 0; d < kDevices; ++d) expected[static_cast<std::size_t>(i)] += addend(r, d, t, i);
            }
            if (op == ReduceOp::kMean) expected[static_cast<std::size_t>(i)] /= 3.0f * kDevices;
          }
          CheckClose(outputs[t], expected);
        }
      }
      // A bucket whose inputs do not match its tensors is refused when its kernel is made, naming it.
      const CollectiveAttrs two{.devices = kDevices, .tensors = 2, .across_processes = true};
      CHECK_THROWS_WITH_AS(RunSpread(group, "all_reduce", two, {{1.0f}, {2.0f}, {3.0f}}, {Shape{1}, Shape{1}, Shape{1}},
                                     {Shape{1}, Shape{1}}),
                           doctest::Contains("a fusion bucket is an all_reduce of 2 tensors: 4 inputs and 2 outputs "
                                             "expected, got 3 and 2"),
                           std::invalid_argument);
    });
  }
}
