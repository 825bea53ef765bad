// The in-process collective backend: the devices of one process share memory, so a collective is
// a reduction or a strided copy between the pieces, done by the one collective actor.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "common/intra_op_pool.hpp"
#include "kernels/collectives/communicator.hpp"
#include "kernels/functors/pieces.hpp"

namespace weir::internal {

namespace {

// A box of a row-major tensor: where it starts in each dimension.
struct Box {
  const Shape* shape;
  std::vector<std::int64_t> start;
};

// Copies a box of `extent` elements per dimension from `src` to `dst` (both row-major, element
// size `bytes`); the innermost dimension is one memcpy.
void CopyBox(const std::byte* src, const Box& src_box, std::byte* dst, const Box& dst_box,
             const std::vector<std::int64_t>& extent, std::size_t bytes) {
  const std::size_t rank = extent.size();
  if (rank == 0) {
    std::memcpy(dst, src, bytes);
    return;
  }
  for (std::int64_t e : extent) {
    if (e == 0) return;
  }
  std::vector<std::int64_t> src_stride(rank, 1), dst_stride(rank, 1);
  for (std::size_t d = rank - 1; d-- > 0;) {
    src_stride[d] = src_stride[d + 1] * src_box.shape->Dims()[d + 1];
    dst_stride[d] = dst_stride[d + 1] * dst_box.shape->Dims()[d + 1];
  }
  std::vector<std::int64_t> index(rank, 0);
  const std::size_t row_bytes = static_cast<std::size_t>(extent[rank - 1]) * bytes;
  for (;;) {
    std::int64_t src_offset = 0, dst_offset = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      src_offset += (src_box.start[d] + index[d]) * src_stride[d];
      dst_offset += (dst_box.start[d] + index[d]) * dst_stride[d];
    }
    std::memcpy(dst + dst_offset * static_cast<std::int64_t>(bytes), src + src_offset * static_cast<std::int64_t>(bytes),
                row_bytes);
    std::size_t d = rank - 1;  // advance the index over every dimension but the innermost
    for (;;) {
      if (d == 0) return;
      --d;
      if (++index[d] < extent[d]) break;
      index[d] = 0;
    }
  }
}

std::vector<std::int64_t> Zeros(const Shape& shape) { return std::vector<std::int64_t>(shape.Rank(), 0); }

// Each input's data as T: the pieces ReducePiecesAt (kernels/functors/pieces.hpp) adds.
template <typename T> std::vector<const T*> PiecesOf(std::span<const ConstTensorView> inputs) {
  std::vector<const T*> pieces;
  for (const ConstTensorView& input : inputs) pieces.push_back(input.As<T>());
  return pieces;
}

template <typename T>
void ReduceRange(std::span<const ConstTensorView> inputs, T* out, std::int64_t begin, std::int64_t end, ReduceOp op) {
  const std::vector<const T*> pieces = PiecesOf<T>(inputs);
  const int count = static_cast<int>(pieces.size());
  // ReducePiecesAt reads every piece before the write: `out` may alias any input.
  for (std::int64_t i = begin; i < end; ++i) out[i] = ReducePiecesAt(pieces.data(), count, i, op == ReduceOp::kMean);
}

// out[begin, end) = op over every input's [begin, end).
void Reduce(std::span<const ConstTensorView> inputs, void* out, std::int64_t begin, std::int64_t end, ReduceOp op) {
  switch (inputs[0].GetDType()) {
    case DType::kF32: ReduceRange<float>(inputs, static_cast<float*>(out), begin, end, op); return;
    case DType::kF64: ReduceRange<double>(inputs, static_cast<double*>(out), begin, end, op); return;
    case DType::kI32: ReduceRange<std::int32_t>(inputs, static_cast<std::int32_t*>(out), begin, end, op); return;
    case DType::kI64: ReduceRange<std::int64_t>(inputs, static_cast<std::int64_t*>(out), begin, end, op); return;
    default:
      throw std::invalid_argument(fmt::format("[collective] reductions take f32, f64, i32 or i64, got {}",
                                              inputs[0].GetDType()));
  }
}

template <typename T>
void ReducePieceTyped(std::span<const ConstTensorView> inputs, T* out, int axis, int rank, ReduceOp op) {
  const Shape& shape = inputs[0].GetShape();
  const int devices = static_cast<int>(inputs.size());
  std::int64_t outer = 1;
  std::int64_t inner = 1;
  for (int d = 0; d < axis; ++d) outer *= shape[d];
  for (int d = axis + 1; d < shape.Rank(); ++d) inner *= shape[d];
  const std::int64_t extent = shape[axis];
  const std::int64_t begin = SplitBegin(extent, devices, rank) * inner;
  const std::int64_t rows = (SplitBegin(extent, devices, rank + 1) - SplitBegin(extent, devices, rank)) * inner;
  const std::vector<const T*> pieces = PiecesOf<T>(inputs);
  // One contiguous run of `rows` elements per outer index (one run in all for axis 0).
  for (std::int64_t o = 0; o < outer; ++o) {
    const std::int64_t from = o * extent * inner + begin;
    T* dst = out + o * rows;
    for (std::int64_t i = 0; i < rows; ++i) dst[i] = ReducePiecesAt(pieces.data(), devices, from + i, op == ReduceOp::kMean);
  }
}

class InProcessCommunicator final : public Communicator {
 public:
  explicit InProcessCommunicator(int devices) : devices_(devices) {
    if (devices < 1) throw std::invalid_argument(fmt::format("[collective] devices must be at least 1, got {}", devices));
  }

