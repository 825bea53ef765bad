// batch_norm, batch_norm_grad and batch_norm_moving_update on the CPU. x is viewed as
// (outer, C, inner) around the channel axis, which covers every axis. f32, and bf16 data with f32
// parameters and statistics (mixed precision), go through oneDNN's batch normalization (primitives,
// reorders and buffers made once per task); f64 through reference loops that accumulate in double
// (their formulas: kernels/functors/batch_norm.hpp, which the CUDA kernels run).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>

#include "kernels/attrs/batch_norm_attrs.hpp"
#include "kernels/axis_split.hpp"
#include "kernels/cpu/dnnl_engine.hpp"
#include "kernels/cpu/widened.hpp"
#include "kernels/functors/batch_norm.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

/// x as (outer, channels, inner): the axes before the channel axis, the channel axis, those after.
struct ChannelView {
  std::int64_t outer = 1, channels = 1, inner = 1;

  std::int64_t PerChannel() const { return outer * inner; }
  bool Empty() const { return outer * channels * inner == 0; }
  /// Calls fn(index) for every element of channel c.
  template <typename Fn> void ForChannel(std::int64_t c, Fn&& fn) const {
    for (std::int64_t o = 0; o < outer; ++o) {
      const std::int64_t base = (o * channels + c) * inner;
      for (std::int64_t i = 0; i < inner; ++i) fn(base + i);
    }
  }
};

ChannelView ViewAroundAxis(const Shape& x, int axis) {
  const AxisSplit split(x, axis);
  return {split.outer, split.n, split.inner};
}

/// The user's layout of the view for oneDNN, 4-D: (outer, C, 1, 1) channels last when nothing
/// follows the channel axis, else (outer, C, inner, 1) channels first. oneDNN reduces over every dim
/// but dim 1. (oneDNN's 2-D and 3-D plain layouts run on slow reference code.)
dnnl::memory::desc UserLayout(const ChannelView& view, dnnl::memory::data_type data) {
  using tag = dnnl::memory::format_tag;
  if (view.inner == 1) return dnnl::memory::desc({view.outer, view.channels, 1, 1}, data, tag::nhwc);
  return dnnl::memory::desc({view.outer, view.channels, view.inner, 1}, data, tag::nchw);
}

/// x's data type for oneDNN: f32, or bf16 (whose parameters and statistics oneDNN keeps in f32).
dnnl::memory::data_type DataType(DType x) {
  return x == DType::kBF16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
}

dnnl::normalization_flags DnnlFlags(bool training) {
  const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
  return training ? flags : flags | dnnl::normalization_flags::use_global_stats;
}

dnnl::batch_normalization_forward::primitive_desc ForwardDesc(const dnnl::memory::desc& data, bool training,
                                                              double epsilon, bool for_training) {
  return {{for_training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference, data,
           static_cast<float>(epsilon), DnnlFlags(training)},
          CpuEngine()};
}

/// The layout oneDNN computes in. Channels last runs on its JIT code as it is; channels first runs
/// there only in a channel-blocked layout (about twice as fast as plain NCHW even with the
/// reorders), unless there are too few channels for the blocks to pay.
dnnl::memory::desc ComputeLayout(const ChannelView& view, dnnl::memory::data_type data, bool training, double epsilon) {
  const dnnl::memory::desc user = UserLayout(view, data);
  if (view.inner == 1 || view.channels < 8) return user;
  for (const auto blocked : {dnnl::memory::format_tag::nChw16c, dnnl::memory::format_tag::nChw8c}) {
    const dnnl::memory::desc candidate({view.outer, view.channels, view.inner, 1}, data, blocked);
    const std::string implementation = ForwardDesc(candidate, training, epsilon, true).impl_info_str();
    if (implementation.find("jit") != std::string::npos) return candidate;
  }
  return user;
}

/// One tensor of the user's layout seen by oneDNN in the compute layout: a memory on the user's
/// buffer (its handle set per call) and, when the layouts differ, a buffer of the kernel's own and
/// the reorder between them.
class LayoutBridge {
 public:
  LayoutBridge() = default;
  LayoutBridge(const dnnl::memory::desc& user, const dnnl::memory::desc& compute, bool input)
      : user_(user, CpuEngine(), DNNL_MEMORY_NONE) {
    if (user == compute) {
      compute_ = user_;
      return;
    }
    buffer_.resize((compute.get_size() + sizeof(float) - 1) / sizeof(float));
    compute_ = dnnl::memory(compute, CpuEngine(), buffer_.data());
    reorder_ = input ? dnnl::reorder(user_, compute_) : dnnl::reorder(compute_, user_);
    args_ = {{DNNL_ARG_FROM, input ? user_ : compute_}, {DNNL_ARG_TO, input ? compute_ : user_}};
  }

