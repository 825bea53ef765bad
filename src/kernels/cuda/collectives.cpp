// The collective actors' kernels on CUDA. Between processes (one or more GPUs each) the collectives
// are NCCL's, queued on the GPU's collective stream through the job's DeviceProcessGroup
// (distributed/nccl_process_group.hpp): an all-reduce is NCCL's, a gather is one broadcast from every
// process at once (pieces of any size), a reduce-scatter an all-reduce then a cut, and a scatter moves
// no bytes. Between several GPUs of one process the planner has copied every piece onto the
// collective's GPU (graph/planner/device_copies.hpp), so combining them is a reduction in piece order
// (kernels/functors/pieces.hpp, the CPU's shared-memory math) or 2-D copies; the results go back to
// each GPU through copies again. Pieces are cut out and put back with 2-D copies whose geometry
// (PieceRowsOf) the host tests check against the CPU's copies. Compiled, not yet run on a GPU.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/collectives/collective_attrs.hpp"
#include "kernels/collectives/process_group.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"

namespace weir::internal {
namespace {

// piece = piece `rank` of `whole` (shape `logical`) split `ranks` ways along `axis`, or back.
void CutPiece(void* stream, const void* whole, const TensorMeta& logical, int axis, int ranks, int rank, void* piece) {
  const PieceRows rows = PieceRowsOf(logical.shape, axis, ranks, rank, SizeOf(logical.dtype));
  cuda::CopyRows(stream, piece, rows.piece_row, static_cast<const std::byte*>(whole) + rows.offset, rows.whole_row,
                 rows.piece_row, rows.rows);
}

void PutPiece(void* stream, const void* piece, const TensorMeta& logical, int axis, int ranks, int rank, void* whole) {
  const PieceRows rows = PieceRowsOf(logical.shape, axis, ranks, rank, SizeOf(logical.dtype));
  cuda::CopyRows(stream, static_cast<std::byte*>(whole) + rows.offset, rows.whole_row, piece, rows.piece_row,
                 rows.piece_row, rows.rows);
}

// The shape of the tensor whose pieces along `axis` the metas are.
Shape JoinedShape(std::span<const TensorMeta> pieces, int axis) {
  std::vector<std::int64_t> dims = pieces[0].shape.Dims();
  dims.at(static_cast<std::size_t>(axis)) = 0;
  for (const TensorMeta& piece : pieces) dims[static_cast<std::size_t>(axis)] += piece.shape[axis];
  return Shape(dims);
}

// out = the sum (mean) of `pieces`, in piece order, on the stream's GPU.
void ReducePiecesOf(void* stream, std::span<const ConstTensorView> pieces, ReduceOp op, const TensorView& out) {
  const bool mean = op == ReduceOp::kMean;
  const int count = static_cast<int>(pieces.size());
  const std::int64_t elements = out.meta->shape.NumElements();
  auto reduce = [&]<typename T>(T*) {
    std::vector<const T*> data;
    for (const ConstTensorView& piece : pieces) data.push_back(piece.As<T>());
    cuda::ReducePieces<T>(stream, data.data(), count, mean, static_cast<T*>(out.data), elements);
  };
  switch (out.meta->dtype) {
    case DType::kF32: reduce(static_cast<float*>(nullptr)); return;
    case DType::kF64: reduce(static_cast<double*>(nullptr)); return;
    case DType::kI32: reduce(static_cast<std::int32_t*>(nullptr)); return;
    case DType::kI64: reduce(static_cast<std::int64_t*>(nullptr)); return;
    default: throw std::invalid_argument(fmt::format("[collective] reductions take f32, f64, i32 or i64, got {}", out.meta->dtype));
  }
}

class NcclCollectiveCuda final : public Kernel {
 public:
  NcclCollectiveCuda(const KernelSetup& setup, CollectiveKind kind)
      : kind_(kind), op_type_(setup.op_type), name_(setup.op_name), attrs_(setup.Get<CollectiveAttrs>()),
        stream_(CudaStreamOf(setup)), group_(dynamic_cast<DeviceProcessGroup*>(setup.processes)),
        bytes_(setup.outputs.empty() ? 0 : setup.outputs[0].NumBytes()) {
    const bool spread = !attrs_.process_pieces.empty();
    if (attrs_.rank >= 0) {
      throw std::invalid_argument(fmt::format(
          "[{}] '{}': one device's part of a reduce-scatter reads every device's piece where it is, which GPUs do not "
          "share; on GPUs a reduce-scatter is one collective actor", op_type_, name_));
    }
    if (attrs_.tensors > 1 && (spread || kind_ != CollectiveKind::kAllReduce)) {
      throw std::invalid_argument(fmt::format("[{}] '{}': only an all-reduce averages several tensors (a fusion bucket) "
                                              "on a GPU", op_type_, name_));
    }
    const bool reduces = kind_ == CollectiveKind::kAllReduce || kind_ == CollectiveKind::kReduceScatter;
    if (reduces && attrs_.devices > kMaxReducedPieces) {
      throw std::invalid_argument(fmt::format("[{}] '{}': a reduction on a GPU combines at most {} GPUs' pieces, got {}",
                                              op_type_, name_, kMaxReducedPieces, attrs_.devices));
    }
    if (attrs_.devices > 1 && !spread) {  // several GPUs of this process: every piece on this GPU
      if (kind_ == CollectiveKind::kReduceScatter) {
        logical_ = setup.inputs[0];
      } else if (kind_ == CollectiveKind::kAllToAll) {
        logical_ = {JoinedShape(setup.inputs, attrs_.axis), setup.inputs[0].dtype};
      }
      if (kind_ == CollectiveKind::kReduceScatter || kind_ == CollectiveKind::kAllToAll) whole_.emplace(setup.device.index, logical_.NumBytes());
    }
    const bool needs_group = kind_ == CollectiveKind::kTransfer || spread || attrs_.across_processes;
    if (needs_group && group_ == nullptr) {
      throw std::invalid_argument(fmt::format("[{}] '{}' on a GPU needs the session's NCCL group (a session of several "
                                              "processes, each on a GPU)", op_type_, name_));
    }
    if (!spread) return;
    // Spread over the processes: one piece in each (one GPU per process), `devices` pieces in all.
    const int size = group_->Size();
    rank_ = group_->Rank();
    if (static_cast<int>(attrs_.process_pieces.size()) != size + 1 || attrs_.devices != size) {
      throw std::invalid_argument(fmt::format("[{}] '{}': {} pieces over {} processes; on GPUs each process holds one",
                                              op_type_, name_, attrs_.devices, size));
    }
    logical_ = {attrs_.logical, setup.outputs[0].dtype};
    if (kind_ == CollectiveKind::kAllGather || kind_ == CollectiveKind::kAllToAll) {
      // Every process's piece, packed one after the other, for the one group of broadcasts.
      std::size_t offset = 0;
      for (int q = 0; q < size; ++q) {
        packed_offsets_.push_back(offset);
        packed_metas_.push_back({Shape{static_cast<std::int64_t>(
                                     TensorMeta{SplitShape(attrs_.logical, attrs_.axis, size, q), logical_.dtype}.NumBytes())},
                                 DType::kU8});
        offset += packed_metas_.back().NumBytes();
      }
      packed_.emplace(setup.device.index, offset);
    }
    if (kind_ == CollectiveKind::kReduceScatter || kind_ == CollectiveKind::kAllToAll) whole_.emplace(setup.device.index, logical_.NumBytes());
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (kind_ == CollectiveKind::kTransfer) {
      // From the maker's process to the ones that read it: point to point, or a broadcast when every
      // process does (see the CPU's TransferKernel).
      const int rank = group_->Rank();
      if (attrs_.readers.empty()) {
        if (rank == attrs_.root) cuda::CopyOnDevice(stream_, outputs[0].data, inputs[0].data, bytes_);
        group_->Broadcast(outputs[0], attrs_.root, stream_, name_);
      } else if (rank == attrs_.root) {
        for (int reader : attrs_.readers) group_->Send(inputs[0], reader, stream_, name_);
      } else if (std::find(attrs_.readers.begin(), attrs_.readers.end(), rank) != attrs_.readers.end()) {
        group_->Recv(outputs[0], attrs_.root, stream_, name_);
      }
    } else if (!attrs_.process_pieces.empty()) {
      RunSpread(inputs[0], outputs[0]);
    } else if (attrs_.devices > 1) {
      RunLocal(inputs, outputs);
    } else if (attrs_.across_processes) {  // the mirrored view's average over the processes
      // A fusion bucket is one actor: its gradients' all-reduces queue on the stream back to back.
      for (std::size_t t = 0; t < outputs.size(); ++t) group_->AllReduce(inputs[t], outputs[t], attrs_.op, stream_, name_);
    } else {  // one device: every collective of one piece is that piece
      cuda::CopyOnDevice(stream_, outputs[0].data, inputs[0].data, bytes_);
    }
  }

