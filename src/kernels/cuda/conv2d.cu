// Convolutions through cuDNN 9's convolution API (the legacy one: deprecated in cuDNN 9 in favour of the
// graph API, still supported, and far less code for three fixed ops). Descriptors and the algorithm
// are chosen once, when the kernel is made, from cuDNN's heuristics: an FMA-math algorithm (no TF32,
// so f32 results agree with the CPU's to rounding), deterministic where one is offered. And the image
// shift that pads or crops around an asymmetric (SAME) pad, which cuDNN cannot express.
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "common/cuda_check.cuh"
#include "common/cuda_handles.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.hpp"

namespace weir::internal::cuda {

namespace {

int Dim(std::int64_t value, const char* what) { return LibraryDim(value, "conv2d", what); }

// The best of cuDNN's ranked candidates: FMA math and deterministic, else FMA math, else the first
// that runs at all. PerfT: the forward, backward-data or backward-filter perf struct.
template <typename PerfT> const PerfT& Choose(const PerfT* results, int count, const char* pass) {
  const PerfT* best = nullptr;
  int best_score = -1;
  for (int i = 0; i < count; ++i) {
    if (results[i].status != CUDNN_STATUS_SUCCESS) continue;
    const int score = (results[i].mathType == CUDNN_FMA_MATH ? 2 : 0) + (results[i].determinism == CUDNN_DETERMINISTIC ? 1 : 0);
    if (score > best_score) {
      best = &results[i];
      best_score = score;
    }
  }
  if (best == nullptr) throw std::runtime_error(std::string("[conv2d] cuDNN offers no algorithm for the ") + pass + " pass");
  return *best;
}

template <typename T> __global__ void ShiftImagesKernel(ImageShift shift, const T* src, T* dst) {
  WEIR_FOR_EACH_ELEMENT(i, shift.DstCount()) {
    const std::int64_t from = shift.SourceOf(i);
    dst[i] = from < 0 ? T(0) : src[from];
  }
}

}  // namespace

struct Convolution::Descriptors {
  Conv2DPass pass = Conv2DPass::kForward;
  bool f64 = false;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t weight = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t forward{};
  cudnnConvolutionBwdDataAlgo_t backward_data{};
  cudnnConvolutionBwdFilterAlgo_t backward_filter{};
  std::size_t workspace = 0;

