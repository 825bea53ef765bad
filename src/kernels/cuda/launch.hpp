#pragma once
// What the CUDA kernels' host code (kernels/cuda/*.cpp, in the weir library) calls in the CUDA library
// (kernels/cuda/*.cu, compiled by nvcc into libweir_cuda): plain C++ with no CUDA type, so that no
// CUDA header leaks into the rest of Weir. `stream` is the cudaStream_t of the kernel's device stream
// (DeviceStream::NativeHandle()). Each call queues its work on the stream and returns; a failed
// launch or library call throws std::runtime_error naming it.
//
// The few generic launchers: elementwise maps whose math is a functor of kernels/functors/ (shared
// with the CPU kernels); the heavy ops go to cuBLAS.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/functors/batch_norm.hpp"
#include "kernels/functors/binary.hpp"
#include "kernels/functors/conv2d.hpp"
#include "kernels/functors/learning_rate.hpp"
#include "kernels/functors/pieces.hpp"
#include "kernels/functors/pool2d.hpp"
#include "kernels/functors/reduce.hpp"
#include "kernels/functors/update.hpp"
#include "weir/op_kinds.hpp"

namespace weir::internal::cuda {

/// Where a kernel reports what it found wrong in a Run's data (kernels/cuda/cuda_kernel.hpp's
/// DeviceReports, in mapped host memory): a ring of `size` slots, the Run's slot chosen on the device
/// by `counter`, which AdvanceReports increments after each Run. The slot is picked on the device,
/// not passed in, so that a Run captured into a CUDA graph reports into the right slot at every replay.
struct ReportRing {
  std::int64_t* slots = nullptr;
  std::uint64_t* counter = nullptr;
  std::uint64_t size = 1;
};
/// Moves `reports` on to the next Run's slot (after the Run's kernel, on the same stream).
void AdvanceReports(void* stream, const ReportRing& reports);

/// Copies `bytes` device to device, or host to device, on the stream.
void CopyOnDevice(void* stream, void* dst, const void* src, std::size_t bytes);
void CopyFromHost(void* stream, void* dst, const void* host, std::size_t bytes);
/// Copies `bytes` between any two memories a CUDA device can address (its own, another device's,
/// pinned host memory), on the stream.
void CopyBetweenMemories(void* stream, void* dst, const void* src, std::size_t bytes);
/// `height` rows of `width` bytes, `src_pitch` apart in src and `dst_pitch` apart in dst (cudaMemcpy2DAsync).
void CopyRows(void* stream, void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t width,
              std::size_t height);
/// out[i] = the sum (or mean) of pieces[0..count)[i], added in piece order (kernels/functors/pieces.hpp,
/// the CPU's shared-memory reduction): several GPUs' pieces of one collective, copied onto the
/// stream's device. count in [1, kMaxReducedPieces]; `out` may be one of the pieces. T: float, double,
/// int32_t, int64_t.
template <typename T>
void ReducePieces(void* stream, const T* const* pieces, int count, bool mean, T* out, std::int64_t elements);
/// ++*value on the device (the train step).
void Increment(void* stream, std::int64_t* value);
/// dropout: mask[i] = DropoutKeeps(seed, *call, i, threshold) (kernels/functors/philox.hpp, the CPU's
/// draw; the call number read on the device, so that a CUDA graph's replays draw new masks), y = mask ?
/// x · scale : 0; and its gradient dx = mask ? dy · scale : 0. float, double.
template <typename T>
void Dropout(void* stream, const T* x, T* y, std::uint8_t* mask, std::int64_t count, std::uint64_t seed,
             const std::int64_t* call, std::uint64_t threshold, T scale);
template <typename T> void DropoutGrad(void* stream, const T* dy, const std::uint8_t* mask, T* dx, std::int64_t count, T scale);
/// y = Convert<Out>(x) (kernels/functors/cast.hpp); In and Out: float, double, int32_t, int64_t,
/// uint8_t, int8_t, bool.
template <typename In, typename Out> void Cast(void* stream, const In* x, Out* y, std::int64_t count);
/// out[i] = x[the plan's a-offset of i] (PlanBroadcast, PlanGather); T: uint8_t, uint32_t, uint64_t (the
/// bytes of 1-, 4- and 8-byte dtypes).
template <typename T> void BroadcastCopy(void* stream, const BroadcastPlan& plan, const T* x, T* out, std::int64_t count);

/// *lr = the schedule's learning rate at *train_step (kernels/functors/learning_rate.hpp); `view`'s
/// arrays in device memory.
void LearningRate(void* stream, const ScheduleView& view, const std::int64_t* train_step, float* lr);

/// y = f(x) for the unary kind; T: float, double, int32_t, int64_t (integers: the kinds that take them).
template <typename T> void Unary(void* stream, UnaryOpKind kind, const T* x, T* y, std::int64_t count);
/// dx = f'(v) dy, v being y or x as the kind's gradient reads (kernels/functors/unary.hpp); float, double.
template <typename T> void UnaryGrad(void* stream, UnaryOpKind kind, const T* dy, const T* v, T* dx, std::int64_t count);

enum class Activation : std::uint8_t { kRelu, kSigmoid, kTanh };
/// y = act(x); float, double.
template <typename T> void ActivationForward(void* stream, Activation kind, const T* x, T* y, std::int64_t count);
/// dx = act'(y) dy from the forward output y; float, double.
template <typename T> void ActivationGrad(void* stream, Activation kind, const T* dy, const T* y, T* dx, std::int64_t count);

/// y = x (kind) value; T: float, double, int32_t, int64_t (integers: not kDiv or kRDiv, whose zero
/// divisors must fail the call on the CPU).
template <typename T> void Scalar(void* stream, ScalarOpKind kind, T value, const T* x, T* y, std::int64_t count);

enum class Binary : std::uint8_t { kAdd, kSub, kMul, kDiv, kMod, kMaximum, kMinimum };
/// out = a (kind) b with broadcasting along `plan` (kernels/functors/binary.hpp; rank 0 or a plan of
/// count elements); T: float, double, int32_t, int64_t (integers: not kDiv, kMod).
template <typename T>
void BroadcastBinary(void* stream, Binary kind, const BroadcastPlan& plan, const T* a, const T* b, T* out,
                     std::int64_t count);

/// y[o] = the sum (mean: / reduced count) of x's elements of output o along `plan`, accumulated as
/// the CPU accumulates (ReduceAcc); one block per output. T: float, double, int32_t, int64_t (mean:
/// float, double).
/// With split.parts > 1 (ReduceSplit::For), `partials` holds outputs * parts ReduceAcc<T> of device memory.
template <typename T>
void Reduce(void* stream, const ReductionPlan& plan, bool mean, const T* x, T* y, std::int64_t outputs,
            const ReduceSplit& split, void* partials);

/// softmax of x viewed as (outer, n, inner) along n, and its gradient from y: a thread per
/// (outer, inner) column (kernels/functors/softmax.hpp); float, double.
template <typename T> void Softmax(void* stream, const T* x, T* y, std::int64_t outer, std::int64_t n, std::int64_t inner);
template <typename T>
void SoftmaxGrad(void* stream, const T* dy, const T* y, T* dx, std::int64_t outer, std::int64_t n, std::int64_t inner);

/// y = clip(x, lo, hi), dx = dy where lo <= x <= hi (kernels/functors/clip.hpp); clip: float,
/// double, int32_t, int64_t; the gradient: float, double.
template <typename T> void ClipByValue(void* stream, const T* x, T* y, T lo, T hi, std::int64_t count);
template <typename T> void ClipByValueGrad(void* stream, const T* dy, const T* x, T* dx, T lo, T hi, std::int64_t count);
/// The sigmoid cross entropy of labels z and logits x, and its gradient (kernels/functors/
/// sigmoid_cross_entropy.hpp); float, double.
template <typename T> void SigmoidCrossEntropy(void* stream, const T* z, const T* x, T* loss, std::int64_t count);
template <typename T>
void SigmoidCrossEntropyGrad(void* stream, const T* z, const T* x, const T* dy, T* dz, T* dx, std::int64_t count);
/// dx = dy d(x (kind) value)/dx (kernels/functors/scalar.hpp); float, double.
template <typename T>
void ScalarGrad(void* stream, ScalarOpKind kind, T value, const T* dy, const T* x, T* dx, std::int64_t count);

/// y[o, i] = the index of the largest x[o, :, i] (kernels/functors/argmax.hpp); T: float, double,
/// int32_t, int64_t; Index: int32_t, int64_t.
template <typename T, typename Index>
void ArgMax(void* stream, const T* x, Index* y, std::int64_t outer, std::int64_t n, std::int64_t inner);
/// maximum_grad (maximum true) and minimum_grad: dy to a where a was picked, else to b; float, double.
template <typename T>
void ExtremumGrad(void* stream, bool maximum, const T* dy, const T* a, const T* b, T* da, T* db, std::int64_t count);
/// Each index to a row of `depth` values, on at the index and off elsewhere; an index outside
/// [0, depth) is reported into the Run's slot of `reports` (CheckIndex, DeviceReports).
/// Index: int32_t, int64_t; T: float, double, int32_t, int64_t.
template <typename Index, typename T>
void OneHot(void* stream, const Index* indices, T* out, std::int64_t count, std::int64_t depth, T on, T off,
            ReportRing reports);

/// The dense softmax cross entropy of (rows x classes) labels z and logits x, one loss per row, and its
/// gradient (dz, dx) (kernels/functors/softmax.hpp); a thread per row; float, double.
template <typename T>
void SoftmaxCrossEntropy(void* stream, const T* z, const T* x, T* loss, std::int64_t rows, std::int64_t classes);
template <typename T>
void SoftmaxCrossEntropyGrad(void* stream, const T* z, const T* x, const T* dy, T* dz, T* dx, std::int64_t rows,
                             std::int64_t classes);

/// The sparse softmax cross entropy of (rows x classes) logits, one loss per row, and its gradient
/// dlogits = (softmax − onehot(label)) dy (kernels/functors/softmax.hpp). A label outside [0, classes)
/// is reported into the Run's slot of `reports` (CheckIndex, DeviceReports).
/// Label: int32_t, int64_t; T: float, double.
template <typename Label, typename T>
void SparseCrossEntropy(void* stream, const Label* labels, const T* logits, T* loss, std::int64_t rows,
                        std::int64_t classes, ReportRing reports);
template <typename Label, typename T>
void SparseCrossEntropyGrad(void* stream, const Label* labels, const T* logits, const T* dy, T* dlogits,
                            std::int64_t rows, std::int64_t classes, ReportRing reports);

/// y[o] = the max (or min) of output o's elements along `plan`, a NaN winning (the CPU's MaxOp / MinOp);
/// one block per output. T: float, double, int32_t, int64_t.
template <typename T>
void ReduceExtremum(void* stream, const ReductionPlan& plan, bool max, const T* x, T* y, std::int64_t outputs);
/// dx = dy[o] / (the elements of output o equal to y[o]) where x == y[o], else 0; float, double.
template <typename T>
void ReduceExtremumGrad(void* stream, const ReductionPlan& plan, const T* x, const T* y, const T* dy, T* dx,
                        std::int64_t outputs);

/// One tensor of a multi-tensor update: its variable, gradient and slots (momentum's v; Adam's m, v;
/// RMSProp's mean square and, centered, mean gradient; null where the update has none), where its
/// learning rate and (Adam with bias correction) train step are on the device (in a plan, every
/// tensor's are the same), its element count and its own regularized gradient.
template <typename T> struct UpdateTensor {
  T* p = nullptr;
  T* slot1 = nullptr;
  T* slot2 = nullptr;
  const T* g = nullptr;
  const float* lr = nullptr;
  const std::int64_t* train_step = nullptr;
  std::int64_t count = 0;
  RegularizedGradient<T> regularized;
};
enum class UpdateKind : std::uint8_t { kSgd, kMomentum, kAdam, kRmsProp };
/// What the tensors of one multi-tensor update share: the update and its optimizer's constants.
template <typename T> struct SharedUpdate {
  UpdateKind kind = UpdateKind::kSgd;
  double beta1 = 0, beta2 = 0;  // Adam's bias correction
  AdamConstants<T> adam{};
  T momentum = 0;
  T decay = 0, one_minus_decay = 0, epsilon = 0;  // RMSProp
};
/// Every tensor's update with the functors of kernels/functors/update.hpp, as the one-tensor launchers
/// below make it, in one launch per kTensorsPerUpdateLaunch tensors (multi_update). float, double.
/// (UpdateTensor is about 80 bytes for double: a launch's arguments stay under CUDA's 4 KiB.)
inline constexpr int kTensorsPerUpdateLaunch = 24;
template <typename T>
void MultiTensorUpdate(void* stream, const SharedUpdate<T>& shared, const UpdateTensor<T>* tensors, int count);

// The optimizer updates, in place, reading the learning rate (f32) and the train step (i64) where
// the learning_rate and increment kernels wrote them on the device; float, double.
template <typename T>
void SgdUpdate(void* stream, T* p, const T* g, const float* lr, const RegularizedGradient<T>& regularized, std::int64_t count);
template <typename T>
void MomentumUpdate(void* stream, T* p, T* v, const T* g, const float* lr, T beta, const RegularizedGradient<T>& regularized,
                    std::int64_t count);
/// `train_step` null: no bias correction.
template <typename T>
void AdamUpdate(void* stream, T* p, T* m, T* v, const T* g, const float* lr, const std::int64_t* train_step, double beta1,
                double beta2, const AdamConstants<T>& constants, const RegularizedGradient<T>& regularized, std::int64_t count);
/// `mean_gradient` null: not centered.
template <typename T>
void RmsPropUpdate(void* stream, T* p, T* mean_square, T* mean_gradient, const T* g, const float* lr, T decay,
                   T one_minus_decay, T epsilon, const RegularizedGradient<T>& regularized, std::int64_t count);

/// LAMB, in place: m, v and the direction u (in `direction`, count elements of scratch), the squared
/// norms of p and u summed into `square_sums` (two doubles of scratch), then p -= lr ‖p‖/‖u‖ (u + wd p).
/// float, double.
template <typename T>
void LambUpdate(void* stream, T* p, T* m, T* v, const T* g, const float* lr, const std::int64_t* train_step, double beta1,
                double beta2, const AdamConstants<T>& constants, const RegularizedGradient<T>& regularized,
                double weight_decay, T* direction, double* square_sums, std::int64_t count);
/// Adds the squares of x's elements into *square_sum (a double on the device); float, double.
template <typename T> void AddSquares(void* stream, const T* x, std::int64_t count, double* square_sum);
/// y = x · clip / max(scale √(*square_sum), clip); float, double.
template <typename T>
void ScaleByGlobalNorm(void* stream, const T* x, T* y, std::int64_t count, const double* square_sum, double scale,
                       double clip);
/// Zeroes `bytes` of device memory on the stream.
void Zero(void* stream, void* memory, std::size_t bytes);

/// 2-D pooling on the geometry of kernels/functors/pool2d.hpp (asymmetric pads, which cuDNN's pooling
/// descriptors cannot express): forward a thread per output; the gradients a thread per input element,
/// summing over the windows that cover it (no atomics: deterministic). Max: the first largest of each
/// window, as the CPU reference. float, double.
template <typename T> void MaxPool2D(void* stream, const Pool2DGeometry& g, const T* x, T* y);
template <typename T> void MaxPool2DGrad(void* stream, const Pool2DGeometry& g, const T* dy, const T* x, T* dx);
template <typename T> void AvgPool2D(void* stream, const Pool2DGeometry& g, const T* x, T* y);
template <typename T> void AvgPool2DGrad(void* stream, const Pool2DGeometry& g, const T* dy, T* dx);

/// A cuDNN convolution of one pass on `g` (symmetric pads: ImageShift pads the input otherwise), its
/// descriptors and algorithm chosen once, on the current GPU (the fastest FP32-math algorithm cuDNN
/// times there); f32 or f64. Run: forward
/// (a = x, b = weight) -> y; backward data (a = dy, b = weight) -> dx; backward filter (a = dy, b = x) ->
/// dweight; `out` is overwritten, `workspace` holds WorkspaceBytes() of device memory. An NHWC
/// convolution cuDNN has no algorithm for runs in NCHW on transposed copies (in the workspace).
class Convolution {
 public:
  Convolution(const Conv2DGeometry& g, Conv2DPass pass, bool f64);
  ~Convolution();
  Convolution(const Convolution&) = delete;
  Convolution& operator=(const Convolution&) = delete;
  std::size_t WorkspaceBytes() const;
  void Run(void* stream, const void* a, const void* b, void* out, void* workspace) const;