  void AfterCompletion() override {
    if (group_ != nullptr) group_->ThrowIfFailed(name_);
  }

  // NCCL's calls are watched through events the group records behind them, and a first call may
  // connect the peers: not work a CUDA graph can replay.
  bool Capturable() const override { return false; }

 private:
  void RunSpread(const ConstTensorView& input, const TensorView& output) {
    const int size = group_->Size();
    if (kind_ == CollectiveKind::kAllReduce) {
      group_->AllReduce(input, output, attrs_.op, stream_, name_);
    } else if (kind_ == CollectiveKind::kAllGather) {
      Gather(input, output.data);
    } else if (kind_ == CollectiveKind::kReduceScatter) {
      const TensorView whole{whole_->As<void>(), &logical_};
      group_->AllReduce(input, whole, attrs_.op, stream_, name_);
      CutPiece(stream_, whole.data, logical_, attrs_.axis, size, rank_, output.data);
    } else if (kind_ == CollectiveKind::kAllToAll) {
      Gather(input, whole_->As<void>());
      CutPiece(stream_, whole_->As<void>(), logical_, attrs_.out_axis, size, rank_, output.data);
    } else {  // scatter: every process holds the whole input and keeps its own piece
      CutPiece(stream_, input.data, logical_, attrs_.axis, size, rank_, output.data);
    }
  }

