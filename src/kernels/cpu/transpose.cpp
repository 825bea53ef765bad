// transpose on the CPU: a strided copy (kernels/cpu/strided_copy.hpp merges the axes).
#include <cstdint>
#include <vector>

#include "kernels/cpu/strided_copy.hpp"
#include "kernels/kernel.hpp"
#include "kernels/word_dispatch.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

static_assert(sizeof(bool) == 1, "bool tensors are copied as bytes");

template <typename T> class TransposeCpu final : public Kernel {
 public:
  explicit TransposeCpu(const KernelSetup& setup)
      : copy_(PermutedDims(setup), PermutedStrides(setup)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    copy_.Run(inputs[0].As<T>(), outputs[0].As<T>());
  }

 private:
  static std::vector<std::int64_t> PermutedDims(const KernelSetup& setup) {
    std::vector<std::int64_t> dims;
    for (int axis : setup.Get<TransposeAttrs>().perm) dims.push_back(setup.inputs[0].shape[axis]);
    return dims;
  }
  // Output axis i walks the input along axis perm[i].
  static std::vector<std::int64_t> PermutedStrides(const KernelSetup& setup) {
    const Shape& in = setup.inputs[0].shape;
    std::vector<std::int64_t> in_strides(static_cast<std::size_t>(in.Rank()), 1);
    for (int i = in.Rank() - 2; i >= 0; --i) in_strides[i] = in_strides[i + 1] * in[i + 1];
    std::vector<std::int64_t> strides;
    for (int axis : setup.Get<TransposeAttrs>().perm) strides.push_back(in_strides[static_cast<std::size_t>(axis)]);
    return strides;
  }

  StridedCopy<T> copy_;
};

WEIR_REGISTER_KERNELS {
  // Elements move as words of their size: one instantiation per size serves every dtype.
  for (DType dtype : kAllDTypes) {
    RegisterKernel({"transpose", Device::Kind::kCpu, dtype},
                   WithWordOf(dtype, []<typename Word>() { return &MakeKernel<TransposeCpu<Word>>; }));
  }
}

}  // namespace
}  // namespace weir::internal
