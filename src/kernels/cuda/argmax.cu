// argmax on CUDA: a thread per (outer, inner) column picks the index of its largest element with the
// CPU kernel's rule (kernels/functors/argmax.hpp).
#include <cstdint>
#include <memory>

#include "kernels/axis_split.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/argmax.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T, typename Index>
__global__ void ArgMaxKernel(const T* x, Index* y, std::int64_t outer, std::int64_t n, std::int64_t inner) {
  WEIR_FOR_EACH_ELEMENT(c, outer * inner) {
    y[c] = static_cast<Index>(ArgMaxAlong(x + (c / inner) * n * inner + c % inner, n, inner));
  }
}

template <typename T, typename Index> class ArgMaxCuda final : public Kernel {
 public:
  explicit ArgMaxCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), split_(setup.inputs[0].shape, setup.Get<ArgMaxAttrs>().axis) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::LaunchOver(stream_, split_.outer * split_.inner, &ArgMaxKernel<T, Index>, inputs[0].As<T>(),
                     outputs[0].As<Index>(), split_.outer, split_.n, split_.inner);
  }

 private:
  void* stream_;
  AxisSplit split_;
};

template <typename T> std::unique_ptr<Kernel> MakeArgMax(const KernelSetup& setup) {
  if (setup.Get<ArgMaxAttrs>().output_dtype == DType::kI64) return std::make_unique<ArgMaxCuda<T, std::int64_t>>(setup);
  return std::make_unique<ArgMaxCuda<T, std::int32_t>>(setup);
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"argmax", Device::Kind::kCuda, DType::kF32}, &MakeArgMax<float>);
  RegisterKernel({"argmax", Device::Kind::kCuda, DType::kF64}, &MakeArgMax<double>);
  RegisterKernel({"argmax", Device::Kind::kCuda, DType::kI32}, &MakeArgMax<std::int32_t>);
  RegisterKernel({"argmax", Device::Kind::kCuda, DType::kI64}, &MakeArgMax<std::int64_t>);
}

}  // namespace
}  // namespace weir::internal
