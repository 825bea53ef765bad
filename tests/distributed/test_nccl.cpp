// The NCCL process group (distributed/nccl_process_group.hpp): bad options are refused, a rank without
// a GPU fails to join within its bound, and with a GPU a one-rank group runs its collectives on a CUDA
// stream. Groups of several ranks need a GPU each (NCCL refuses two ranks on one GPU):
// tests/python/test_distributed.py trains on 2 processes where 2 GPUs are visible.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <vector>

#include "common/cuda_runtime.hpp"
#include "distributed/control_plane.hpp"
#include "distributed/nccl_process_group.hpp"

using namespace weir;
using namespace weir::internal;
using namespace std::chrono_literals;

namespace {

// A control plane of one rank, served on a free port.
struct OneRank {
  OneRank() {
    ControlPlaneOptions options;
    options.master_port = 0;
    options.rendezvous_timeout = 10000ms;
    server = std::make_unique<ControlPlaneServer>(options);
    options.master_port = server->Port();
    client = ControlPlaneClient::Connect(options);
  }
  std::unique_ptr<ControlPlaneServer> server;
  std::unique_ptr<ControlPlaneClient> client;
};

}  // namespace

TEST_CASE("an NCCL group refuses bad options, and fails to join without a GPU, within its bound") {
  OneRank one;
  CHECK_THROWS_WITH_AS(MakeNcclProcessGroup(*one.client, {.prefix = ""}), doctest::Contains("prefix"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(MakeNcclProcessGroup(*one.client, {.prefix = "p", .timeout = 0ms}),
                       doctest::Contains("timeout: expected > 0 ms, got 0 ms"), std::invalid_argument);
  if (CudaDeviceCount() > 0) return;
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(MakeNcclProcessGroup(*one.client, {.prefix = "nogpu", .timeout = 5000ms}), std::runtime_error);
  CHECK(std::chrono::steady_clock::now() - start < 20s);
}

TEST_CASE("a one-rank NCCL group all-reduces, broadcasts and gathers on a CUDA stream" *
          doctest::skip(CudaDeviceCount() == 0)) {
  OneRank one;
  auto group = MakeNcclProcessGroup(*one.client, {.prefix = "one", .timeout = 30000ms});
  CHECK(group->Backend() == "nccl");
  CHECK(group->Size() == 1);
  auto stream = MakeCudaDeviceStream(0, "nccl test");
  const std::vector<float> host = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f};
  const TensorMeta meta{Shape{5}, DType::kF32};
  void* in = CudaAllocate(0, meta.NumBytes());
  void* out = CudaAllocate(0, meta.NumBytes());
  CudaCopy(in, true, host.data(), false, meta.NumBytes());
  auto read = [&](void* device) {
    REQUIRE(stream->Record()->WaitFor(30000ms));
    std::vector<float> values(host.size());
    CudaCopy(values.data(), false, device, true, meta.NumBytes());
    return values;
  };
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {  // over one rank: the values themselves
    stream->Submit([&] { group->AllReduce({in, &meta}, {out, &meta}, op, stream->NativeHandle(), "test_all_reduce"); });
    CHECK(read(out) == host);
  }
  stream->Submit([&] { group->Broadcast({in, &meta}, 0, stream->NativeHandle(), "test_broadcast"); });
  CHECK(read(in) == host);
  const TensorMeta bytes{Shape{static_cast<std::int64_t>(meta.NumBytes())}, DType::kU8};
  const std::vector<TensorView> packed = {{in, &bytes}};
  stream->Submit([&] { group->BroadcastEach(packed, stream->NativeHandle(), "test_gather"); });
  CHECK(read(in) == host);
  CHECK_NOTHROW(group->ThrowIfFailed("test"));
  CHECK_THROWS_WITH_AS(group->AllReduce({in, &bytes}, {out, &bytes}, ReduceOp::kSum, stream->NativeHandle(), "bytes"),
                       doctest::Contains("all-reduce of u8 is not supported"), std::invalid_argument);
  CudaFree(0, in);
  CudaFree(0, out);
}
