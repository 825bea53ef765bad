#pragma once
// Elementwise CPU loops over the intra-op pool. Such loops are memory-bound: a second core adds its
// own cache and load bandwidth, so large loops split into one contiguous range per pool thread;
// small ones run inline, where the hand-off (a few microseconds) would cost more than it saves.
//
// Loop bodies should load every operand unconditionally and select afterwards
// (`dx[i] = y[i] > 0 ? dy[i] : 0` with dy[i] loaded first): a load guarded by a data-dependent
// branch cannot be vectorised, and on activations the branch mispredicts about half the time
// (relu_grad ran 30x slower that way).
#include <cstdint>

#include "common/intra_op_pool.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {

/// Loops of at least this many elements are split over the pool.
inline constexpr std::int64_t kParallelElements = std::int64_t{1} << 16;

/// Calls body(begin, end) over ranges covering [0, count), each range a multiple of 16 elements
/// (whole cache lines for 4-byte types, so ranges never share a line) except the last.
template <typename Body> void ForEachRange(std::int64_t count, Body&& body) {
  const int chunks = count >= kParallelElements ? IntraOpThreads() : 1;
  if (chunks == 1) {
    body(std::int64_t{0}, count);
    return;
  }
  const auto begin = [&](int i) { return i == chunks ? count : (ChunkBegin(count, chunks, i) & ~std::int64_t{15}); };
  ParallelFor(chunks, [&](int i) { body(begin(i), begin(i + 1)); });
}

/// out[i] = fn(in[i]) for i in [0, count).
template <typename In, typename Out, typename Fn>
void MapElements(std::int64_t count, const In* __restrict in, Out* __restrict out, Fn fn) {
  ForEachRange(count, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) out[i] = fn(in[i]);
  });
}

/// out[i] = fn(a[i], b[i]) for i in [0, count).
template <typename A, typename B, typename Out, typename Fn>
void MapElements(std::int64_t count, const A* __restrict a, const B* __restrict b, Out* __restrict out, Fn fn) {
  ForEachRange(count, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) out[i] = fn(a[i], b[i]);
  });
}

/// The kernel of an elementwise op whose math is functor Fn (kernels/functors/): y = Fn::Fwd(x).
template <typename T, typename Fn> class MapCpu final : public Kernel {
 public:
  explicit MapCpu(const KernelSetup&) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    MapElements(inputs[0].NumElements(), inputs[0].As<T>(), outputs[0].As<T>(), [](T x) { return Fn::template Fwd<T>(x); });
  }
};

/// Its gradient from the forward output: inputs (dy, y), dx = Fn::Grad(dy, y).
template <typename T, typename Fn> class MapGradCpu final : public Kernel {
 public:
  explicit MapGradCpu(const KernelSetup&) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    MapElements(inputs[0].NumElements(), inputs[0].As<T>(), inputs[1].As<T>(), outputs[0].As<T>(),
                [](T dy, T y) { return Fn::template Grad<T>(dy, y); });
  }
};

}  // namespace weir::internal
