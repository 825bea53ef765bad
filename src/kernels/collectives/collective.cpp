// The kernels of the collective actors: every device's piece in, through the in-process
// communicator. A result every device reads whole (all_reduce, all_gather) is one buffer, which
// the devices of this process share; split results are one piece per device. A collective across
// processes then all-reduces each result over the process group. A consistent job's collective whose
// pieces are spread over the processes gets its own pieces only and exchanges the rest with the others.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "kernels/collectives/collective_attrs.hpp"
#include "kernels/collectives/commit.hpp"
#include "kernels/collectives/process_group.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {

namespace {

// The session's group for collectives on host memory; null in a one-process session. A job's CPU
// collectives never get a device group (a session on GPUs plans its collectives on the GPU).
HostProcessGroup* HostGroupOf(const KernelSetup& setup) {
  if (setup.processes == nullptr) return nullptr;
  auto* group = dynamic_cast<HostProcessGroup*>(setup.processes);
  if (group == nullptr) {
    throw std::invalid_argument(fmt::format("[{}] '{}' runs on the CPU, but the job's process group ({}) works on GPUs",
                                            setup.op_type, setup.op_name, setup.processes->Backend()));
  }
  return group;
}

// Before each collective across processes every process says whether its call failed before it (a
// label out of range in its part of the batch): a flag per rank, summed over the group, so that every
// process gets the same flags. A call that failed anywhere then skips the collective's data
// everywhere, and fails where it had not, naming the processes where it did: no process goes on with
// a collective the others left, so the processes' collectives stay paired call for call, and none
// applies updates computed from another's failed part.
class CallOutcome {
 public:
  explicit CallOutcome(HostProcessGroup* group)
      : group_(group), flags_(group != nullptr ? static_cast<std::size_t>(group->Size()) : 0),
        meta_{Shape{static_cast<std::int64_t>(flags_.size())}, DType::kI64} {}

  /// Whether the call failed in some process (the same answer everywhere); throws KernelError naming
  /// the processes where it did when it had not failed in this one.
  bool FailedAnywhere(bool failed_here, std::string_view op_type, std::string_view name) {
    // After a collective of the group failed (a lost peer, a timeout) the processes no longer agree on
    // which collective comes next: asking would only wait out the timeout again.
    if (group_->FailedFlag()->load(std::memory_order_relaxed)) {
      if (failed_here) return true;
      throw std::runtime_error(fmt::format("[{}] '{}': an earlier collective between the processes failed (its error "
                                           "says why); this process group takes no more", op_type, name));
    }
    std::fill(flags_.begin(), flags_.end(), 0);
    flags_[static_cast<std::size_t>(group_->Rank())] = failed_here ? 1 : 0;
    group_->AllReduce({flags_.data(), &meta_}, ReduceOp::kSum, name);
    if (std::all_of(flags_.begin(), flags_.end(), [](std::int64_t flag) { return flag == 0; })) return false;
    if (failed_here) return true;
    std::string ranks;
    for (std::size_t r = 0; r < flags_.size(); ++r) {
      if (flags_[r] != 0) ranks += fmt::format("{}{}", ranks.empty() ? "" : ", ", r);
    }
    throw KernelError(fmt::format("[{}] '{}': the call failed in process rank {} (its error is there); this process "
                                  "stops it too, so that no process applies its updates", op_type, name, ranks));
  }

