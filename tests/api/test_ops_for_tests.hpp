#pragma once
// Ops that exist only in the tests: an identity that spins for a given time or fails on demand,
// counting its runs, so tests can control timing and faults inside real actors; and a rendezvous
// that only completes when every device's replica runs at once.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>

#include <pthread.h>

#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "kernels/kernel.hpp"

namespace weir::testing {

struct ProbeAttrs {
  /// Busy-waits for input[0] * spin_scale_us microseconds (after clamping at 0).
  double spin_scale_us = 0.0;
  /// Fails the call with a KernelError when input[0] < 0.
  bool fail_on_negative = false;
};

inline std::atomic<std::int64_t>& ProbeRuns() {
  static std::atomic<std::int64_t> runs{0};
  return runs;
}

/// The name of the thread the probe kernel last ran on ("weir-stream" on an asynchronous device stream).
inline std::mutex& ProbeThreadMutex() {
  static std::mutex mutex;
  return mutex;
}
inline std::string& ProbeThreadNameStorage() {
  static std::string name;
  return name;
}
inline std::string ProbeThreadName() {
  std::lock_guard lock(ProbeThreadMutex());
  return ProbeThreadNameStorage();
}

class ProbeKernel final : public internal::Kernel {
 public:
  explicit ProbeKernel(const internal::KernelSetup& setup) : attrs_(setup.Get<ProbeAttrs>()) {}
  void Run(std::span<const internal::ConstTensorView> inputs, std::span<const internal::TensorView> outputs) override {
    ProbeRuns().fetch_add(1);
    {
      char name[16] = {};
      pthread_getname_np(pthread_self(), name, sizeof(name));
      std::lock_guard lock(ProbeThreadMutex());
      ProbeThreadNameStorage() = name;
    }
    const float first = inputs[0].As<float>()[0];
    if (attrs_.fail_on_negative && first < 0) {
      throw internal::KernelError(fmt::format("[probe] negative input {}", first));
    }
    if (attrs_.spin_scale_us > 0 && first > 0) {
      const auto until = std::chrono::steady_clock::now() +
                         std::chrono::nanoseconds(static_cast<std::int64_t>(first * attrs_.spin_scale_us * 1000));
      while (std::chrono::steady_clock::now() < until) {
      }
    }
    std::memcpy(outputs[0].data, inputs[0].data, inputs[0].meta->NumBytes());
  }

 private:
  ProbeAttrs attrs_;
};

inline Blob Probe(const Blob& x, ProbeAttrs attrs) { return internal::AddOp1("test_probe", {x}, attrs, {}); }

inline void RegisterProbeOp() {
  static const bool registered = [] {
    internal::RegisterOp({.type = "test_probe",
                          .num_inputs = 1,
                          .input_names = {"x"},
                          .infer = [](const internal::InferContext& ctx) {
                            return std::vector<internal::TensorMeta>{ctx.inputs[0]};
                          }});
    internal::RegisterKernel({"test_probe", Device::Kind::kCpu, DType::kF32}, &internal::MakeKernel<ProbeKernel>);
    return true;
  }();
  (void)registered;
}

/// test_rendezvous: each run waits, up to 5 s, until `parties` runs (one per device's replica) are
/// inside the kernel at once, then copies x. It fails the call when they never meet: the replicas
/// of one call did not compute side by side.
inline constexpr int kRendezvousParties = 2;

class RendezvousKernel final : public internal::Kernel {
 public:
  explicit RendezvousKernel(const internal::KernelSetup&) {}
  void Run(std::span<const internal::ConstTensorView> inputs, std::span<const internal::TensorView> outputs) override {
    static std::mutex mutex;
    static std::condition_variable met;
    static int arrived = 0;
    static std::int64_t generation = 0;
    {
      std::unique_lock lock(mutex);
      const std::int64_t mine = generation;
      if (++arrived == kRendezvousParties) {
        arrived = 0;
        ++generation;
        met.notify_all();
      } else if (!met.wait_for(lock, std::chrono::seconds(5), [&] { return generation != mine; })) {
        --arrived;
        throw internal::KernelError("[rendezvous] the other device's replica did not run within 5 s");
      }
    }
    std::memcpy(outputs[0].data, inputs[0].data, inputs[0].meta->NumBytes());
  }
};

inline Blob Rendezvous(const Blob& x) { return internal::AddOp1("test_rendezvous", {x}, std::any{}, {}); }

inline void RegisterRendezvousOp() {
  static const bool registered = [] {
    internal::RegisterOp({.type = "test_rendezvous",
                          .num_inputs = 1,
                          .input_names = {"x"},
                          .infer = [](const internal::InferContext& ctx) {
                            return std::vector<internal::TensorMeta>{ctx.inputs[0]};
                          }});
    internal::RegisterKernel({"test_rendezvous", Device::Kind::kCpu, DType::kF32},
                             &internal::MakeKernel<RendezvousKernel>);
    return true;
  }();
  (void)registered;
}

/// test_block: each run waits until BlockRelease() (at most 10 s), then copies x: a kernel that
/// does not return, for the watchdog's tests.
struct BlockGate {
  std::mutex mutex;
  std::condition_variable released_cv;
  bool released = false;
};
inline BlockGate& Gate() {
  static BlockGate gate;
  return gate;
}
inline void BlockReset() {
  std::lock_guard lock(Gate().mutex);
  Gate().released = false;
}
inline void BlockRelease() {
  {
    std::lock_guard lock(Gate().mutex);
    Gate().released = true;
  }
  Gate().released_cv.notify_all();
}

class BlockKernel final : public internal::Kernel {
 public:
  explicit BlockKernel(const internal::KernelSetup&) {}
  void Run(std::span<const internal::ConstTensorView> inputs, std::span<const internal::TensorView> outputs) override {
    {
      std::unique_lock lock(Gate().mutex);
      Gate().released_cv.wait_for(lock, std::chrono::seconds(10), [] { return Gate().released; });
    }
    std::memcpy(outputs[0].data, inputs[0].data, inputs[0].meta->NumBytes());
  }
};

inline Blob Block(const Blob& x) { return internal::AddOp1("test_block", {x}, std::any{}, {}); }

inline void RegisterBlockOp() {
  static const bool registered = [] {
    internal::RegisterOp({.type = "test_block",
                          .num_inputs = 1,
                          .input_names = {"x"},
                          .infer = [](const internal::InferContext& ctx) {
                            return std::vector<internal::TensorMeta>{ctx.inputs[0]};
                          }});
    internal::RegisterKernel({"test_block", Device::Kind::kCpu, DType::kF32}, &internal::MakeKernel<BlockKernel>);
    return true;
  }();
  (void)registered;
}

}  // namespace weir::testing