  ~Descriptors() {
    if (x != nullptr) cudnnDestroyTensorDescriptor(x);
    if (y != nullptr) cudnnDestroyTensorDescriptor(y);
    if (weight != nullptr) cudnnDestroyFilterDescriptor(weight);
    if (conv != nullptr) cudnnDestroyConvolutionDescriptor(conv);
  }
};

Convolution::Convolution(void* stream, const Conv2DGeometry& g, Conv2DPass pass, bool f64)
    : d_(std::make_unique<Descriptors>()) {
  if (!g.SymmetricPads()) throw std::invalid_argument("[conv2d] cuDNN takes symmetric pads; pad the input first");
  d_->pass = pass;
  d_->f64 = f64;
  const cudnnDataType_t type = f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  const cudnnTensorFormat_t format = g.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  Dim(g.XCount(), "x's element count");
  Dim(g.YCount(), "y's element count");
  WEIR_CUDA_CHECK(cudnnCreateTensorDescriptor(&d_->x));
  WEIR_CUDA_CHECK(cudnnCreateTensorDescriptor(&d_->y));
  WEIR_CUDA_CHECK(cudnnCreateFilterDescriptor(&d_->weight));
  WEIR_CUDA_CHECK(cudnnCreateConvolutionDescriptor(&d_->conv));
  WEIR_CUDA_CHECK(cudnnSetTensor4dDescriptor(d_->x, format, type, Dim(g.batch, "batch"), Dim(g.channels, "channels"),
                                             Dim(g.in_h, "height"), Dim(g.in_w, "width")));
  WEIR_CUDA_CHECK(cudnnSetTensor4dDescriptor(d_->y, format, type, Dim(g.batch, "batch"), Dim(g.filters, "filters"),
                                             Dim(g.out_h, "output height"), Dim(g.out_w, "output width")));
  // The filter's format follows the data's: (out, C/groups, kh, kw) for NCHW, (out, kh, kw, C) for NHWC.
  WEIR_CUDA_CHECK(cudnnSetFilter4dDescriptor(d_->weight, type, format, Dim(g.filters, "filters"),
                                             Dim(g.channels / g.groups, "channels per group"), Dim(g.kernel_h, "kernel height"),
                                             Dim(g.kernel_w, "kernel width")));
  WEIR_CUDA_CHECK(cudnnSetConvolution2dDescriptor(d_->conv, Dim(g.pad_before[0], "pad"), Dim(g.pad_before[1], "pad"),
                                                  Dim(g.strides[0], "stride"), Dim(g.strides[1], "stride"),
                                                  Dim(g.dilations[0], "dilation"), Dim(g.dilations[1], "dilation"),
                                                  CUDNN_CROSS_CORRELATION, type));
  WEIR_CUDA_CHECK(cudnnSetConvolutionGroupCount(d_->conv, Dim(g.groups, "groups")));
  WEIR_CUDA_CHECK(cudnnSetConvolutionMathType(d_->conv, CUDNN_FMA_MATH));

  cudnnHandle_t handle = CudnnHandleOf(static_cast<cudaStream_t>(stream));
  int returned = 0;
  switch (pass) {
    case Conv2DPass::kForward: {
      cudnnConvolutionFwdAlgoPerf_t results[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      WEIR_CUDA_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(handle, d_->x, d_->weight, d_->conv, d_->y,
                                                             CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, results));
      const auto& chosen = Choose(results, returned, "forward");
      d_->forward = chosen.algo;
      WEIR_CUDA_CHECK(cudnnSetConvolutionMathType(d_->conv, chosen.mathType));
      WEIR_CUDA_CHECK(cudnnGetConvolutionForwardWorkspaceSize(handle, d_->x, d_->weight, d_->conv, d_->y, d_->forward,
                                                              &d_->workspace));
      break;
    }
    case Conv2DPass::kBackwardData: {
      cudnnConvolutionBwdDataAlgoPerf_t results[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      WEIR_CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, d_->weight, d_->y, d_->conv, d_->x,
                                                                  CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, results));
      const auto& chosen = Choose(results, returned, "backward data");
      d_->backward_data = chosen.algo;
      WEIR_CUDA_CHECK(cudnnSetConvolutionMathType(d_->conv, chosen.mathType));
      WEIR_CUDA_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(handle, d_->weight, d_->y, d_->conv, d_->x,
                                                                   d_->backward_data, &d_->workspace));
      break;
    }
    case Conv2DPass::kBackwardFilter: {
      cudnnConvolutionBwdFilterAlgoPerf_t results[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      WEIR_CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, d_->x, d_->y, d_->conv, d_->weight,
                                                                    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned,
                                                                    results));
      const auto& chosen = Choose(results, returned, "backward filter");
      d_->backward_filter = chosen.algo;
      WEIR_CUDA_CHECK(cudnnSetConvolutionMathType(d_->conv, chosen.mathType));
      WEIR_CUDA_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, d_->x, d_->y, d_->conv, d_->weight,
                                                                     d_->backward_filter, &d_->workspace));
      break;
    }
  }
}

Convolution::~Convolution() = default;

std::size_t Convolution::WorkspaceBytes() const { return d_->workspace; }

void Convolution::Run(void* stream, const void* a, const void* b, void* out, void* workspace) const {
  cudnnHandle_t handle = CudnnHandleOf(static_cast<cudaStream_t>(stream));
  // alpha and beta in the compute type: double for f64, float otherwise. beta 0: out is overwritten.
  const double one_d = 1, zero_d = 0;
  const float one_f = 1, zero_f = 0;
  const void* one = d_->f64 ? static_cast<const void*>(&one_d) : &one_f;
  const void* zero = d_->f64 ? static_cast<const void*>(&zero_d) : &zero_f;
  switch (d_->pass) {
    case Conv2DPass::kForward:  // (x, weight) -> y
      WEIR_CUDA_CHECK(cudnnConvolutionForward(handle, one, d_->x, a, d_->weight, b, d_->conv, d_->forward, workspace,
                                              d_->workspace, zero, d_->y, out));
      break;
    case Conv2DPass::kBackwardData:  // (dy, weight) -> dx
      WEIR_CUDA_CHECK(cudnnConvolutionBackwardData(handle, one, d_->weight, b, d_->y, a, d_->conv, d_->backward_data,
                                                   workspace, d_->workspace, zero, d_->x, out));
      break;
    case Conv2DPass::kBackwardFilter:  // (dy, x) -> dweight
      WEIR_CUDA_CHECK(cudnnConvolutionBackwardFilter(handle, one, d_->x, b, d_->y, a, d_->conv, d_->backward_filter,
                                                     workspace, d_->workspace, zero, d_->weight, out));
      break;
  }
}

template <typename T> void ShiftImages(void* stream, const ImageShift& shift, const T* src, T* dst) {
  const std::int64_t count = shift.DstCount();
  if (count == 0) return;
  ShiftImagesKernel<T><<<Blocks(count), kThreads, 0, Native(stream)>>>(shift, src, dst);
  WEIR_CUDA_CHECK(cudaGetLastError());
}

template void ShiftImages<float>(void*, const ImageShift&, const float*, float*);
template void ShiftImages<double>(void*, const ImageShift&, const double*, double*);

}  // namespace weir::internal::cuda