 private:
  HostProcessGroup* group_;
  std::vector<std::int64_t> flags_;
  TensorMeta meta_;
};

class CollectiveKernel final : public Kernel {
 public:
  CollectiveKernel(const KernelSetup& setup, CollectiveKind kind)
      : kind_(kind), op_type_(setup.op_type), name_(setup.op_name), attrs_(setup.Get<CollectiveAttrs>()),
        communicator_(MakeInProcessCommunicator(attrs_.devices)),
        outputs_(static_cast<std::size_t>(attrs_.devices)), processes_(HostGroupOf(setup)), outcome_(processes_) {
    if (attrs_.across_processes && (processes_ == nullptr || attrs_.rank >= 0 ||
                                    (kind_ != CollectiveKind::kAllReduce && kind_ != CollectiveKind::kReduceScatter))) {
      throw std::invalid_argument(fmt::format(
          "[{}] '{}': only a whole all_reduce or reduce_scatter actor reduces across processes, and only in a "
          "session of several processes", op_type_, name_));
    }
    const auto tensors = static_cast<std::size_t>(attrs_.tensors);
    if (tensors > 1) {
      if (kind_ != CollectiveKind::kAllReduce || setup.outputs.size() != tensors ||
          setup.inputs.size() != tensors * static_cast<std::size_t>(attrs_.devices)) {
        throw std::invalid_argument(fmt::format(
            "[{}] '{}': a fusion bucket is an all_reduce of {} tensors: {} inputs and {} outputs expected, got {} and {}",
            op_type_, name_, tensors, tensors * static_cast<std::size_t>(attrs_.devices), tensors, setup.inputs.size(),
            setup.outputs.size()));
      }
    }
    // The outputs an actor reduces across the processes (a fusion bucket's tensors, a reduce-scatter's
    // pieces): the small ones cross packed into one buffer (one collective instead of a latency each),
    // larger ones in place, where copying would cost more than it saves (HostProcessGroup::
    // PackBelowBytes: 256 KiB through shared memory, 4 MiB through Gloo).
    if (!attrs_.across_processes) return;
    std::size_t packed = 0;
    for (std::size_t t = 0; t < setup.outputs.size(); ++t) {
      const TensorMeta& meta = setup.outputs[t];
      if (meta.dtype != setup.outputs[0].dtype) {
        throw std::invalid_argument(fmt::format("[{}] '{}': the outputs of one actor have one dtype, got {} and {}",
                                                op_type_, name_, setup.outputs[0].dtype, meta.dtype));
      }
      if (meta.NumBytes() == 0) continue;  // nothing to reduce
      if (meta.NumBytes() < processes_->PackBelowBytes()) {
        packed_tensors_.push_back(t);
        packed += meta.NumBytes();
      } else {
        in_place_tensors_.push_back(t);
      }
    }
    if (packed_tensors_.size() == 1) {  // packing one tensor saves no collective
      in_place_tensors_.insert(std::lower_bound(in_place_tensors_.begin(), in_place_tensors_.end(), packed_tensors_.front()),
                               packed_tensors_.front());
      packed_tensors_.clear();
      packed = 0;
    }
    packed_meta_ = {Shape{static_cast<std::int64_t>(packed / SizeOf(setup.outputs[0].dtype))}, setup.outputs[0].dtype};
    packed_.resize(packed);
  }

  bool JoinsPeersInFailedCalls() const override { return attrs_.across_processes; }
  void RunFailedCall(std::span<const ConstTensorView>, std::span<const TensorView>) override {
    outcome_.FailedAnywhere(true, op_type_, name_);
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (attrs_.across_processes) outcome_.FailedAnywhere(false, op_type_, name_);
    if (attrs_.rank >= 0) {  // this device's piece of a reduce-scatter, computed on its own stream
      ReducePiece(inputs, outputs[0], attrs_.axis, attrs_.rank, attrs_.op);
      return;
    }
    if (kind_ == CollectiveKind::kAllReduce) {
      // Each tensor's pieces into its one output, which every device of this process reads.
      const auto devices = static_cast<std::size_t>(attrs_.devices);
      for (std::size_t t = 0; t < outputs.size(); ++t) {
        std::fill(outputs_.begin(), outputs_.end(), outputs[t]);
        communicator_->AllReduce(inputs.subspan(t * devices, devices), outputs_, attrs_.op);
      }
      if (attrs_.across_processes) AllReduceAcrossProcesses(outputs);
      return;
    }
    // One output shared by every device, or one per device.
    for (std::size_t r = 0; r < outputs_.size(); ++r) outputs_[r] = outputs[outputs.size() == 1 ? 0 : r];
    if (kind_ == CollectiveKind::kAllGather) {
      communicator_->AllGather(inputs, outputs_, attrs_.axis);
    } else if (kind_ == CollectiveKind::kReduceScatter) {
      communicator_->ReduceScatter(inputs, outputs_, attrs_.axis, attrs_.op);
    } else if (kind_ == CollectiveKind::kAllToAll) {
      communicator_->AllToAll(inputs, outputs_, attrs_.axis, attrs_.out_axis);
    } else {  // scatter: one whole input, a piece per device
      communicator_->Scatter(inputs[0], outputs_, attrs_.axis);
    }
    if (attrs_.across_processes) AllReduceAcrossProcesses(outputs);
  }