  /// The memory to hand to the batch-normalization primitive.
  const dnnl::memory& Compute() const { return compute_; }
  void Bind(const void* data) { user_.set_data_handle(const_cast<void*>(data)); }
  /// Copies between the user's buffer and the compute buffer, if they differ.
  void Reorder(dnnl::stream& stream) {
    if (!buffer_.empty()) reorder_.execute(stream, args_);
  }

 private:
  dnnl::memory user_, compute_;
  std::vector<float> buffer_;
  dnnl::reorder reorder_;
  std::unordered_map<int, dnnl::memory> args_;
};

dnnl::memory ParamsMemory(const ChannelView& view) {
  return dnnl::memory(dnnl::memory::desc({view.channels}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a),
                      CpuEngine(), DNNL_MEMORY_NONE);
}

// Inputs: x, gamma, beta, moving_mean, moving_variance. Outputs: y, and in training the batch
// mean and biased variance.
class BatchNormCpu final : public Kernel {
 public:
  explicit BatchNormCpu(const KernelSetup& setup)
      : training_(setup.Get<BatchNormAttrs>().training),
        view_(ViewAroundAxis(setup.inputs[0].shape, setup.Get<BatchNormAttrs>().axis)) {
    if (view_.Empty()) return;
    const double epsilon = setup.Get<BatchNormAttrs>().epsilon;
    const dnnl::memory::data_type data = DataType(setup.inputs[0].dtype);
    const dnnl::memory::desc user = UserLayout(view_, data);
    const dnnl::memory::desc compute = ComputeLayout(view_, data, training_, epsilon);
    primitive_ = dnnl::batch_normalization_forward(ForwardDesc(compute, training_, epsilon, training_));
    x_ = LayoutBridge(user, compute, true);
    y_ = LayoutBridge(user, compute, false);
    for (dnnl::memory* memory : {&gamma_, &beta_, &mean_, &variance_}) *memory = ParamsMemory(view_);
    args_ = {{DNNL_ARG_SRC, x_.Compute()}, {DNNL_ARG_DST, y_.Compute()}, {DNNL_ARG_SCALE, gamma_},
             {DNNL_ARG_SHIFT, beta_},      {DNNL_ARG_MEAN, mean_},        {DNNL_ARG_VARIANCE, variance_}};
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (view_.Empty()) return;
    x_.Bind(inputs[0].data);
    gamma_.set_data_handle(const_cast<void*>(inputs[1].data));
    beta_.set_data_handle(const_cast<void*>(inputs[2].data));
    y_.Bind(outputs[0].data);
    // Training writes the batch statistics; inference reads the moving ones.
    mean_.set_data_handle(training_ ? outputs[1].data : const_cast<void*>(inputs[3].data));
    variance_.set_data_handle(training_ ? outputs[2].data : const_cast<void*>(inputs[4].data));
    x_.Reorder(stream_);
    primitive_.execute(stream_, args_);
    y_.Reorder(stream_);
    stream_.wait();
  }

 private:
  bool training_;
  ChannelView view_;
  dnnl::stream stream_{CpuEngine()};
  dnnl::batch_normalization_forward primitive_;
  LayoutBridge x_, y_;
  dnnl::memory gamma_, beta_, mean_, variance_;
  std::unordered_map<int, dnnl::memory> args_;
};