  std::string_view Backend() const override { return "in_process"; }
  int Size() const override { return devices_; }

  void AllReduce(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs, ReduceOp op) override {
    CheckRanks("all_reduce", inputs.size(), outputs.size());
    const std::int64_t n = inputs[0].NumElements();
    const std::size_t bytes = SizeOf(inputs[0].GetDType());
    // About 64 KiB a chunk: big enough to amortise a chunk's hand-off, small enough to use every core.
    const int chunks = static_cast<int>(std::clamp<std::int64_t>(n * static_cast<std::int64_t>(bytes) / 65536, 1, 64));
    ParallelFor(chunks, [&](int c) {
      const std::int64_t begin = ChunkBegin(n, chunks, c);
      const std::int64_t end = ChunkBegin(n, chunks, c + 1);
      Reduce(inputs, outputs[0].data, begin, end, op);
      for (std::size_t r = 1; r < outputs.size(); ++r) {
        if (outputs[r].data == outputs[0].data) continue;  // devices sharing one buffer
        std::memcpy(static_cast<std::byte*>(outputs[r].data) + begin * static_cast<std::int64_t>(bytes),
                    static_cast<const std::byte*>(outputs[0].data) + begin * static_cast<std::int64_t>(bytes),
                    static_cast<std::size_t>(end - begin) * bytes);
      }
    });
  }

  void ReduceScatter(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs, int axis,
                     ReduceOp op) override {
    CheckRanks("reduce_scatter", inputs.size(), outputs.size());
    const Shape& logical = inputs[0].GetShape();
    const std::size_t bytes = SizeOf(inputs[0].GetDType());
    // Reduce the whole tensor once, then cut it: piece r of a split is not contiguous in general.
    std::vector<std::byte> reduced(static_cast<std::size_t>(logical.NumElements()) * bytes);
    Reduce(inputs, reduced.data(), 0, logical.NumElements(), op);
    const Box whole{&logical, Zeros(logical)};
    for (int r = 0; r < devices_; ++r) {
      Box from = whole;
      from.start[static_cast<std::size_t>(axis)] = SplitBegin(logical[axis], devices_, r);
      const Shape& piece = outputs[static_cast<std::size_t>(r)].GetShape();
      CopyBox(reduced.data(), from, static_cast<std::byte*>(outputs[static_cast<std::size_t>(r)].data),
              {&piece, Zeros(piece)}, piece.Dims(), bytes);
    }
  }

  void AllGather(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs, int axis) override {
    CheckRanks("all_gather", inputs.size(), outputs.size());
    const Shape& logical = outputs[0].GetShape();
    const std::size_t bytes = SizeOf(inputs[0].GetDType());
    for (std::size_t r = 0; r < outputs.size(); ++r) {
      if (r > 0 && outputs[r].data == outputs[0].data) continue;
      for (int k = 0; k < devices_; ++k) {
        const Shape& piece = inputs[static_cast<std::size_t>(k)].GetShape();
        Box to{&logical, Zeros(logical)};
        to.start[static_cast<std::size_t>(axis)] = SplitBegin(logical[axis], devices_, k);
        CopyBox(static_cast<const std::byte*>(inputs[static_cast<std::size_t>(k)].data), {&piece, Zeros(piece)},
                static_cast<std::byte*>(outputs[r].data), to, piece.Dims(), bytes);
      }
    }
  }