 private:
  void AllReduceAcrossProcesses(std::span<const TensorView> outputs) {
    if (!packed_tensors_.empty()) {
      std::size_t offset = 0;
      for (std::size_t t : packed_tensors_) {
        std::memcpy(packed_.data() + offset, outputs[t].data, outputs[t].meta->NumBytes());
        offset += outputs[t].meta->NumBytes();
      }
      processes_->AllReduce({packed_.data(), &packed_meta_}, attrs_.op, name_);
      offset = 0;
      for (std::size_t t : packed_tensors_) {
        std::memcpy(outputs[t].data, packed_.data() + offset, outputs[t].meta->NumBytes());
        offset += outputs[t].meta->NumBytes();
      }
    }
    for (std::size_t t : in_place_tensors_) processes_->AllReduce(outputs[t], attrs_.op, name_);
  }

  CollectiveKind kind_;
  std::string op_type_;
  std::string name_;
  CollectiveAttrs attrs_;
  std::unique_ptr<Communicator> communicator_;
  std::vector<TensorView> outputs_;
  HostProcessGroup* processes_;
  CallOutcome outcome_;
  // The outputs that cross the processes packed into one buffer, and those that cross in place (one
  // collective each); an empty output crosses not at all.
  std::vector<std::size_t> packed_tensors_;
  std::vector<std::size_t> in_place_tensors_;
  TensorMeta packed_meta_;
  std::vector<std::byte> packed_;
};

// A collective of a consistent job whose pieces are spread over the processes (process_pieces): this
// process's actor holds pieces [first, first + local) of `devices`. An all-gather goes through one
// broadcast per process (of that process's pieces, packed); an all-reduce sums this process's pieces,
// then all-reduces the sum over the processes. An all-to-all and a reduce-scatter exchange blocks in a
// ring of steps (each process sends each other process only what that one needs: the ideal bytes). No
// bytes move for a scatter: every process slices its own pieces.
class SplitOverProcessesKernel final : public Kernel {
 public:
  SplitOverProcessesKernel(const KernelSetup& setup, CollectiveKind kind)
      : kind_(kind), op_type_(setup.op_type), name_(setup.op_name), attrs_(setup.Get<CollectiveAttrs>()),
        processes_(HostGroupOf(setup)), outcome_(processes_) {
    if (processes_ == nullptr || static_cast<int>(attrs_.process_pieces.size()) != processes_->Size() + 1) {
      throw std::invalid_argument(fmt::format("[{}] '{}': its pieces are spread over {} processes, but the session has {}",
                                              op_type_, name_, static_cast<int>(attrs_.process_pieces.size()) - 1,
                                              processes_ == nullptr ? 1 : processes_->Size()));
    }
    rank_ = processes_->Rank();
    first_ = attrs_.process_pieces[static_cast<std::size_t>(rank_)];
    logical_ = {attrs_.logical, setup.inputs[0].dtype};
    if (kind_ == CollectiveKind::kAllToAll || kind_ == CollectiveKind::kReduceScatter) PlanExchanges();
    if (kind_ == CollectiveKind::kAllGather) {
      // The pieces' metas, and each process's pieces packed for its broadcast.
      std::size_t most = 0;
      for (int q = 0; q < processes_->Size(); ++q) {
        std::size_t bytes = 0;
        for (int p = attrs_.process_pieces[static_cast<std::size_t>(q)]; p < attrs_.process_pieces[static_cast<std::size_t>(q) + 1]; ++p) {
          piece_metas_.push_back({SplitShape(attrs_.logical, attrs_.axis, attrs_.devices, p), logical_.dtype});
          bytes += piece_metas_.back().NumBytes();
        }
        packed_metas_.push_back({Shape{static_cast<std::int64_t>(bytes)}, DType::kU8});
        most = std::max(most, bytes);
      }
      packed_.resize(most);
    }
    if (kind_ == CollectiveKind::kReduceScatter || kind_ == CollectiveKind::kAllToAll) whole_.resize(logical_.NumBytes());
    if (kind_ == CollectiveKind::kAllReduce || kind_ == CollectiveKind::kReduceScatter) {
      local_ = MakeInProcessCommunicator(static_cast<int>(setup.inputs.size()));
    }
  }

