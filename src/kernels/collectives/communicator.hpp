#pragma once
// Collectives over the pieces of one logical blob that several devices hold. One collective actor
// per process owns the pieces of every local device and issues one call for all of them, so every
// device takes part in the collectives in the plan's order (the planner chains them with control
// edges: the rule that keeps NCCL and Gloo from deadlocking). Backends: in-process shared memory
// here; Gloo between processes and NCCL between GPUs implement the same interface.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "common/split.hpp"
#include "common/tensor_meta.hpp"

namespace weir::internal {

enum class ReduceOp : std::uint8_t { kSum, kMean };

class Communicator {
 public:
  virtual ~Communicator() = default;
  /// "in_process", later "gloo" or "nccl".
  virtual std::string_view Backend() const = 0;
  /// Devices taking part.
  virtual int Size() const = 0;

  // Every method takes one view per device in rank order. Outputs may alias each other (devices
  // sharing memory read one buffer) or their own rank's input.

  /// outputs[r] = op over every inputs[k] (all of one shape and dtype).
  virtual void AllReduce(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs, ReduceOp op) = 0;
  /// outputs[r] = piece r (split along `axis`) of op over every inputs[k].
  virtual void ReduceScatter(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs, int axis,
                             ReduceOp op) = 0;
  /// outputs[r] = the concatenation of every inputs[k] along `axis`.
  virtual void AllGather(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs, int axis) = 0;
  /// inputs[k] are the pieces of one logical tensor split along `in_axis`; outputs[r] become its
  /// pieces split along `out_axis`.
  virtual void AllToAll(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs, int in_axis,
                        int out_axis) = 0;
  /// outputs[r] = piece r of `input` split along `axis` (one device's whole tensor to many).
  virtual void Scatter(const ConstTensorView& input, std::span<const TensorView> outputs, int axis) = 0;
  /// outputs[r] = inputs[root] (the other inputs are not read).
  virtual void Broadcast(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs, int root) = 0;
  /// Point to point: the piece of rank `from` to rank `to`.
  virtual void SendRecv(const ConstTensorView& input, int from, const TensorView& output, int to) = 0;
};

/// In shared memory: `output` = piece `rank` (split along `axis` over inputs.size() devices) of op over
/// every input. Each device computes its own piece of a reduce-scatter this way, all at once.
void ReducePiece(std::span<const ConstTensorView> inputs, const TensorView& output, int axis, int rank, ReduceOp op);

/// `piece` = piece `rank` of `whole` split `ranks` ways along `axis`.
void CopyPieceOut(const ConstTensorView& whole, int axis, int ranks, int rank, const TensorView& piece);
/// Writes `piece`, piece `rank` of a tensor split `ranks` ways along `axis`, to its place in `whole`.
void CopyPieceIn(const ConstTensorView& piece, int axis, int ranks, int rank, const TensorView& whole);

/// The box of `whole` that starts at `start` and spans `extent` elements in each dimension, packed
/// row-major into `packed` (PackBox), or written back from it (UnpackBox): the blocks an exchange
/// between processes sends.
void PackBox(const ConstTensorView& whole, std::span<const std::int64_t> start, std::span<const std::int64_t> extent,
             std::byte* packed);
void UnpackBox(const std::byte* packed, std::span<const std::int64_t> start, std::span<const std::int64_t> extent,
               const TensorView& whole);

/// Piece `rank` of a row-major tensor of shape `whole` split `ranks` ways along `axis`, as rows of
/// bytes: `rows` rows of `piece_row` bytes each, `whole_row` bytes apart in the whole tensor (and packed
/// in the piece), the first at byte `offset` of the whole. What a 2-D copy (cudaMemcpy2DAsync) needs to
/// cut a piece out of device memory or put it back: the CUDA collectives' CopyPieceOut/CopyPieceIn.
struct PieceRows {
  std::size_t rows = 0;
  std::size_t piece_row = 0;
  std::size_t whole_row = 0;
  std::size_t offset = 0;
};
PieceRows PieceRowsOf(const Shape& whole, int axis, int ranks, int rank, std::size_t element_bytes);

/// The shared-memory backend between the devices of this process: every collective reads the
/// pieces where they are and writes the results once (no staging copies beyond the reduction).
/// Reductions are split over the intra-op pool.
std::unique_ptr<Communicator> MakeInProcessCommunicator(int devices);

}  // namespace weir::internal
