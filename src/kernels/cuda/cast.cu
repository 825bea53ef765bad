// cast on CUDA: a thread per element applying kernels/functors/cast.hpp (the CPU kernel's
// conversion) for the (input, output) dtype pair picked when the task is created.
#include <cstdint>
#include <memory>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/cast.hpp"
#include "kernels/word_dispatch.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename In, typename Out> __global__ void CastKernel(const In* x, Out* y, std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) { y[i] = Convert<Out>(x[i]); }
}

template <typename In, typename Out> class CastCuda final : public Kernel {
 public:
  explicit CastCuda(const KernelSetup& setup) : stream_(CudaStreamOf(setup)), count_(setup.inputs[0].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::LaunchOver(stream_, count_, &CastKernel<In, Out>, inputs[0].As<In>(), outputs[0].As<Out>(), count_);
  }

 private:
  void* stream_;
  std::int64_t count_;
};

std::unique_ptr<Kernel> MakeCast(const KernelSetup& setup) {
  return WithTypeOf(setup.inputs[0].dtype, [&]<typename In>() {
    return WithTypeOf(setup.Get<CastAttrs>().dtype,
                      [&]<typename Out>() -> std::unique_ptr<Kernel> { return std::make_unique<CastCuda<In, Out>>(setup); });
  });
}

WEIR_REGISTER_KERNELS {
  for (DType dtype : kAllDTypes) RegisterKernel({"cast", Device::Kind::kCuda, dtype}, &MakeCast);
}

}  // namespace
}  // namespace weir::internal