// Inputs: dy, x, gamma, mean, variance. Outputs: dx, dgamma, dbeta.
class BatchNormGradCpu final : public Kernel {
 public:
  explicit BatchNormGradCpu(const KernelSetup& setup)
      : view_(ViewAroundAxis(setup.inputs[1].shape, setup.Get<BatchNormAttrs>().axis)) {
    const auto& attrs = setup.Get<BatchNormAttrs>();
    if (view_.Empty()) return;
    const dnnl::memory::data_type data = DataType(setup.inputs[1].dtype);
    const dnnl::memory::desc user = UserLayout(view_, data);
    const dnnl::memory::desc compute = ComputeLayout(view_, data, attrs.training, attrs.epsilon);
    // The backward primitive needs a forward one as a hint; it is never run.
    const auto hint = ForwardDesc(compute, attrs.training, attrs.epsilon, true);
    primitive_ = dnnl::batch_normalization_backward(dnnl::batch_normalization_backward::primitive_desc(
        {dnnl::prop_kind::backward, compute, compute, static_cast<float>(attrs.epsilon), DnnlFlags(attrs.training)},
        CpuEngine(), hint));
    dy_ = LayoutBridge(user, compute, true);
    x_ = LayoutBridge(user, compute, true);
    dx_ = LayoutBridge(user, compute, false);
    for (dnnl::memory* memory : {&gamma_, &mean_, &variance_, &dgamma_, &dbeta_}) *memory = ParamsMemory(view_);
    // oneDNN 2.6 insists on a shift argument with use_shift although the backward never reads it.
    unused_shift_.assign(static_cast<std::size_t>(view_.channels), 0.f);
    dnnl::memory shift = ParamsMemory(view_);
    shift.set_data_handle(unused_shift_.data());
    args_ = {{DNNL_ARG_DIFF_DST, dy_.Compute()}, {DNNL_ARG_SRC, x_.Compute()},  {DNNL_ARG_SCALE, gamma_},
             {DNNL_ARG_MEAN, mean_},             {DNNL_ARG_VARIANCE, variance_}, {DNNL_ARG_DIFF_SRC, dx_.Compute()},
             {DNNL_ARG_DIFF_SCALE, dgamma_},     {DNNL_ARG_DIFF_SHIFT, dbeta_},  {DNNL_ARG_SHIFT, shift}};
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (view_.Empty()) {
      // No elements: the parameter gradients are empty sums.
      for (std::size_t i = 1; i < 3; ++i) std::fill_n(outputs[i].As<float>(), outputs[i].NumElements(), 0.f);
      return;
    }
    dy_.Bind(inputs[0].data);
    x_.Bind(inputs[1].data);
    gamma_.set_data_handle(const_cast<void*>(inputs[2].data));
    mean_.set_data_handle(const_cast<void*>(inputs[3].data));
    variance_.set_data_handle(const_cast<void*>(inputs[4].data));
    dx_.Bind(outputs[0].data);
    dgamma_.set_data_handle(outputs[1].data);
    dbeta_.set_data_handle(outputs[2].data);
    dy_.Reorder(stream_);
    x_.Reorder(stream_);
    primitive_.execute(stream_, args_);
    dx_.Reorder(stream_);
    stream_.wait();
  }

 private:
  ChannelView view_;
  dnnl::stream stream_{CpuEngine()};
  dnnl::batch_normalization_backward primitive_;
  LayoutBridge dy_, x_, dx_;
  dnnl::memory gamma_, mean_, variance_, dgamma_, dbeta_;
  std::vector<float> unused_shift_;
  std::unordered_map<int, dnnl::memory> args_;
};

template <typename T> class BatchNormReferenceCpu final : public Kernel {
 public:
  explicit BatchNormReferenceCpu(const KernelSetup& setup)
      : attrs_(setup.Get<BatchNormAttrs>()), view_(ViewAroundAxis(setup.inputs[0].shape, attrs_.axis)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* x = inputs[0].As<T>();
    const T* gamma = inputs[1].As<T>();
    const T* beta = inputs[2].As<T>();
    T* y = outputs[0].As<T>();
    const auto count = static_cast<double>(view_.PerChannel());
    for (std::int64_t c = 0; c < view_.channels; ++c) {
      double mean = 0, variance = 0;
      if (attrs_.training) {
        view_.ForChannel(c, [&](std::int64_t i) { mean += x[i]; });
        mean /= count;
        view_.ForChannel(c, [&](std::int64_t i) { variance += (x[i] - mean) * (x[i] - mean); });
        variance /= count;  // biased, for normalizing
        outputs[1].As<T>()[c] = static_cast<T>(mean);
        outputs[2].As<T>()[c] = static_cast<T>(variance);
      } else {
        mean = inputs[3].As<T>()[c];
        variance = inputs[4].As<T>()[c];
      }
      const double scale = gamma[c] / std::sqrt(variance + attrs_.epsilon);
      view_.ForChannel(c, [&](std::int64_t i) { y[i] = static_cast<T>((x[i] - mean) * scale + beta[c]); });
    }
  }

 private:
  BatchNormAttrs attrs_;
  ChannelView view_;
};

