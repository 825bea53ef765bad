#pragma once
// The pooling kernels' oneDNN plumbing (f32, and bf16 max pooling): a pooling pass whose batch is
// split into one chunk per intra-op thread when it is large (pooling is memory-bound; a second core
// adds its bandwidth), each chunk its own primitives over a slice of the images, made once per task.
#include <cstdint>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include <dnnl.hpp>

#include "common/intra_op_pool.hpp"
#include "kernels/cpu/dnnl_engine.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "kernels/cpu/pool2d.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {

/// One chunk's work: primitives run in order, and the memories that view the registers.
struct PoolChunkWork {
  /// Which register a memory views: input i (0, 1, ...) or the output (kOutput), and whether it
  /// holds images of x or of y (for the chunk's offset into it).
  struct View {
    dnnl::memory memory;
    int operand;
    bool x_images;
  };
  static constexpr int kOutput = -1;

  std::vector<std::pair<dnnl::primitive, std::unordered_map<int, dnnl::memory>>> steps;
  std::vector<View> views;
};

/// The work of a forward (inference) pooling of g with `algorithm`: max or avg, of `type`.
inline PoolChunkWork ForwardPoolWork(const Pool2DGeometry& g, dnnl::algorithm algorithm,
                                     dnnl::memory::data_type type = dnnl::memory::data_type::f32) {
  const DnnlPool2D d = MakeDnnlPool2D(g, type);
  const dnnl::pooling_forward::primitive_desc pd(
      {dnnl::prop_kind::forward_inference, algorithm, d.x, d.y, d.strides, d.kernel, d.pad_l, d.pad_r}, CpuEngine());
  const dnnl::memory x(d.x, CpuEngine(), DNNL_MEMORY_NONE), y(d.y, CpuEngine(), DNNL_MEMORY_NONE);
  PoolChunkWork work;
  work.steps.push_back({dnnl::pooling_forward(pd), {{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, y}}});
  work.views = {{x, 0, true}, {y, PoolChunkWork::kOutput, false}};
  return work;
}

class DnnlPool2DKernel : public Kernel {
 public:
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (chunks_.empty()) return;
    ParallelFor(static_cast<int>(chunks_.size()), [&](int i) {
      Chunk& chunk = chunks_[static_cast<std::size_t>(i)];
      for (PoolChunkWork::View& view : chunk.work.views) {
        auto* base = static_cast<std::byte*>(view.operand == PoolChunkWork::kOutput
                                                 ? outputs[0].data
                                                 : const_cast<void*>(inputs[static_cast<std::size_t>(view.operand)].data));
        const std::int64_t image = view.x_images ? x_image_ : y_image_;
        view.memory.set_data_handle(base + chunk.begin * image * element_size_);
      }
      for (auto& [primitive, args] : chunk.work.steps) primitive.execute(chunk.stream, args);
      chunk.stream.wait();
    });
  }

 protected:
  /// Splits g's batch and builds each chunk's work with build(slice geometry); the registers hold
  /// elements of `element_size` bytes.
  template <typename Build> void Init(const Pool2DGeometry& g, Build&& build, std::size_t element_size = sizeof(float)) {
    element_size_ = static_cast<std::int64_t>(element_size);
    if (g.Empty()) return;
    x_image_ = g.c * g.in_h * g.in_w;
    y_image_ = g.c * g.out_h * g.out_w;
    const int count = g.n * x_image_ >= kParallelElements
                          ? static_cast<int>(std::min<std::int64_t>(IntraOpThreads(), g.n))
                          : 1;
    chunks_.resize(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
      Chunk& chunk = chunks_[static_cast<std::size_t>(i)];
      chunk.begin = ChunkBegin(g.n, count, i);
      Pool2DGeometry slice = g;
      slice.n = ChunkBegin(g.n, count, i + 1) - chunk.begin;
      chunk.work = build(slice);
    }
  }

 private:
  struct Chunk {
    std::int64_t begin = 0;
    dnnl::stream stream{CpuEngine()};
    PoolChunkWork work;
  };
  std::int64_t x_image_ = 0, y_image_ = 0;  // elements
  std::int64_t element_size_ = sizeof(float);
  std::vector<Chunk> chunks_;
};

}  // namespace weir::internal