  bool JoinsPeersInFailedCalls() const override { return true; }
  void RunFailedCall(std::span<const ConstTensorView>, std::span<const TensorView>) override {
    outcome_.FailedAnywhere(true, op_type_, name_);
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    outcome_.FailedAnywhere(false, op_type_, name_);
    const TensorView whole{whole_.data(), &logical_};
    if (kind_ == CollectiveKind::kAllReduce) {
      Sum(inputs, outputs[0]);
    } else if (kind_ == CollectiveKind::kAllGather) {
      Gather(inputs, outputs[0]);
    } else if (kind_ == CollectiveKind::kReduceScatter) {
      ReduceScatter(inputs, whole);
      Pieces({whole.data, whole.meta}, attrs_.axis, outputs);
    } else if (kind_ == CollectiveKind::kAllToAll) {
      for (std::size_t j = 0; j < inputs.size(); ++j) CopyPieceIn(inputs[j], attrs_.axis, attrs_.devices, first_ + static_cast<int>(j), whole);
      Exchange(whole, [&](const Block& in, const std::byte* packed) { UnpackBox(packed, in.start, in.extent, whole); });
      Pieces({whole.data, whole.meta}, attrs_.out_axis, outputs);
    } else {  // scatter
      Pieces(inputs[0], attrs_.axis, outputs);
    }
  }

 private:
  // A box of the logical tensor: what one process sends another in an exchange.
  struct Block {
    std::vector<std::int64_t> start;
    std::vector<std::int64_t> extent;
    std::size_t bytes = 0;
  };

  // The rows [begin, end) along `axis` that process q's pieces cover.
  std::pair<std::int64_t, std::int64_t> RangeOf(int q, int axis) const {
    const std::int64_t extent = attrs_.logical[axis];
    return {SplitBegin(extent, attrs_.devices, attrs_.process_pieces[static_cast<std::size_t>(q)]),
            SplitBegin(extent, attrs_.devices, attrs_.process_pieces[static_cast<std::size_t>(q) + 1])};
  }

  // What process `from` sends process `to`: all_to_all, the part of `from`'s input pieces (along axis)
  // in `to`'s output pieces (along out_axis); reduce_scatter, `from`'s sum over `to`'s output pieces.
  Block BlockOf(int from, int to) const {
    Block block{std::vector<std::int64_t>(static_cast<std::size_t>(attrs_.logical.Rank()), 0), attrs_.logical.Dims(), 0};
    auto narrow = [&](int axis, std::pair<std::int64_t, std::int64_t> range) {
      const auto d = static_cast<std::size_t>(axis);
      const std::int64_t begin = std::max(block.start[d], range.first);
      const std::int64_t end = std::min(block.start[d] + block.extent[d], range.second);
      block.start[d] = begin;
      block.extent[d] = std::max<std::int64_t>(0, end - begin);
    };
    if (kind_ == CollectiveKind::kAllToAll) {
      narrow(attrs_.axis, RangeOf(from, attrs_.axis));
      narrow(attrs_.out_axis, RangeOf(to, attrs_.out_axis));
    } else {
      narrow(attrs_.axis, RangeOf(to, attrs_.axis));
    }
    std::int64_t elements = 1;
    for (std::int64_t e : block.extent) elements *= e;
    block.bytes = static_cast<std::size_t>(elements) * SizeOf(logical_.dtype);
    return block;
  }

  // The blocks of each step of the exchange, and buffers for the largest.
  void PlanExchanges() {
    const int size = processes_->Size();
    std::size_t most = 0;
    for (int step = 1; step < size; ++step) {
      sends_.push_back(BlockOf(rank_, (rank_ + step) % size));
      receives_.push_back(BlockOf((rank_ - step + size) % size, rank_));
      most = std::max({most, sends_.back().bytes, receives_.back().bytes});
    }
    mine_ = BlockOf(rank_, rank_);
    outgoing_.resize(most);
    incoming_.resize(most);
    if (kind_ == CollectiveKind::kReduceScatter) own_.resize(mine_.bytes);
  }

  // Step s: this process sends its block for process rank + s and receives process rank - s's block for
  // it, at once (every process in the same step: a ring, no deadlock, each byte moved once). `take`
  // places each received block.
  template <typename Take> void Exchange(const TensorView& whole, Take&& take) {
    const int size = processes_->Size();
    for (std::size_t s = 0; s < sends_.size(); ++s) {
      const int step = static_cast<int>(s) + 1;
      const Block& out = sends_[s];
      const Block& in = receives_[s];
      PackBox({whole.data, whole.meta}, out.start, out.extent, outgoing_.data());
      const TensorMeta out_meta{Shape{static_cast<std::int64_t>(out.bytes)}, DType::kU8};
      const TensorMeta in_meta{Shape{static_cast<std::int64_t>(in.bytes)}, DType::kU8};
      processes_->SendRecv({outgoing_.data(), &out_meta}, (rank_ + step) % size, {incoming_.data(), &in_meta},
                           (rank_ - step + size) % size, name_);
      take(in, incoming_.data());
    }
  }

