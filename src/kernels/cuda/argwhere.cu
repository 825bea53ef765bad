// argwhere on CUDA (kernels/functors/argwhere.hpp, the CPU kernel's rows and order): x cut into
// chunks of kChunk elements; a thread per chunk counts its nonzero elements; one thread turns the
// counts into each chunk's first row and the total (the size output); a thread per chunk writes its
// rows; a thread per index zeros the rows past the total. O(n) work in all; the one serial pass is
// over n / kChunk counts.
#include <cstdint>
#include <memory>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/argwhere.hpp"

namespace weir::internal {
namespace {

constexpr std::int64_t kChunk = 256;

template <typename T> __global__ void CountChunksKernel(const T* x, std::int64_t n, std::int64_t chunks, std::int64_t* first_rows) {
  WEIR_FOR_EACH_ELEMENT(c, chunks) {
    const std::int64_t begin = c * kChunk;
    first_rows[c] = CountNonzero(x, begin, begin + kChunk < n ? begin + kChunk : n);
  }
}

// first_rows[c] from chunk c's count to the rows before it; first_rows[chunks] the total.
template <typename Index> __global__ void FirstRowsKernel(std::int64_t chunks, std::int64_t* first_rows, Index* size) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  std::int64_t rows = 0;
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t count = first_rows[c];
    first_rows[c] = rows;
    rows += count;
  }
  first_rows[chunks] = rows;
  size[0] = static_cast<Index>(rows);
}

template <typename T, typename Index>
__global__ void WriteChunksKernel(const T* x, std::int64_t n, std::int64_t chunks, const std::int64_t* first_rows,
                                  ArgwhereShape shape, Index* indices) {
  WEIR_FOR_EACH_ELEMENT(c, chunks) {
    const std::int64_t begin = c * kChunk;
    WriteNonzeroCoordinates(x, begin, begin + kChunk < n ? begin + kChunk : n, shape, indices, first_rows[c]);
  }
}

template <typename Index>
__global__ void ZeroTailKernel(std::int64_t count, int rank, const std::int64_t* total, Index* indices) {
  WEIR_FOR_EACH_ELEMENT(i, count) {
    if (i / rank >= *total) indices[i] = Index{0};
  }
}

template <typename T, typename Index> class ArgwhereCuda final : public Kernel {
 public:
  explicit ArgwhereCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), n_(setup.inputs[0].shape.NumElements()), chunks_((n_ + kChunk - 1) / kChunk),
        first_rows_(setup.device.index, static_cast<std::size_t>(chunks_ + 1) * sizeof(std::int64_t)) {
    const Shape& shape = setup.inputs[0].shape;
    shape_.rank = shape.Rank();
    for (int axis = 0; axis < shape_.rank; ++axis) shape_.dims[axis] = shape[axis];
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    Index* indices = outputs[0].As<Index>();
    std::int64_t* first_rows = first_rows_.As<std::int64_t>();
    cuda::LaunchOver(stream_, chunks_, &CountChunksKernel<T>, x, n_, chunks_, first_rows);
    cuda::LaunchOver(stream_, 1, &FirstRowsKernel<Index>, chunks_, first_rows, outputs[1].As<Index>());
    cuda::LaunchOver(stream_, chunks_, &WriteChunksKernel<T, Index>, x, n_, chunks_,
                     static_cast<const std::int64_t*>(first_rows), shape_, indices);
    cuda::LaunchOver(stream_, n_ * shape_.rank, &ZeroTailKernel<Index>, n_ * shape_.rank, shape_.rank,
                     static_cast<const std::int64_t*>(first_rows + chunks_), indices);
  }

 private:
  void* stream_;
  std::int64_t n_;
  std::int64_t chunks_;
  DeviceScratch first_rows_;  // each chunk's count, then its first row; the total last
  ArgwhereShape shape_;
};

// The kernel key is x's dtype; the indices' dtype is picked at creation.
template <typename T> std::unique_ptr<Kernel> MakeArgwhereCuda(const KernelSetup& setup) {
  if (setup.outputs[0].dtype == DType::kI64) return std::make_unique<ArgwhereCuda<T, std::int64_t>>(setup);
  return std::make_unique<ArgwhereCuda<T, std::int32_t>>(setup);
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"argwhere", Device::Kind::kCuda, DType::kF32}, &MakeArgwhereCuda<float>);
  RegisterKernel({"argwhere", Device::Kind::kCuda, DType::kF64}, &MakeArgwhereCuda<double>);
  RegisterKernel({"argwhere", Device::Kind::kCuda, DType::kI32}, &MakeArgwhereCuda<std::int32_t>);
  RegisterKernel({"argwhere", Device::Kind::kCuda, DType::kI64}, &MakeArgwhereCuda<std::int64_t>);
  for (DType dtype : kByteDTypes) RegisterKernel({"argwhere", Device::Kind::kCuda, dtype}, &MakeArgwhereCuda<std::uint8_t>);
  for (DType dtype : kHalfDTypes) RegisterKernel({"argwhere", Device::Kind::kCuda, dtype}, &MakeArgwhereCuda<HalfWord>);
}

}  // namespace
}  // namespace weir::internal
