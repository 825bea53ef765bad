// All-reduce between processes: Weir's process groups (what a cross-process collective actor calls),
// shared memory and Gloo, against raw Gloo (gloo::allreduce on a context of its own), f32 sum, 1 KB to
// 64 MB. Run as
// the ranks of a distributed job (weir-launch's environment: RANK, WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT); bench/multi_process.py starts two, each pinned to a core. Each size: warm-up, then
// --reps samples per side, alternated in blocks. A sample is a barrier, one untimed all-reduce (the
// ranks leave the control plane's barrier up to a few hundred microseconds apart; the all-reduce
// lines them up), then `burst` all-reduces back to back (a train step's gradient buckets), timed
// together. Rank 0 prints the median time per all-reduce in microseconds and the bus bandwidth
// (2 (n-1)/n bytes per rank), and last one JSON line.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include "distributed/control_plane.hpp"
#include "distributed/gloo_process_group.hpp"
#include "distributed/shm_process_group.hpp"

namespace {

using namespace weir::internal;
using Clock = std::chrono::steady_clock;

int EnvInt(const char* name, int fallback) {
  const char* text = std::getenv(name);
  return text == nullptr ? fallback : std::atoi(text);
}

// The raw side's rendezvous: Gloo's keys in the control plane's store, as the process group does it.
class Store final : public gloo::rendezvous::Store {
 public:
  explicit Store(ControlPlaneClient& client) : client_(client) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    client_.Set("raw/" + key, std::string(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    const std::string value = client_.Get("raw/" + key);
    return {value.begin(), value.end()};
  }
  void wait(const std::vector<std::string>& keys) override {
    std::vector<std::string> prefixed;
    for (const auto& key : keys) prefixed.push_back("raw/" + key);
    client_.Wait(prefixed);
  }

 private:
  ControlPlaneClient& client_;
};

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int reps_flag = argc > 1 ? std::atoi(argv[1]) : 0;
  ControlPlaneOptions options;
  options.rank = EnvInt("RANK", 0);
  options.world_size = EnvInt("WORLD_SIZE", 1);
  if (const char* addr = std::getenv("MASTER_ADDR")) options.master_addr = addr;
  if (const char* token = std::getenv("WEIR_JOB_TOKEN")) options.job_token = token;
  options.master_port = EnvInt("MASTER_PORT", 29500);
  std::unique_ptr<ControlPlaneServer> server;
  if (options.rank == 0) server = std::make_unique<ControlPlaneServer>(options);
  auto client = ControlPlaneClient::Connect(options);
  const std::string address = LocalAddressTowards(options.master_addr);
  auto group = MakeGlooProcessGroup(*client, {.prefix = "bench", .address = address});
  auto shm = MakeShmProcessGroup(*client, {.prefix = "bench_shm"});

  gloo::transport::tcp::attr attr;
  attr.hostname = address;
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto raw = std::make_shared<gloo::rendezvous::Context>(options.rank, options.world_size);
  Store store(*client);
  raw->connectFullMesh(store, device);

  const int n = options.world_size;
  std::string json = fmt::format("{{\"bench\": \"allreduce_processes\", \"ranks\": {}, \"sizes\": [", n);
  if (options.rank == 0) {
    std::printf("all-reduce f32 sum, %d processes: median us (bus GB/s)\n%10s %20s %20s %20s\n", n, "bytes",
                "weir shared memory", "weir gloo", "raw gloo");
  }
  bool first = true;
  std::uint32_t raw_tag = 0;
  for (std::size_t bytes = 1024; bytes <= (std::size_t{64} << 20); bytes *= 4) {
    const std::size_t elements = bytes / sizeof(float);
    std::vector<float> buffer(elements, 1.0f);
    const weir::internal::TensorMeta meta{weir::Shape{static_cast<std::int64_t>(elements)}, weir::DType::kF32};
    // Bursts of about 1 MiB, samples of about 64 MiB (each size takes a few seconds per side).
    const int burst = static_cast<int>(std::clamp<std::size_t>((1u << 20) / bytes, 1, 16));
    const int reps = reps_flag > 0 ? reps_flag
                                   : static_cast<int>(std::clamp<std::size_t>((64u << 20) / (bytes * burst), 5, 50));
    auto weir_once = [&] { group->AllReduce(weir::internal::TensorView{buffer.data(), &meta}, ReduceOp::kSum, "bench"); };
    auto shm_once = [&] { shm->AllReduce(weir::internal::TensorView{buffer.data(), &meta}, ReduceOp::kSum, "bench"); };
    auto raw_once = [&] {
      gloo::AllreduceOptions opts(raw);
      opts.setOutput(buffer.data(), elements);
      opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, std::size_t)>(&gloo::sum<float>));
      opts.setTag(raw_tag++);
      gloo::allreduce(opts);
    };
    for (int i = 0; i < 3; ++i) {
      shm_once();
      weir_once();
      raw_once();
    }
    std::vector<double> us[3];
    for (int block = 0; block < 4; ++block) {  // alternate, so that drifts hit every side
      for (int side = 0; side < 3; ++side) {
        for (int i = 0; i < (reps + 3) / 4; ++i) {
          auto once = [&] { side == 0 ? shm_once() : side == 1 ? weir_once() : raw_once(); };
          client->Barrier("rep", std::chrono::milliseconds(60000));
          once();
          const auto start = Clock::now();
          for (int b = 0; b < burst; ++b) once();
          us[side].push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count() / burst);
        }
      }
    }
    const double s = Median(us[0]), w = Median(us[1]), r = Median(us[2]);
    const double bus = 2.0 * (n - 1) / n * static_cast<double>(bytes);
    if (options.rank == 0) {
      std::printf("%10zu %11.1f (%5.2f) %11.1f (%5.2f) %11.1f (%5.2f)\n", bytes, s, bus / s / 1e3, w, bus / w / 1e3, r,
                  bus / r / 1e3);
      json += fmt::format("{}{{\"bytes\": {}, \"weir_shm_us\": {:.1f}, \"weir_gloo_us\": {:.1f}, \"raw_gloo_us\": {:.1f}, "
                          "\"weir_shm_bus_gbps\": {:.3f}, \"weir_gloo_bus_gbps\": {:.3f}, \"raw_gloo_bus_gbps\": {:.3f}}}",
                          first ? "" : ", ", bytes, s, w, r, bus / s / 1e3, bus / w / 1e3, bus / r / 1e3);
      first = false;
    }
  }
  client->Barrier("done", std::chrono::milliseconds(60000));
  if (options.rank == 0) std::printf("%s]}\n", json.c_str());
  return 0;
}
