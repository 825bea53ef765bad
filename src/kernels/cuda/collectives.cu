// The reduction of the collectives between several GPUs of one process: their pieces, copied onto the
// collective's GPU by the planner's copy actors, summed or averaged there in piece order, as the CPU's
// shared-memory communicator does (kernels/functors/pieces.hpp). Compiled, not yet run on a GPU.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "common/cuda_check.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.hpp"

namespace weir::internal::cuda {

namespace {

// The pieces' addresses by value, in the launch's arguments.
template <typename T> struct PieceAddresses {
  const T* piece[kMaxReducedPieces];
};

template <typename T>
__global__ void ReducePiecesKernel(PieceAddresses<T> pieces, int count, bool mean, T* out, std::int64_t elements) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < elements;
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x) {
    out[i] = ReducePiecesAt(pieces.piece, count, i, mean);
  }
}

}  // namespace

template <typename T>
void ReducePieces(void* stream, const T* const* pieces, int count, bool mean, T* out, std::int64_t elements) {
  if (count < 1 || count > kMaxReducedPieces) {
    throw std::invalid_argument("[collective] a reduction on a GPU takes 1 to " + std::to_string(kMaxReducedPieces) +
                                " pieces, got " + std::to_string(count));
  }
  if (elements == 0) return;
  PieceAddresses<T> addresses{};
  for (int k = 0; k < count; ++k) addresses.piece[k] = pieces[k];
  ReducePiecesKernel<T><<<Blocks(elements), kThreads, 0, Native(stream)>>>(addresses, count, mean, out, elements);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template void ReducePieces<float>(void*, const float* const*, int, bool, float*, std::int64_t);
template void ReducePieces<double>(void*, const double* const*, int, bool, double*, std::int64_t);
template void ReducePieces<std::int32_t>(void*, const std::int32_t* const*, int, bool, std::int32_t*, std::int64_t);
template void ReducePieces<std::int64_t>(void*, const std::int64_t* const*, int, bool, std::int64_t*, std::int64_t);

}  // namespace weir::internal::cuda