  void AllToAll(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs, int in_axis,
                int out_axis) override {
    CheckRanks("all_to_all", inputs.size(), outputs.size());
    // The logical shape: the input pieces' shape with in_axis summed over ranks.
    std::vector<std::int64_t> dims = inputs[0].GetShape().Dims();
    dims[static_cast<std::size_t>(in_axis)] = 0;
    for (const ConstTensorView& input : inputs) dims[static_cast<std::size_t>(in_axis)] += input.GetShape()[in_axis];
    const Shape logical(dims);
    const std::size_t bytes = SizeOf(inputs[0].GetDType());
    for (int r = 0; r < devices_; ++r) {
      const Shape& out_shape = outputs[static_cast<std::size_t>(r)].GetShape();
      const std::int64_t out_begin = SplitBegin(logical[out_axis], devices_, r);
      for (int k = 0; k < devices_; ++k) {
        const Shape& in_shape = inputs[static_cast<std::size_t>(k)].GetShape();
        const std::int64_t in_begin = SplitBegin(logical[in_axis], devices_, k);
        // The block both pieces hold: input k's extent on in_axis, output r's on out_axis.
        std::vector<std::int64_t> extent = logical.Dims();
        extent[static_cast<std::size_t>(in_axis)] = in_shape[in_axis];
        extent[static_cast<std::size_t>(out_axis)] = out_shape[out_axis];
        if (in_axis == out_axis) {  // a plain re-split along one axis: the overlap of two ranges
          const std::int64_t lo = std::max(in_begin, out_begin);
          const std::int64_t hi = std::min(in_begin + in_shape[in_axis], out_begin + out_shape[out_axis]);
          if (hi <= lo) continue;
          extent[static_cast<std::size_t>(in_axis)] = hi - lo;
          Box from{&in_shape, Zeros(in_shape)};
          Box to{&out_shape, Zeros(out_shape)};
          from.start[static_cast<std::size_t>(in_axis)] = lo - in_begin;
          to.start[static_cast<std::size_t>(out_axis)] = lo - out_begin;
          CopyBox(static_cast<const std::byte*>(inputs[static_cast<std::size_t>(k)].data), from,
                  static_cast<std::byte*>(outputs[static_cast<std::size_t>(r)].data), to, extent, bytes);
          continue;
        }
        Box from{&in_shape, Zeros(in_shape)};
        Box to{&out_shape, Zeros(out_shape)};
        from.start[static_cast<std::size_t>(out_axis)] = out_begin;
        to.start[static_cast<std::size_t>(in_axis)] = in_begin;
        CopyBox(static_cast<const std::byte*>(inputs[static_cast<std::size_t>(k)].data), from,
                static_cast<std::byte*>(outputs[static_cast<std::size_t>(r)].data), to, extent, bytes);
      }
    }
  }

  void Scatter(const ConstTensorView& input, std::span<const TensorView> outputs, int axis) override {
    CheckRanks("scatter", static_cast<std::size_t>(devices_), outputs.size());
    const Shape& logical = input.GetShape();
    const std::size_t bytes = SizeOf(input.GetDType());
    for (int r = 0; r < devices_; ++r) {
      Box from{&logical, Zeros(logical)};
      from.start[static_cast<std::size_t>(axis)] = SplitBegin(logical[axis], devices_, r);
      const Shape& piece = outputs[static_cast<std::size_t>(r)].GetShape();
      CopyBox(static_cast<const std::byte*>(input.data), from, static_cast<std::byte*>(outputs[static_cast<std::size_t>(r)].data),
              {&piece, Zeros(piece)}, piece.Dims(), bytes);
    }
  }

  void Broadcast(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs, int root) override {
    CheckRanks("broadcast", inputs.size(), outputs.size());
    if (root < 0 || root >= devices_) {
      throw std::invalid_argument(fmt::format("[broadcast] root {} is not a rank of {} devices", root, devices_));
    }
    const ConstTensorView& source = inputs[static_cast<std::size_t>(root)];
    for (const TensorView& output : outputs) {
      if (output.data != source.data) {
        std::memcpy(output.data, source.data, source.NumElements() * SizeOf(source.GetDType()));
      }
    }
  }

  void SendRecv(const ConstTensorView& input, int from, const TensorView& output, int to) override {
    if (from < 0 || from >= devices_ || to < 0 || to >= devices_) {
      throw std::invalid_argument(fmt::format("[send_recv] ranks {} -> {} outside 0..{}", from, to, devices_ - 1));
    }
    if (output.data != input.data) std::memcpy(output.data, input.data, input.NumElements() * SizeOf(input.GetDType()));
  }

