// reduce_max, reduce_min (and reduce_prod, the same walk multiplying) and reduce_extremum_grad on the CPU. Like reduce_sum's walk, size-1 axes
// are dropped and neighbouring axes that are both reduced or both kept merged, so the common cases
// are a row reduction (innermost axis reduced) or an elementwise max into an output row.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "kernels/cpu/reduce.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

/// The merged iteration of x against its reduction: each innermost run is `count` contiguous
/// elements of x from `in`, mapped to outputs from `out` with step `out_stride` (0 when reduced).
class ReduceWalk {
 public:
  ReduceWalk(const Shape& x, const ReduceAttrs& attrs) : in_count_(x.NumElements()) {
    MergedReduction merged(x, attrs);
    dims_ = std::move(merged.dims);
    in_strides_ = std::move(merged.in_strides);
    out_strides_ = std::move(merged.out_strides);
  }

  /// Calls run(in, out, count, out_stride) for every innermost run; nothing for an empty x.
  template <typename Run> void Walk(Run&& run) const {
    if (in_count_ != 0) Walk(0, 0, 0, run);
  }

 private:
  template <typename Run> void Walk(std::size_t axis, std::int64_t in, std::int64_t out, Run& run) const {
    if (axis + 1 == dims_.size()) {
      run(in, out, dims_[axis], out_strides_[axis]);
      return;
    }
    for (std::int64_t i = 0; i < dims_[axis]; ++i) {
      Walk(axis + 1, in + i * in_strides_[axis], out + i * out_strides_[axis], run);
    }
  }

  std::int64_t in_count_;
  std::vector<std::int64_t> dims_;
  std::vector<std::int64_t> in_strides_;
  std::vector<std::int64_t> out_strides_;
};

template <typename T, typename Op> class ReduceExtremumCpu final : public Kernel {
 public:
  explicit ReduceExtremumCpu(const KernelSetup& setup)
      : walk_(setup.inputs[0].shape, setup.Get<ReduceAttrs>()), out_count_(setup.outputs[0].shape.NumElements()) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    T* y = outputs[0].As<T>();
    std::fill(y, y + out_count_, Op::template Identity<T>());
    walk_.Walk([x, y](std::int64_t in, std::int64_t out, std::int64_t count, std::int64_t out_stride) {
      const T* row = x + in;
      if (out_stride == 0) {
        T acc = y[out];
        for (std::int64_t i = 0; i < count; ++i) acc = Op::Combine(acc, row[i]);
        y[out] = acc;
      } else {
        T* out_row = y + out;  // kept innermost axes are contiguous in y too
        for (std::int64_t i = 0; i < count; ++i) out_row[i] = Op::Combine(out_row[i], row[i]);
      }
    });
  }

 private:
  ReduceWalk walk_;
  std::int64_t out_count_;
};

template <typename T> class ReduceExtremumGradCpu final : public Kernel {
 public:
  explicit ReduceExtremumGradCpu(const KernelSetup& setup)
      : walk_(setup.inputs[0].shape, setup.Get<ReduceAttrs>()),
        ties_(static_cast<std::size_t>(setup.inputs[1].shape.NumElements())) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    const T* y = inputs[1].As<T>();
    const T* dy = inputs[2].As<T>();
    T* dx = outputs[0].As<T>();
    std::int64_t* ties = ties_.data();
    std::fill(ties_.begin(), ties_.end(), 0);
    walk_.Walk([=](std::int64_t in, std::int64_t out, std::int64_t count, std::int64_t out_stride) {
      for (std::int64_t i = 0; i < count; ++i) ties[out + i * out_stride] += x[in + i] == y[out + i * out_stride];
    });
    walk_.Walk([=](std::int64_t in, std::int64_t out, std::int64_t count, std::int64_t out_stride) {
      for (std::int64_t i = 0; i < count; ++i) {
        const std::int64_t o = out + i * out_stride;
        dx[in + i] = x[in + i] == y[o] ? dy[o] / static_cast<T>(ties[o]) : T(0);
      }
    });
  }

 private:
  ReduceWalk walk_;
  std::vector<std::int64_t> ties_;  // per output: elements of x equal to it
};

template <typename Op> void RegisterExtremum(const char* op_type) {
  RegisterKernel({op_type, Device::Kind::kCpu, DType::kF32}, &MakeKernel<ReduceExtremumCpu<float, Op>>);
  RegisterKernel({op_type, Device::Kind::kCpu, DType::kF64}, &MakeKernel<ReduceExtremumCpu<double, Op>>);
  RegisterKernel({op_type, Device::Kind::kCpu, DType::kI32}, &MakeKernel<ReduceExtremumCpu<std::int32_t, Op>>);
  RegisterKernel({op_type, Device::Kind::kCpu, DType::kI64}, &MakeKernel<ReduceExtremumCpu<std::int64_t, Op>>);
}

WEIR_REGISTER_KERNELS {
  RegisterExtremum<MaxOp>("reduce_max");
  RegisterExtremum<MinOp>("reduce_min");
  RegisterExtremum<ProdOp>("reduce_prod");  // the same walk, multiplying (graph/ops/reduce_prod.cpp)
  RegisterKernel({"reduce_extremum_grad", Device::Kind::kCpu, DType::kF32}, &MakeKernel<ReduceExtremumGradCpu<float>>);
  RegisterKernel({"reduce_extremum_grad", Device::Kind::kCpu, DType::kF64}, &MakeKernel<ReduceExtremumGradCpu<double>>);
}

}  // namespace
}  // namespace weir::internal
