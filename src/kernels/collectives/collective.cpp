// The kernels of the collective actors: every device's piece in, through the in-process
// communicator. A result every device reads whole (all_reduce, all_gather) is one buffer, which
// the devices of this process share; split results are one piece per device. A collective across
// processes then all-reduces each result over the process group.
#include <stdexcept>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "kernels/collectives/collective_attrs.hpp"
#include "kernels/collectives/process_group.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {

namespace {

class CollectiveKernel final : public Kernel {
 public:
  explicit CollectiveKernel(const KernelSetup& setup)
      : op_type_(setup.op_type), name_(setup.op_name), attrs_(setup.Get<CollectiveAttrs>()),
        communicator_(MakeInProcessCommunicator(attrs_.devices)),
        outputs_(static_cast<std::size_t>(attrs_.devices)), processes_(setup.processes) {
    if (attrs_.across_processes && (processes_ == nullptr || attrs_.rank >= 0 ||
                                    (op_type_ != "all_reduce" && op_type_ != "reduce_scatter"))) {
      throw std::invalid_argument(fmt::format(
          "[{}] '{}': only a whole all_reduce or reduce_scatter actor reduces across processes, and only in a "
          "session of several processes", op_type_, name_));
    }
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (attrs_.rank >= 0) {  // this device's piece of a reduce-scatter, computed on its own stream
      ReducePiece(inputs, outputs[0], attrs_.axis, attrs_.rank, attrs_.op);
      return;
    }
    // One output shared by every device, or one per device.
    for (std::size_t r = 0; r < outputs_.size(); ++r) outputs_[r] = outputs[outputs.size() == 1 ? 0 : r];
    if (op_type_ == "all_reduce") {
      communicator_->AllReduce(inputs, outputs_, attrs_.op);
    } else if (op_type_ == "all_gather") {
      communicator_->AllGather(inputs, outputs_, attrs_.axis);
    } else if (op_type_ == "reduce_scatter") {
      communicator_->ReduceScatter(inputs, outputs_, attrs_.axis, attrs_.op);
    } else if (op_type_ == "all_to_all") {
      communicator_->AllToAll(inputs, outputs_, attrs_.axis, attrs_.out_axis);
    } else {  // scatter: one whole input, a piece per device
      communicator_->Scatter(inputs[0], outputs_, attrs_.axis);
    }
    if (!attrs_.across_processes) return;
    for (const TensorView& output : outputs) processes_->AllReduce(output, attrs_.op, name_);
  }

 private:
  std::string op_type_;
  std::string name_;
  CollectiveAttrs attrs_;
  std::unique_ptr<Communicator> communicator_;
  std::vector<TensorView> outputs_;
  ProcessGroup* processes_;
};

}  // namespace

WEIR_REGISTER_KERNELS {
  for (std::string_view op : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "scatter"}) {
    for (DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
      RegisterKernel({std::string(op), Device::Kind::kCpu, dtype}, &MakeKernel<CollectiveKernel>);
    }
  }
  // Splits and gathers copy bytes, so they take every dtype (labels, masks).
  for (std::string_view op : {"all_gather", "all_to_all", "scatter"}) {
    for (DType dtype : {DType::kU8, DType::kBool}) {
      RegisterKernel({std::string(op), Device::Kind::kCpu, dtype}, &MakeKernel<CollectiveKernel>);
    }
  }
}

}  // namespace weir::internal