  // The pieces of this process's GPUs, all on this GPU, combined as the CPU's communicator combines
  // them (kernels/collectives/collective.cpp); across processes, each result is then all-reduced.
  void RunLocal(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) {
    const int k = attrs_.devices;
    if (kind_ == CollectiveKind::kAllReduce) {
      for (std::size_t t = 0; t < outputs.size(); ++t) {
        ReducePiecesOf(stream_, inputs.subspan(t * static_cast<std::size_t>(k), static_cast<std::size_t>(k)), attrs_.op,
                       outputs[t]);
        if (attrs_.across_processes) AcrossProcesses(outputs[t]);
      }
    } else if (kind_ == CollectiveKind::kAllGather) {  // one whole output
      for (int r = 0; r < k; ++r) {
        PutPiece(stream_, inputs[static_cast<std::size_t>(r)].data, *outputs[0].meta, attrs_.axis, k, r, outputs[0].data);
      }
    } else if (kind_ == CollectiveKind::kReduceScatter) {  // k whole addends, a piece of the sum per GPU
      const TensorView whole{whole_->As<void>(), &logical_};
      ReducePiecesOf(stream_, inputs, attrs_.op, whole);
      if (attrs_.across_processes) AcrossProcesses(whole);
      for (int r = 0; r < k; ++r) {
        CutPiece(stream_, whole.data, logical_, attrs_.axis, k, r, outputs[static_cast<std::size_t>(r)].data);
      }
    } else if (kind_ == CollectiveKind::kAllToAll) {
      for (int r = 0; r < k; ++r) {
        PutPiece(stream_, inputs[static_cast<std::size_t>(r)].data, logical_, attrs_.axis, k, r, whole_->As<void>());
      }
      for (int r = 0; r < k; ++r) {
        CutPiece(stream_, whole_->As<void>(), logical_, attrs_.out_axis, k, r, outputs[static_cast<std::size_t>(r)].data);
      }
    } else if (kind_ == CollectiveKind::kScatter) {  // one whole input, a piece per GPU
      for (int r = 0; r < k; ++r) {
        CutPiece(stream_, inputs[0].data, *inputs[0].meta, attrs_.axis, k, r, outputs[static_cast<std::size_t>(r)].data);
      }
    } else {
      throw std::invalid_argument(fmt::format("[{}] '{}': no collective of that name between GPUs", op_type_, name_));
    }
  }

  // In place over the processes: the mean of the processes' means is the mean over every GPU.
  void AcrossProcesses(const TensorView& value) {
    group_->AllReduce(ConstTensorView{value.data, value.meta}, value, attrs_.op, stream_, name_);
  }

  // whole = every process's piece along attrs_.axis: each broadcasts its piece, all at once.
  void Gather(const ConstTensorView& piece, void* whole) {
    std::vector<TensorView> parts;
    for (std::size_t q = 0; q < packed_metas_.size(); ++q) {
      parts.push_back({packed_->As<std::byte>(packed_offsets_[q]), &packed_metas_[q]});
    }
    cuda::CopyOnDevice(stream_, parts[static_cast<std::size_t>(rank_)].data, piece.data, piece.meta->NumBytes());
    group_->BroadcastEach(parts, stream_, name_);
    for (std::size_t q = 0; q < parts.size(); ++q) {
      PutPiece(stream_, parts[q].data, logical_, attrs_.axis, static_cast<int>(parts.size()), static_cast<int>(q), whole);
    }
  }

  CollectiveKind kind_;
  std::string op_type_;
  std::string name_;
  CollectiveAttrs attrs_;
  void* stream_;
  DeviceProcessGroup* group_;
  std::size_t bytes_;
  int rank_ = 0;
  TensorMeta logical_;
  std::vector<std::size_t> packed_offsets_;
  std::vector<TensorMeta> packed_metas_;
  std::optional<DeviceScratch> packed_;  // every process's piece (gathers)
  std::optional<DeviceScratch> whole_;   // the whole tensor (reduce_scatter, all_to_all)
};

template <CollectiveKind kKind> std::unique_ptr<Kernel> MakeNcclCollective(const KernelSetup& setup) {
  return std::make_unique<NcclCollectiveCuda>(setup, kKind);
}

}  // namespace

WEIR_REGISTER_KERNELS {
  for (const CollectiveOpType& op : kCollectiveOpTypes) {
    VisitCollectiveKind(op.kind, [&]<CollectiveKind kKind>() {
      for (DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
        RegisterKernel({op.op_type, Device::Kind::kCuda, dtype}, &MakeNcclCollective<kKind>);
      }
      if (!op.moves_bytes) return;
      for (DType dtype : kByteDTypes) RegisterKernel({op.op_type, Device::Kind::kCuda, dtype}, &MakeNcclCollective<kKind>);
    });
  }
}

}  // namespace weir::internal