 private:
  void RunCudnn(void* stream, const void* a, const void* b, void* out, void* workspace) const;
  struct Descriptors;  // cuDNN's, in conv2d.cu
  std::unique_ptr<Descriptors> d_;
};
/// dst = src shifted (kernels/functors/conv2d.hpp: pads or crops images); float, double.
template <typename T> void ShiftImages(void* stream, const ImageShift& shift, const T* src, T* dst);

/// Batch normalization, a block per channel (statistics in double, two passes as the CPU reference):
/// training writes the batch mean and biased variance and normalizes with them; inference normalizes
/// with the moving ones. float, double.
template <typename T>
void BatchNorm(void* stream, const ChannelLayout& layout, bool training, double epsilon, const T* x, const T* gamma,
               const T* beta, const T* moving_mean, const T* moving_variance, T* y, T* mean, T* variance);
/// Its gradient: dgamma, dbeta per channel and dx (training: through the batch statistics).
template <typename T>
void BatchNormGrad(void* stream, const ChannelLayout& layout, bool training, double epsilon, const T* dy, const T* x,
                   const T* gamma, const T* mean, const T* variance, T* dx, T* dgamma, T* dbeta);
/// The moving statistics' update, in place (kernels/functors/batch_norm.hpp).
template <typename T>
void BatchNormMovingUpdate(void* stream, T* moving_mean, T* moving_variance, const T* mean, const T* variance,
                           std::int64_t channels, double momentum, double unbias);

/// matmul_bias_act's GEMM in one cuBLASLt matmul with its BIAS or RELU_BIAS epilogue: row-major C (m x n)
/// = alpha op(A) op(B) + bias (one row of n, added to every row), then relu if asked. The descriptors
/// and the algorithm are chosen once, for the shapes, from cuBLASLt's heuristics; Ready() is false
/// when it offers none (the kernel then adds the bias and the relu itself). float.
class FusedGemm {
 public:
  FusedGemm(void* stream, bool transpose_a, bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
            bool relu);
  ~FusedGemm();
  FusedGemm(const FusedGemm&) = delete;
  FusedGemm& operator=(const FusedGemm&) = delete;
  bool Ready() const;
  void Run(void* stream, const float* a, const float* b, const float* bias, float* c);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Row-major C (m x n) = alpha op(A) op(B) through cuBLAS on the stream's handle; A is (m x k) or,
/// transposed, (k x m); B is (k x n) or (n x k). float, double.
template <typename T>
void Gemm(void* stream, bool transpose_a, bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
          const T* a, const T* b, T* c);

/// Row-major C += (factor · *lr) op(A) op(B): the scale read on the device (cuBLAS in device pointer
/// mode, `scalars` two T of device scratch for alpha and beta). float.
template <typename T>
void GemmAccumulate(void* stream, bool transpose_a, bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k,
                    const float* lr, double factor, const T* a, const T* b, T* c, T* scalars);

}  // namespace weir::internal::cuda