template <typename T> class BatchNormGradReferenceCpu final : public Kernel {
 public:
  explicit BatchNormGradReferenceCpu(const KernelSetup& setup)
      : attrs_(setup.Get<BatchNormAttrs>()), view_(ViewAroundAxis(setup.inputs[1].shape, attrs_.axis)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const T* dy = inputs[0].As<T>();
    const T* x = inputs[1].As<T>();
    const T* gamma = inputs[2].As<T>();
    T* dx = outputs[0].As<T>();
    const auto count = static_cast<double>(view_.PerChannel());
    for (std::int64_t c = 0; c < view_.channels; ++c) {
      const double mean = inputs[3].As<T>()[c];
      const double inv_std = 1.0 / std::sqrt(inputs[4].As<T>()[c] + attrs_.epsilon);
      double dbeta = 0, dgamma = 0;
      view_.ForChannel(c, [&](std::int64_t i) {
        dbeta += dy[i];
        dgamma += dy[i] * (x[i] - mean) * inv_std;
      });
      outputs[1].As<T>()[c] = static_cast<T>(dgamma);
      outputs[2].As<T>()[c] = static_cast<T>(dbeta);
      const double scale = gamma[c] * inv_std;
      if (attrs_.training) {
        view_.ForChannel(c, [&](std::int64_t i) {
          const double normalized = (x[i] - mean) * inv_std;
          dx[i] = static_cast<T>(BatchNormTrainingDx(scale, dy[i], normalized, dbeta, dgamma, count));
        });
      } else {
        view_.ForChannel(c, [&](std::int64_t i) { dx[i] = static_cast<T>(scale * dy[i]); });
      }
    }
  }

 private:
  BatchNormAttrs attrs_;
  ChannelView view_;
};

// Inputs: moving_mean, moving_variance (written in place), batch mean, batch biased variance.
template <typename T> class BatchNormMovingUpdateCpu final : public Kernel {
 public:
  explicit BatchNormMovingUpdateCpu(const KernelSetup& setup)
      : attrs_(setup.Get<BatchNormMovingUpdateAttrs>()), channels_(setup.inputs[0].shape.NumElements()) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    T* moving_mean = const_cast<T*>(inputs[0].As<T>());
    T* moving_variance = const_cast<T*>(inputs[1].As<T>());
    const T* mean = inputs[2].As<T>();
    const T* variance = inputs[3].As<T>();
    const double momentum = attrs_.momentum;
    // Bessel's correction; a single element per channel has no unbiased variance, so it stays biased.
    const double unbias = attrs_.count > 1 ? static_cast<double>(attrs_.count) / static_cast<double>(attrs_.count - 1) : 1.0;
    for (std::int64_t c = 0; c < channels_; ++c) {
      MovingStatistics(moving_mean[c], moving_variance[c], mean[c], variance[c], momentum, unbias);
    }
  }

 private:
  BatchNormMovingUpdateAttrs attrs_;
  std::int64_t channels_;
};

// bf16 x with f32 parameters (mixed precision) on oneDNN where it runs bf16; all-bf16 tensors, and
// CPUs without bf16 primitives, through the f32 kernel (kernels/cpu/widened.hpp).
// kGamma: gamma's input index (batch_norm 1, batch_norm_grad 2).
template <typename DnnlKernel, std::size_t kGamma> std::unique_ptr<Kernel> MakeBFloat16Kernel(const KernelSetup& setup) {
  if (setup.inputs[kGamma].dtype == DType::kF32 && DnnlRunsBFloat16()) return std::make_unique<DnnlKernel>(setup);
  return MakeWidenedKernel(setup);
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"batch_norm", Device::Kind::kCpu, DType::kF32}, &MakeKernel<BatchNormCpu>);
  RegisterKernel({"batch_norm", Device::Kind::kCpu, DType::kBF16}, &MakeBFloat16Kernel<BatchNormCpu, 1>);
  RegisterKernel({"batch_norm_grad", Device::Kind::kCpu, DType::kBF16}, &MakeBFloat16Kernel<BatchNormGradCpu, 2>);
  RegisterKernel({"batch_norm", Device::Kind::kCpu, DType::kF64}, &MakeKernel<BatchNormReferenceCpu<double>>);
  RegisterKernel({"batch_norm_grad", Device::Kind::kCpu, DType::kF32}, &MakeKernel<BatchNormGradCpu>);
  RegisterKernel({"batch_norm_grad", Device::Kind::kCpu, DType::kF64}, &MakeKernel<BatchNormGradReferenceCpu<double>>);
  RegisterKernel({"batch_norm_moving_update", Device::Kind::kCpu, DType::kF32},
                 &MakeKernel<BatchNormMovingUpdateCpu<float>>);
  RegisterKernel({"batch_norm_moving_update", Device::Kind::kCpu, DType::kF64},
                 &MakeKernel<BatchNormMovingUpdateCpu<double>>);
  // 16-bit moving statistics (a float16 batch norm's) move in double, rounded once; the update writes
  // its inputs in place, so it cannot run widened between conversions as other 16-bit ops do.
  RegisterKernel({"batch_norm_moving_update", Device::Kind::kCpu, DType::kF16},
                 &MakeKernel<BatchNormMovingUpdateCpu<float16>>);
  RegisterKernel({"batch_norm_moving_update", Device::Kind::kCpu, DType::kBF16},
                 &MakeKernel<BatchNormMovingUpdateCpu<bfloat16>>);
}

}  // namespace
}  // namespace weir::internal
