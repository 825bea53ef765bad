// sgd_update, momentum_update, adam_update, rmsprop_update, lamb_update and multi_update on CUDA: the functors of
// kernels/functors/update.hpp (the CPU kernels') in place on the device, inputs as the CPU kernels
// take them: (p, g, lr[, slots...][, train step]).
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

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

// multi_update: the members' updates in one launch (per kTensorsPerUpdateLaunch tensors), inputs as
// the members take them, one member after the other (kernels/attrs/update_attrs.hpp).
template <typename T> class MultiUpdateCuda final : public Kernel {
 public:
  explicit MultiUpdateCuda(const KernelSetup& setup) : stream_(CudaStreamOf(setup)), attrs_(setup.Get<MultiUpdateAttrs>()) {
    if (attrs_.members.empty() || attrs_.members.size() != attrs_.arity.size()) {
      throw std::invalid_argument(fmt::format("[multi_update] '{}': {} members and {} arities", setup.op_name,
                                              attrs_.members.size(), attrs_.arity.size()));
    }
    const Optimizer& optimizer = attrs_.members[0].optimizer;
    if (attrs_.update == "sgd_update") {
      shared_.kind = cuda::UpdateKind::kSgd;
    } else if (attrs_.update == "momentum_update") {
      shared_.kind = cuda::UpdateKind::kMomentum;
      shared_.momentum = static_cast<T>(optimizer.momentum);
    } else if (attrs_.update == "adam_update") {
      shared_.kind = cuda::UpdateKind::kAdam;
      shared_.beta1 = optimizer.beta1;
      shared_.beta2 = optimizer.beta2;
      shared_.adam = MakeAdamConstants<T>(optimizer);
    } else if (attrs_.update == "rmsprop_update") {
      shared_.kind = cuda::UpdateKind::kRmsProp;
      shared_.decay = static_cast<T>(optimizer.decay_rate);
      shared_.one_minus_decay = static_cast<T>(1 - optimizer.decay_rate);
      shared_.epsilon = static_cast<T>(optimizer.epsilon);
    } else {
      throw std::invalid_argument(fmt::format("[multi_update] '{}': no multi-tensor {} (sgd_update, momentum_update, "
                                              "adam_update or rmsprop_update)", setup.op_name, attrs_.update));
    }
    bias_correction_ = shared_.kind == cuda::UpdateKind::kAdam && optimizer.do_bias_correction;
    std::size_t offset = 0;
    for (std::size_t j = 0; j < attrs_.members.size(); ++j) {
      offsets_.push_back(offset);
      tensors_.push_back({.count = setup.inputs[offset].shape.NumElements(),
                          .regularized = MakeRegularizedGradient<T>(attrs_.members[j])});
      offset += static_cast<std::size_t>(attrs_.arity[j]);
    }
    if (offset != setup.inputs.size()) {
      throw std::invalid_argument(fmt::format("[multi_update] '{}': the members take {} inputs, got {}", setup.op_name,
                                              offset, setup.inputs.size()));
    }
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView>) override {
    for (std::size_t j = 0; j < tensors_.size(); ++j) {
      const std::size_t o = offsets_[j];
      cuda::UpdateTensor<T>& tensor = tensors_[j];
      tensor.p = Mutable<T>(inputs[o]);
      tensor.g = inputs[o + 1].As<T>();
      tensor.lr = inputs[o + 2].As<float>();
      tensor.train_step = bias_correction_ ? inputs[o + 5].As<std::int64_t>() : nullptr;
      tensor.slot1 = attrs_.arity[j] > 3 ? Mutable<T>(inputs[o + 3]) : nullptr;
      const bool second_slot = shared_.kind == cuda::UpdateKind::kAdam || attrs_.arity[j] == 5;  // centered RMSProp
      tensor.slot2 = second_slot ? Mutable<T>(inputs[o + 4]) : nullptr;
    }
    cuda::MultiTensorUpdate<T>(stream_, shared_, tensors_.data(), static_cast<int>(tensors_.size()));
  }

 private:
  void* stream_;
  MultiUpdateAttrs attrs_;
  cuda::SharedUpdate<T> shared_;
  bool bias_correction_ = false;
  std::vector<std::size_t> offsets_;
  std::vector<cuda::UpdateTensor<T>> tensors_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"multi_update", Device::Kind::kCuda, DType::kF32}, &MakeKernel<MultiUpdateCuda<float>>);
  RegisterKernel({"multi_update", Device::Kind::kCuda, DType::kF64}, &MakeKernel<MultiUpdateCuda<double>>);
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