  // whole (this process's rows of it) = op over every process's pieces: this process's pieces summed
  // here, then each other process's sum of these rows received and added, in step order.
  void ReduceScatter(std::span<const ConstTensorView> inputs, const TensorView& whole) {
    const std::vector<TensorView> outs(inputs.size(), whole);
    local_->AllReduce(inputs, outs, ReduceOp::kSum);
    PackBox({whole.data, whole.meta}, mine_.start, mine_.extent, own_.data());
    ForReducibleDType(logical_.dtype, [&](auto zero) {
      using T = decltype(zero);
      T* sum = reinterpret_cast<T*>(own_.data());
      const std::size_t count = mine_.bytes / sizeof(T);
      Exchange(whole, [&](const Block&, const std::byte* packed) {
        const T* addend = reinterpret_cast<const T*>(packed);
        for (std::size_t i = 0; i < count; ++i) sum[i] += addend[i];
      });
      if (attrs_.op == ReduceOp::kMean) {
        for (std::size_t i = 0; i < count; ++i) sum[i] /= static_cast<T>(attrs_.devices);
      }
    });
    UnpackBox(own_.data(), mine_.start, mine_.extent, whole);
  }

  // out = op over this process's pieces and every other process's.
  void Sum(std::span<const ConstTensorView> inputs, const TensorView& out) {
    const std::vector<TensorView> outs(inputs.size(), out);
    local_->AllReduce(inputs, outs, ReduceOp::kSum);
    processes_->AllReduce(out, ReduceOp::kSum, name_);
    if (attrs_.op != ReduceOp::kMean) return;
    ForReducibleDType(out.GetDType(), [&](auto zero) {
      using T = decltype(zero);
      T* data = out.As<T>();
      for (std::int64_t i = 0; i < out.NumElements(); ++i) data[i] /= static_cast<T>(attrs_.devices);
    });
  }

  // `whole` = every process's pieces, in place: one broadcast per process of its pieces, packed.
  void Gather(std::span<const ConstTensorView> inputs, const TensorView& whole) {
    for (std::size_t j = 0; j < inputs.size(); ++j) CopyPieceIn(inputs[j], attrs_.axis, attrs_.devices, first_ + static_cast<int>(j), whole);
    std::size_t meta = 0;  // index of process q's first piece in piece_metas_
    for (int q = 0; q < processes_->Size(); ++q) {
      const int begin = attrs_.process_pieces[static_cast<std::size_t>(q)];
      const int end = attrs_.process_pieces[static_cast<std::size_t>(q) + 1];
      const TensorView packed{packed_.data(), &packed_metas_[static_cast<std::size_t>(q)]};
      std::size_t offset = 0;
      if (q == rank_) {
        for (const ConstTensorView& input : inputs) {
          std::memcpy(packed_.data() + offset, input.data, input.meta->NumBytes());
          offset += input.meta->NumBytes();
        }
      }
      processes_->Broadcast(packed, q, name_);
      offset = 0;
      for (int p = begin; p < end; ++p, ++meta) {
        const TensorMeta& piece = piece_metas_[meta];
        if (q != rank_) CopyPieceIn({packed_.data() + offset, &piece}, attrs_.axis, attrs_.devices, p, whole);
        offset += piece.NumBytes();
      }
    }
  }

  // outputs[j] = this process's piece first_ + j of `whole`.
  void Pieces(const ConstTensorView& whole, int axis, std::span<const TensorView> outputs) {
    for (std::size_t j = 0; j < outputs.size(); ++j) {
      CopyPieceOut(whole, axis, attrs_.devices, first_ + static_cast<int>(j), outputs[j]);
    }
  }

