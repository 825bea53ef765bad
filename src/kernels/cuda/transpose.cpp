// transpose on CUDA: a strided gather through the plan of kernels/functors/binary.hpp (PlanGather),
// moving the elements' bytes.
#include <cstdint>
#include <vector>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"
#include "kernels/word_dispatch.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> class TransposeCuda final : public Kernel {
 public:
  explicit TransposeCuda(const KernelSetup& setup) : stream_(CudaStreamOf(setup)), count_(setup.inputs[0].shape.NumElements()) {
    const Shape& in = setup.inputs[0].shape;
    std::vector<std::int64_t> in_strides(static_cast<std::size_t>(in.Rank()), 1);
    for (int i = in.Rank() - 2; i >= 0; --i) in_strides[static_cast<std::size_t>(i)] = in_strides[static_cast<std::size_t>(i) + 1] * in[i + 1];
    // Output axis i walks the input along axis perm[i].
    std::vector<std::int64_t> dims, strides;
    for (int axis : setup.Get<TransposeAttrs>().perm) {
      dims.push_back(in[axis]);
      strides.push_back(in_strides[static_cast<std::size_t>(axis)]);
    }
    if (!PlanGather(dims, strides, plan_)) {
      throw std::invalid_argument(fmt::format("[transpose] '{}': {} has too many axes", setup.op_name, in));
    }
  }
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::BroadcastCopy<T>(stream_, plan_, inputs[0].As<T>(), outputs[0].As<T>(), count_);
  }

 private:
  void* stream_;
  BroadcastPlan plan_;
  std::int64_t count_;
};

WEIR_REGISTER_KERNELS {
  // Elements move as words of their size: one instantiation per size serves every dtype.
  for (DType dtype : kAllDTypes) {
    RegisterKernel({"transpose", Device::Kind::kCuda, dtype},
                   WithWordOf(dtype, []<typename Word>() { return &MakeKernel<TransposeCuda<Word>>; }));
  }
}

}  // namespace
}  // namespace weir::internal