 private:
  void CheckRanks(std::string_view what, std::size_t inputs, std::size_t outputs) const {
    if (inputs != static_cast<std::size_t>(devices_) || outputs != static_cast<std::size_t>(devices_)) {
      throw std::invalid_argument(fmt::format("[{}] expects one input and one output per device ({}), got {} and {}",
                                              what, devices_, inputs, outputs));
    }
  }

  int devices_;
};

}  // namespace

void PackBox(const ConstTensorView& whole, std::span<const std::int64_t> start, std::span<const std::int64_t> extent,
             std::byte* packed) {
  const Shape box(std::vector<std::int64_t>(extent.begin(), extent.end()));
  CopyBox(static_cast<const std::byte*>(whole.data), {&whole.GetShape(), {start.begin(), start.end()}}, packed,
          {&box, Zeros(box)}, box.Dims(), SizeOf(whole.GetDType()));
}

void UnpackBox(const std::byte* packed, std::span<const std::int64_t> start, std::span<const std::int64_t> extent,
               const TensorView& whole) {
  const Shape box(std::vector<std::int64_t>(extent.begin(), extent.end()));
  CopyBox(packed, {&box, Zeros(box)}, static_cast<std::byte*>(whole.data), {&whole.GetShape(), {start.begin(), start.end()}},
          box.Dims(), SizeOf(whole.GetDType()));
}

PieceRows PieceRowsOf(const Shape& whole, int axis, int ranks, int rank, std::size_t element_bytes) {
  std::size_t outer = 1, inner = element_bytes;
  for (int d = 0; d < axis; ++d) outer *= static_cast<std::size_t>(whole[d]);
  for (int d = axis + 1; d < whole.Rank(); ++d) inner *= static_cast<std::size_t>(whole[d]);
  const std::int64_t begin = SplitBegin(whole[axis], ranks, rank);
  const std::int64_t end = SplitBegin(whole[axis], ranks, rank + 1);
  return {outer, static_cast<std::size_t>(end - begin) * inner, static_cast<std::size_t>(whole[axis]) * inner,
          static_cast<std::size_t>(begin) * inner};
}

void CopyPieceOut(const ConstTensorView& whole, int axis, int ranks, int rank, const TensorView& piece) {
  const Shape& logical = whole.GetShape();
  const Shape& shape = piece.GetShape();
  Box from{&logical, Zeros(logical)};
  from.start[static_cast<std::size_t>(axis)] = SplitBegin(logical[axis], ranks, rank);
  CopyBox(static_cast<const std::byte*>(whole.data), from, static_cast<std::byte*>(piece.data), {&shape, Zeros(shape)},
          shape.Dims(), SizeOf(whole.GetDType()));
}

void CopyPieceIn(const ConstTensorView& piece, int axis, int ranks, int rank, const TensorView& whole) {
  const Shape& logical = whole.GetShape();
  const Shape& shape = piece.GetShape();
  Box to{&logical, Zeros(logical)};
  to.start[static_cast<std::size_t>(axis)] = SplitBegin(logical[axis], ranks, rank);
  CopyBox(static_cast<const std::byte*>(piece.data), {&shape, Zeros(shape)}, static_cast<std::byte*>(whole.data), to,
          shape.Dims(), SizeOf(whole.GetDType()));
}

void ReducePiece(std::span<const ConstTensorView> inputs, const TensorView& output, int axis, int rank, ReduceOp op) {
  switch (inputs[0].GetDType()) {
    case DType::kF32: ReducePieceTyped<float>(inputs, output.As<float>(), axis, rank, op); return;
    case DType::kF64: ReducePieceTyped<double>(inputs, output.As<double>(), axis, rank, op); return;
    case DType::kI32: ReducePieceTyped<std::int32_t>(inputs, output.As<std::int32_t>(), axis, rank, op); return;
    case DType::kI64: ReducePieceTyped<std::int64_t>(inputs, output.As<std::int64_t>(), axis, rank, op); return;
    default:
      throw std::invalid_argument(fmt::format("[reduce_scatter] takes f32, f64, i32 or i64, got {}", inputs[0].GetDType()));
  }
}

std::unique_ptr<Communicator> MakeInProcessCommunicator(int devices) {
  return std::make_unique<InProcessCommunicator>(devices);
}

}  // namespace weir::internal