  CollectiveKind kind_;
  std::string op_type_;
  std::string name_;
  CollectiveAttrs attrs_;
  HostProcessGroup* processes_;
  CallOutcome outcome_;
  int rank_ = 0;
  int first_ = 0;
  TensorMeta logical_;
  std::vector<TensorMeta> piece_metas_;   // every process's pieces, in order (gathers)
  std::vector<TensorMeta> packed_metas_;  // one per process: its pieces' bytes
  std::vector<std::byte> packed_;
  std::vector<std::byte> whole_;          // the whole tensor (reduce_scatter, all_to_all)
  std::vector<Block> sends_, receives_;   // exchanges (reduce_scatter, all_to_all): step s's blocks
  Block mine_;                            // this process's own block
  std::vector<std::byte> outgoing_, incoming_, own_;
  std::unique_ptr<Communicator> local_;   // sums this process's pieces
};

// A register's bytes from the process that made it (root) to the processes that read it: pipeline
// stages in different processes (sent point to point), and results a consistent job returns in every
// process (broadcast). Every process runs the actor, in the same place of its collectives' chain; one
// that neither sends nor reads does nothing.
class TransferKernel final : public Kernel {
 public:
  explicit TransferKernel(const KernelSetup& setup)
      : name_(setup.op_name), attrs_(setup.Get<CollectiveAttrs>()), processes_(HostGroupOf(setup)), outcome_(processes_) {
    if (processes_ == nullptr) {
      throw std::invalid_argument(fmt::format("[transfer] '{}' needs a session of several processes", name_));
    }
  }

  bool JoinsPeersInFailedCalls() const override { return true; }
  void RunFailedCall(std::span<const ConstTensorView>, std::span<const TensorView>) override {
    outcome_.FailedAnywhere(true, "transfer", name_);
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    outcome_.FailedAnywhere(false, "transfer", name_);
    const int rank = processes_->Rank();
    if (attrs_.readers.empty()) {
      if (rank == attrs_.root) std::memcpy(outputs[0].data, inputs[0].data, outputs[0].meta->NumBytes());
      processes_->Broadcast(outputs[0], attrs_.root, name_);
    } else if (rank == attrs_.root) {
      for (int reader : attrs_.readers) processes_->Send(inputs[0], reader, name_);
    } else if (std::find(attrs_.readers.begin(), attrs_.readers.end(), rank) != attrs_.readers.end()) {
      processes_->Recv(outputs[0], attrs_.root, name_);
    }
  }

 private:
  std::string name_;
  CollectiveAttrs attrs_;
  HostProcessGroup* processes_;
  CallOutcome outcome_;
};

// The commit of a call across processes: the flags alone. A call that failed in some process fails in
// every process here, before any of them writes a variable (its error names where it failed).
class CommitKernel final : public Kernel {
 public:
  explicit CommitKernel(const KernelSetup& setup)
      : name_(setup.op_name), processes_(HostGroupOf(setup)), outcome_(processes_) {
    if (processes_ == nullptr) {
      throw std::invalid_argument(fmt::format("[commit] '{}' needs a session of several processes", name_));
    }
  }

  bool JoinsPeersInFailedCalls() const override { return true; }
  void RunFailedCall(std::span<const ConstTensorView>, std::span<const TensorView>) override {
    outcome_.FailedAnywhere(true, "commit", name_);
  }
  void Run(std::span<const ConstTensorView>, std::span<const TensorView>) override {
    outcome_.FailedAnywhere(false, "commit", name_);
  }

 private:
  std::string name_;
  HostProcessGroup* processes_;
  CallOutcome outcome_;
};

template <CollectiveKind kKind> std::unique_ptr<Kernel> MakeCollectiveKernel(const KernelSetup& setup) {
  if constexpr (kKind == CollectiveKind::kTransfer) {
    return std::make_unique<TransferKernel>(setup);
  } else {
    if (!setup.Get<CollectiveAttrs>().process_pieces.empty()) return std::make_unique<SplitOverProcessesKernel>(setup, kKind);
    return std::make_unique<CollectiveKernel>(setup, kKind);
  }
}


}  // namespace

std::unique_ptr<Kernel> MakeCommitAcrossProcessesKernel(const KernelSetup& setup) {
  return std::make_unique<CommitKernel>(setup);
}

WEIR_REGISTER_KERNELS {
  for (const CollectiveOpType& op : kCollectiveOpTypes) {
    VisitCollectiveKind(op.kind, [&]<CollectiveKind kKind>() {
      for (DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
        RegisterKernel({op.op_type, Device::Kind::kCpu, dtype}, &MakeCollectiveKernel<kKind>);
      }
      if (!op.moves_bytes) return;
      for (DType dtype : kByteDTypes) RegisterKernel({op.op_type, Device::Kind::kCpu, dtype}, &MakeCollectiveKernel<kKind>);
    });
  }
}

}  // namespace weir::internal
