// softmax on the CPU: x viewed as (outer, n, inner) with the softmax axis in the middle. The row
// maximum is subtracted before exp so nothing overflows; the sum is accumulated in double. f32 rows
// along the last axis take the vectorized loop (vector/softmax_f32.hpp), split over the intra-op pool.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/cpu/byte_copy.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "kernels/cpu/vector/softmax_f32.hpp"
#include "kernels/functors/softmax.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> class SoftmaxCpu final : public Kernel {
 public:
  explicit SoftmaxCpu(const KernelSetup& setup)
      : split_(setup.inputs[0].shape, setup.Get<SoftmaxAttrs>().axis), outer_(split_.outer), n_(split_.n),
        inner_(split_.inner) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    T* y = outputs[0].As<T>();
    if (n_ == 0) return;
    if constexpr (std::is_same_v<T, float>) {
      if (inner_ == 1) {  // rows along the last axis (attention scores): the vectorized loop, rows split over the pool
        const int chunks = outer_ * n_ >= kParallelElements && outer_ > 1 ? IntraOpThreads() : 1;
        ParallelFor(chunks, [&](int i) {
          const std::int64_t begin = ChunkBegin(outer_, chunks, i);
          SoftmaxRowsF32(x + begin * n_, y + begin * n_, ChunkBegin(outer_, chunks, i + 1) - begin, n_);
        });
        return;
      }
    }
    const std::int64_t stride = inner_;
    for (std::int64_t o = 0; o < outer_; ++o) {
      for (std::int64_t i = 0; i < inner_; ++i) {
        const std::int64_t base = o * n_ * inner_ + i;
        SoftmaxAlong(x + base, y + base, n_, stride);
      }
    }
  }

 private:
  AxisSplit split_;
  std::int64_t outer_;
  std::int64_t n_;
  std::int64_t inner_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"softmax", Device::Kind::kCpu, DType::kF32}, &MakeKernel<SoftmaxCpu<float>>);
  RegisterKernel({"softmax", Device::Kind::kCpu, DType::kF64}, &MakeKernel<SoftmaxCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
