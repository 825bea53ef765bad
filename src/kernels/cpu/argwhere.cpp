// argwhere on the CPU: one pass over x writing each nonzero element's coordinates
// (kernels/functors/argwhere.hpp), zeros in the rows after them, and their number.
#include <cstdint>
#include <cstring>
#include <memory>

#include "kernels/functors/argwhere.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

ArgwhereShape ArgwhereShapeOf(const Shape& shape) {
  ArgwhereShape dims;
  dims.rank = shape.Rank();
  for (int axis = 0; axis < dims.rank; ++axis) dims.dims[axis] = shape[axis];
  return dims;
}

// T is how an element is read: its own type, std::uint8_t for the one-byte types, HalfWord for the
// 16-bit floats.
template <typename T, typename Index> class ArgwhereCpu final : public Kernel {
 public:
  explicit ArgwhereCpu(const KernelSetup& setup)
      : shape_(ArgwhereShapeOf(setup.inputs[0].shape)), n_(setup.inputs[0].shape.NumElements()) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    Index* indices = outputs[0].As<Index>();
    const std::int64_t rows = WriteNonzeroCoordinates(inputs[0].As<T>(), 0, n_, shape_, indices, 0);
    if (rows < n_) std::memset(indices + rows * shape_.rank, 0, static_cast<std::size_t>((n_ - rows) * shape_.rank) * sizeof(Index));
    outputs[1].As<Index>()[0] = static_cast<Index>(rows);
  }

 private:
  ArgwhereShape shape_;
  std::int64_t n_;
};

// The kernel key is x's dtype; the indices' dtype is picked at creation.
template <typename T> std::unique_ptr<Kernel> MakeArgwhere(const KernelSetup& setup) {
  if (setup.outputs[0].dtype == DType::kI64) return std::make_unique<ArgwhereCpu<T, std::int64_t>>(setup);
  return std::make_unique<ArgwhereCpu<T, std::int32_t>>(setup);
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"argwhere", Device::Kind::kCpu, DType::kF32}, &MakeArgwhere<float>);
  RegisterKernel({"argwhere", Device::Kind::kCpu, DType::kF64}, &MakeArgwhere<double>);
  RegisterKernel({"argwhere", Device::Kind::kCpu, DType::kI32}, &MakeArgwhere<std::int32_t>);
  RegisterKernel({"argwhere", Device::Kind::kCpu, DType::kI64}, &MakeArgwhere<std::int64_t>);
  for (DType dtype : kByteDTypes) RegisterKernel({"argwhere", Device::Kind::kCpu, dtype}, &MakeArgwhere<std::uint8_t>);
  for (DType dtype : kHalfDTypes) RegisterKernel({"argwhere", Device::Kind::kCpu, dtype}, &MakeArgwhere<HalfWord>);
}

}  // namespace
}  // namespace weir::internal
