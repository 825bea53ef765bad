// bias_add on CUDA: x + bias with the bias broadcast along every axis but `axis`, through the
// broadcasting launcher (kernels/functors/binary.hpp).
#include <cstdint>
#include <vector>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> class BiasAddCuda final : public Kernel {
 public:
  explicit BiasAddCuda(const KernelSetup& setup) : stream_(CudaStreamOf(setup)), count_(setup.inputs[0].shape.NumElements()) {
    const Shape& x = setup.inputs[0].shape;
    const int attr_axis = setup.Get<BiasAddAttrs>().axis;
    const int axis = attr_axis < 0 ? attr_axis + x.Rank() : attr_axis;
    std::vector<std::int64_t> bias(static_cast<std::size_t>(x.Rank()), 1);
    bias[static_cast<std::size_t>(axis)] = x[axis];
    if (!PlanBroadcast(x.Dims(), bias, x.Dims(), plan_)) {
      throw std::invalid_argument(fmt::format("[bias_add] '{}': {} has too many axes", setup.op_name, x));
    }
  }
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::BroadcastBinary<T>(stream_, cuda::Binary::kAdd, plan_, inputs[0].As<T>(), inputs[1].As<T>(), outputs[0].As<T>(),
                             count_);
  }

 private:
  void* stream_;
  BroadcastPlan plan_;
  std::int64_t count_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"bias_add", Device::Kind::kCuda, DType::kF32}, &MakeKernel<BiasAddCuda<float>>);
  RegisterKernel({"bias_add", Device::Kind::kCuda, DType::kF64}, &MakeKernel<BiasAddCuda<double>>);
}

}  // namespace
}  // namespace weir::internal
