#include "kernels/stream_graph.hpp"

#include <cstdio>
#include <exception>
#include <string>
#include <map>
#include <utility>

#include "common/allocator.hpp"
#include "common/cuda_runtime.hpp"
#include "common/device_stream.hpp"

namespace weir::internal {

namespace {

// Distinct register addresses a graph is captured for: each slot combination of its registers (two
// slots on the pipelined edges) is one CUDA graph; past this, runs launch the kernels one by one.
constexpr std::size_t kMaxCapturedGraphs = 8;
// Eager runs before the first capture: libraries allocate and set up lazily on a first call, which a
// capture must not record.
constexpr int kEagerRuns = 1;

class StreamGraphKernel final : public Kernel {
 public:
  explicit StreamGraphKernel(const KernelSetup& setup)
      : attrs_(setup.Get<StreamGraphAttrs>()), name_(setup.op_name),
        stream_(setup.stream != nullptr ? setup.stream->NativeHandle() : nullptr) {
    std::size_t total = 0;
    for (std::size_t bytes : attrs_.buffer_bytes) {
      buffer_offsets_.push_back(total);
      total += (bytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    }
    buffers_ = Allocate(setup.device, total);
    bool capturable = true;
    for (const StreamGraphMember& member : attrs_.members) {
      const KernelSetup member_setup{member.op_type, member.name, member.attrs, member.input_metas, member.output_metas,
                                     setup.device, setup.processes, setup.stream, setup.tensor_float_32};
      Member made;
      made.kernel = member.kernel_factory(member_setup);
      capturable = capturable && made.kernel->Capturable();
      for (const TensorMeta& meta : member.input_metas) made.inputs.push_back({nullptr, &meta});
      for (const TensorMeta& meta : member.output_metas) made.outputs.push_back({nullptr, &meta});
      members_.push_back(std::move(made));
    }
    // CUDA graphs on a CUDA stream; elsewhere (CPU device streams) the members run one by one.
    capture_ = capturable && setup.device.kind == Device::Kind::kCuda && stream_ != nullptr;
  }

  ~StreamGraphKernel() override {
    for (const auto& [addresses, graph] : graphs_) CudaDestroyGraph(graph);
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    Bind(inputs, outputs);
    if (!capture_ || eager_runs_ < kEagerRuns) {
      RunMembers();
      ++eager_runs_;
      return;
    }
    addresses_.clear();  // reused: no allocation per run
    for (const ConstTensorView& view : inputs) addresses_.push_back(view.data);
    for (const TensorView& view : outputs) addresses_.push_back(view.data);
    auto it = graphs_.find(addresses_);
    if (it == graphs_.end()) {
      if (graphs_.size() >= kMaxCapturedGraphs) {
        RunMembers();
        return;
      }
      void* graph = nullptr;
      try {
        graph = CudaCaptureGraph(stream_, [this] { RunMembers(); });
      } catch (const std::exception& error) {
        // Some member's work cannot be captured: from now on the members run one by one (what the
        // capture recorded was not run, so this run's work is still to do).
        std::fprintf(stderr, "[weir] %s: no CUDA graph (%s); its kernels run one by one\n", name_.c_str(), error.what());
        capture_ = false;
        RunMembers();
        return;
      }
      it = graphs_.emplace(addresses_, graph).first;
    }
    CudaLaunchGraph(it->second, stream_);
  }

  void AfterCompletion() override {
    // Every member's, in order (each keeps its own count of completed runs); the first error wins.
    std::exception_ptr first;
    for (Member& member : members_) {
      try {
        member.kernel->AfterCompletion();
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
  }

  bool Capturable() const override { return false; }  // it captures itself

 private:
  struct Member {
    std::unique_ptr<Kernel> kernel;
    std::vector<ConstTensorView> inputs;
    std::vector<TensorView> outputs;
  };

  void* Address(const GraphOperand& operand, std::span<const ConstTensorView> inputs,
                std::span<const TensorView> outputs) const {
    switch (operand.kind) {
      case GraphOperand::Kind::kInput: return const_cast<void*>(inputs[static_cast<std::size_t>(operand.index)].data);
      case GraphOperand::Kind::kOutput: return outputs[static_cast<std::size_t>(operand.index)].data;
      case GraphOperand::Kind::kBuffer: break;
    }
    return buffers_.get() + buffer_offsets_[static_cast<std::size_t>(operand.index)];
  }

  // Points every member's views at this run's registers and the graph's buffers.
  void Bind(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) {
    for (std::size_t m = 0; m < members_.size(); ++m) {
      const StreamGraphMember& member = attrs_.members[m];
      for (std::size_t i = 0; i < member.inputs.size(); ++i) members_[m].inputs[i].data = Address(member.inputs[i], inputs, outputs);
      for (std::size_t j = 0; j < member.outputs.size(); ++j) members_[m].outputs[j].data = Address(member.outputs[j], inputs, outputs);
    }
  }

  void RunMembers() {
    for (Member& member : members_) member.kernel->Run(member.inputs, member.outputs);
  }

  const StreamGraphAttrs& attrs_;
  std::string name_;
  void* stream_;
  std::shared_ptr<std::byte[]> buffers_;
  std::vector<std::size_t> buffer_offsets_;
  std::vector<Member> members_;
  bool capture_ = false;
  int eager_runs_ = 0;
  std::map<std::vector<const void*>, void*> graphs_;  // register addresses -> executable CUDA graph
  std::vector<const void*> addresses_;                // this run's, the key into graphs_
};

}  // namespace

std::unique_ptr<Kernel> MakeStreamGraphKernel(const KernelSetup& setup) { return std::make_unique<StreamGraphKernel>(setup); }

}  // namespace weir::internal
