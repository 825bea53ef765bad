// The all-reduce actor's kernel: one input per device, one shared output, through the in-process
// communicator.
#include <vector>

#include "kernels/collectives/collective_attrs.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {

namespace {

class AllReduceKernel final : public Kernel {
 public:
  explicit AllReduceKernel(const KernelSetup& setup)
      : attrs_(setup.Get<AllReduceAttrs>()), communicator_(MakeInProcessCommunicator(attrs_.devices)),
        outputs_(static_cast<std::size_t>(attrs_.devices)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    for (TensorView& output : outputs_) output = outputs[0];  // every device reads the one result
    communicator_->AllReduce(inputs, outputs_, attrs_.op);
  }

 private:
  AllReduceAttrs attrs_;
  std::unique_ptr<Communicator> communicator_;
  std::vector<TensorView> outputs_;
};

}  // namespace

WEIR_REGISTER_KERNELS {
  for (DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
    RegisterKernel({"all_reduce", Device::Kind::kCpu, dtype}, &MakeKernel<AllReduceKernel>);
  }
}

}  // namespace weir::internal
