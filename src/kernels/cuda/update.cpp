// sgd_update, momentum_update, adam_update, rmsprop_update and lamb_update on CUDA: the functors of
// kernels/functors/update.hpp (the CPU kernels') in place on the device, inputs as the CPU kernels
// take them: (p, g, lr[, slots...][, train step]).
#include <cstdint>

#include "kernels/attrs/update_params.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/launch.hpp"

namespace weir::internal {
namespace {

template <typename T> T* Mutable(const ConstTensorView& view) { return const_cast<T*>(view.As<T>()); }

template <typename T> class SgdUpdateCuda final : public Kernel {
 public:
  explicit SgdUpdateCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), regularized_(MakeRegularizedGradient<T>(setup.Get<UpdateAttrs>())),
        beta_(static_cast<T>(setup.Get<UpdateAttrs>().optimizer.momentum)), count_(setup.inputs[0].shape.NumElements()),
        momentum_(setup.op_type == "momentum_update") {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    const float* lr = inputs[2].As<float>();
    if (!momentum_) {
      cuda::SgdUpdate<T>(stream_, Mutable<T>(inputs[0]), inputs[1].As<T>(), lr, regularized_, count_);
      return;
    }
    cuda::MomentumUpdate<T>(stream_, Mutable<T>(inputs[0]), Mutable<T>(inputs[3]), inputs[1].As<T>(), lr, beta_, regularized_,
                            count_);
  }

 private:
  void* stream_;
  RegularizedGradient<T> regularized_;
  T beta_;
  std::int64_t count_;
  bool momentum_;
};

template <typename T> class AdamUpdateCuda final : public Kernel {
 public:
  explicit AdamUpdateCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), optimizer_(setup.Get<UpdateAttrs>().optimizer),
        regularized_(MakeRegularizedGradient<T>(setup.Get<UpdateAttrs>())), constants_(MakeAdamConstants<T>(optimizer_)),
        count_(setup.inputs[0].shape.NumElements()) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    const std::int64_t* step = optimizer_.do_bias_correction ? inputs[5].As<std::int64_t>() : nullptr;
    cuda::AdamUpdate<T>(stream_, Mutable<T>(inputs[0]), Mutable<T>(inputs[3]), Mutable<T>(inputs[4]), inputs[1].As<T>(),
                        inputs[2].As<float>(), step, optimizer_.beta1, optimizer_.beta2, constants_, regularized_, count_);
  }

 private:
  void* stream_;
  Optimizer optimizer_;
  RegularizedGradient<T> regularized_;
  AdamConstants<T> constants_;
  std::int64_t count_;
};

template <typename T> class RmsPropUpdateCuda final : public Kernel {
 public:
  explicit RmsPropUpdateCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), attrs_(setup.Get<UpdateAttrs>()),
        regularized_(MakeRegularizedGradient<T>(attrs_)), count_(setup.inputs[0].shape.NumElements()),
        centered_(setup.inputs.size() == 5) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    const double decay = attrs_.optimizer.decay_rate;
    cuda::RmsPropUpdate<T>(stream_, Mutable<T>(inputs[0]), Mutable<T>(inputs[3]), centered_ ? Mutable<T>(inputs[4]) : nullptr,
                           inputs[1].As<T>(), inputs[2].As<float>(), static_cast<T>(decay), static_cast<T>(1 - decay),
                           static_cast<T>(attrs_.optimizer.epsilon), regularized_, count_);
  }

 private:
  void* stream_;
  UpdateAttrs attrs_;
  RegularizedGradient<T> regularized_;
  std::int64_t count_;
  bool centered_;
};

// (p, g, lr, m, v, train step); the direction and the two squared norms live in scratch memory.
template <typename T> class LambUpdateCuda final : public Kernel {
 public:
  explicit LambUpdateCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), attrs_(setup.Get<UpdateAttrs>()), regularized_(MakeRegularizedGradient<T>(attrs_)),
        constants_(MakeAdamConstants<T>(attrs_.optimizer)), count_(setup.inputs[0].shape.NumElements()),
        scratch_(setup.device.index, 2 * sizeof(double) + static_cast<std::size_t>(count_) * sizeof(T)) {}
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    const Optimizer& optimizer = attrs_.optimizer;
    cuda::LambUpdate<T>(stream_, Mutable<T>(inputs[0]), Mutable<T>(inputs[3]), Mutable<T>(inputs[4]), inputs[1].As<T>(),
                        inputs[2].As<float>(), inputs[5].As<std::int64_t>(), optimizer.beta1, optimizer.beta2, constants_,
                        regularized_, optimizer.weight_decay, scratch_.As<T>(2 * sizeof(double)), scratch_.As<double>(),
                        count_);
  }

 private:
  void* stream_;
  UpdateAttrs attrs_;
  RegularizedGradient<T> regularized_;
  AdamConstants<T> constants_;
  std::int64_t count_;
  DeviceScratch scratch_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"lamb_update", Device::Kind::kCuda, DType::kF32}, &MakeKernel<LambUpdateCuda<float>>);
  RegisterKernel({"lamb_update", Device::Kind::kCuda, DType::kF64}, &MakeKernel<LambUpdateCuda<double>>);
  for (const char* op : {"sgd_update", "momentum_update"}) {
    RegisterKernel({op, Device::Kind::kCuda, DType::kF32}, &MakeKernel<SgdUpdateCuda<float>>);
    RegisterKernel({op, Device::Kind::kCuda, DType::kF64}, &MakeKernel<SgdUpdateCuda<double>>);
  }
  RegisterKernel({"adam_update", Device::Kind::kCuda, DType::kF32}, &MakeKernel<AdamUpdateCuda<float>>);
  RegisterKernel({"adam_update", Device::Kind::kCuda, DType::kF64}, &MakeKernel<AdamUpdateCuda<double>>);
  RegisterKernel({"rmsprop_update", Device::Kind::kCuda, DType::kF32}, &MakeKernel<RmsPropUpdateCuda<float>>);
  RegisterKernel({"rmsprop_update", Device::Kind::kCuda, DType::kF64}, &MakeKernel<RmsPropUpdateCuda<double>>);
}

}  // namespace
}  // namespace weir::internal
