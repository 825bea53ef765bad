// sparse_softmax_cross_entropy and its gradient on CUDA (kernels/cuda/softmax.cu): the CPU kernels'
// row math; a label out of range fails the call with the CPU's error, reported from the device
// through DeviceReports. The kernel key is the labels' dtype; the logits' is picked at creation.
#include <cstdint>
#include <memory>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"

namespace weir::internal {
namespace {

template <typename Label, typename T> class SparseCrossEntropyCuda final : public Kernel {
 public:
  explicit SparseCrossEntropyCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), op_(setup.op_type), grad_(setup.op_type == "sparse_softmax_cross_entropy_grad"),
        rows_(setup.inputs[1].shape[0]), classes_(setup.inputs[1].shape[1]) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const Label* labels = inputs[0].As<Label>();
    const T* logits = inputs[1].As<T>();
    if (grad_) {
      cuda::SparseCrossEntropyGrad<Label, T>(stream_, labels, logits, inputs[2].As<T>(), outputs[0].As<T>(), rows_, classes_,
                                             reports_.Ring());
    } else {
      cuda::SparseCrossEntropy<Label, T>(stream_, labels, logits, outputs[0].As<T>(), rows_, classes_, reports_.Ring());
    }
    reports_.AdvanceAfterRun(stream_);
  }

  void AfterCompletion() override {
    if (const auto bad = reports_.TakeCompleted()) {
      throw KernelError(fmt::format("[{}] label {} at row {} is outside [0, {})", op_, bad->index, bad->position, classes_));
    }
  }

 private:
  void* stream_;
  std::string op_;
  bool grad_;
  std::int64_t rows_;
  std::int64_t classes_;
  DeviceReports reports_;
};

template <typename Label> std::unique_ptr<Kernel> Make(const KernelSetup& setup) {
  if (setup.inputs[1].dtype == DType::kF64) return std::make_unique<SparseCrossEntropyCuda<Label, double>>(setup);
  return std::make_unique<SparseCrossEntropyCuda<Label, float>>(setup);
}

WEIR_REGISTER_KERNELS {
  for (const char* op : {"sparse_softmax_cross_entropy", "sparse_softmax_cross_entropy_grad"}) {
    RegisterKernel({op, Device::Kind::kCuda, DType::kI32}, &Make<std::int32_t>);
    RegisterKernel({op, Device::Kind::kCuda, DType::kI64}, &Make<std::int64_t>);
  }
}

}  // namespace
}  // namespace weir::internal
