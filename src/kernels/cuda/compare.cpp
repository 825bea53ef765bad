// compare on CUDA: kernels/functors/compare.hpp's comparison over the broadcast plan of
// kernels/functors/binary.hpp, the launcher in compare.cu.
#include <cstdint>

#include "kernels/cuda/cuda_kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {

namespace cuda {
/// out[i] = a (kind) b at the offsets `plan` gives element i (rank 0: a and b in out's layout).
template <typename T>
void Compare(void* stream, CompareOpKind kind, const BroadcastPlan& plan, const T* a, const T* b, std::int8_t* out,
             std::int64_t count);
}  // namespace cuda

namespace {

template <typename T> class CompareCuda final : public Kernel {
 public:
  explicit CompareCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), kind_(setup.Get<CompareAttrs>().kind), count_(setup.outputs[0].shape.NumElements()),
        plan_(BinaryPlanOf(setup)) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::Compare<T>(stream_, kind_, plan_, inputs[0].As<T>(), inputs[1].As<T>(), outputs[0].As<std::int8_t>(), count_);
  }

 private:
  void* stream_;
  CompareOpKind kind_;
  std::int64_t count_;
  BroadcastPlan plan_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"compare", Device::Kind::kCuda, DType::kF32}, &MakeKernel<CompareCuda<float>>);
  RegisterKernel({"compare", Device::Kind::kCuda, DType::kF64}, &MakeKernel<CompareCuda<double>>);
  RegisterKernel({"compare", Device::Kind::kCuda, DType::kI32}, &MakeKernel<CompareCuda<std::int32_t>>);
  RegisterKernel({"compare", Device::Kind::kCuda, DType::kI64}, &MakeKernel<CompareCuda<std::int64_t>>);
  RegisterKernel({"compare", Device::Kind::kCuda, DType::kU8}, &MakeKernel<CompareCuda<std::uint8_t>>);
  RegisterKernel({"compare", Device::Kind::kCuda, DType::kI8}, &MakeKernel<CompareCuda<std::int8_t>>);
}

}  // namespace
}  // namespace weir::internal
