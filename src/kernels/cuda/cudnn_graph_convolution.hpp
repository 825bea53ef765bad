#pragma once
// One convolution pass as a graph of cuDNN's backend API: the engines cuDNN's frontend (and PyTorch)
// reach, of which the legacy API's cudnnFind* algorithms are a subset. conv2d.cu times these against the
// legacy algorithms and runs the faster.
#include <cudnn.h>

#include <cstddef>
#include <memory>

#include "kernels/functors/conv2d.hpp"

namespace weir::internal::cuda {

/// The fastest engine cuDNN's heuristics offer for one pass on `g` (symmetric pads, groups 1, data of
/// `type` (CUDNN_DATA_FLOAT or CUDNN_DATA_HALF) in `nhwc` or NCHW layout, accumulating in f32), each
/// timed on this GPU. None that reduces in lower precision or converts its inputs down; for f32 data,
/// none on tensor cores (TF32) unless `tensor_float_32`, so that results agree with the CPU's to rounding. Operands as Convolution::Run's: forward (x, weight) -> y, backward data (dy, weight) -> dx,
/// backward filter (dy, x) -> dweight; the result is overwritten.
class CudnnGraphConvolution {
 public:
  /// Null when cuDNN builds no engine for the pass (or `g` has groups).
  /// Times candidates on `handle`, whose stream nothing else uses; WEIR_CUDNN_TRACE prints each.
  static std::unique_ptr<CudnnGraphConvolution> Fastest(const Conv2DGeometry& g, Conv2DPass pass, bool nhwc,
                                                        cudnnDataType_t type, bool tensor_float_32,
                                                        cudnnHandle_t handle);
  ~CudnnGraphConvolution();
  CudnnGraphConvolution(const CudnnGraphConvolution&) = delete;
  CudnnGraphConvolution& operator=(const CudnnGraphConvolution&) = delete;

  float Milliseconds() const;
  std::size_t WorkspaceBytes() const;
  /// Runs the pass on `handle`'s stream. Operands not 16-byte aligned (a view into a variable, say)
  /// run through an engine built for the element's alignment.
  void Run(cudnnHandle_t handle, const void* a, const void* b, void* out, void* workspace) const;

  struct State;  // the backend descriptors, in the .cpp

 private:
  explicit CudnnGraphConvolution(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace weir::internal::cuda
