// multi_update on CUDA: the members' updates (sgd, momentum, adam or rmsprop, the functors of
// kernels/functors/update.hpp that the one-tensor kernels run) in one launch per
// kTensorsPerUpdateLaunch tensors, the tensors passed by value in the launch's arguments. Inputs as the
// members take them, one member after the other (kernels/attrs/update_attrs.hpp).
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "kernels/attrs/update_params.hpp"
#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"

namespace weir::internal {
namespace {

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

// UpdateTensor is about 80 bytes for double: a launch's arguments (a batch) stay under CUDA's 4 KiB.
inline constexpr int kTensorsPerUpdateLaunch = 24;

// Up to kTensorsPerUpdateLaunch tensors with where each begins in their concatenation.
template <typename T> struct UpdateBatch {
  UpdateTensor<T> tensor[kTensorsPerUpdateLaunch];
  std::int64_t begin[kTensorsPerUpdateLaunch + 1];
  int count;
};

template <typename T> __global__ void MultiTensorUpdateKernel(SharedUpdate<T> shared, UpdateBatch<T> batch) {
  // Each tensor's rate as the one-tensor kernels derive it, once per block.
  __shared__ T rates[kTensorsPerUpdateLaunch];
  if (static_cast<int>(threadIdx.x) < batch.count) {
    const UpdateTensor<T>& x = batch.tensor[threadIdx.x];
    const double corrected = shared.kind == UpdateKind::kAdam && x.train_step != nullptr
                                 ? AdamBiasCorrectedRate(*x.lr, shared.beta1, shared.beta2, *x.train_step)
                                 : static_cast<double>(*x.lr);
    rates[threadIdx.x] = static_cast<T>(corrected);
  }
  __syncthreads();
  WEIR_FOR_EACH_ELEMENT(i, batch.begin[batch.count]) {
    // The last tensor that begins at or before i (an empty tensor begins where the next one does).
    int lo = 0, hi = batch.count - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (batch.begin[mid] <= i) lo = mid;
      else hi = mid - 1;
    }
    const UpdateTensor<T>& x = batch.tensor[lo];
    const std::int64_t j = i - batch.begin[lo];
    const T rate = rates[lo];
    switch (shared.kind) {
      case UpdateKind::kSgd: SgdStep(x.p[j], x.g[j], rate, x.regularized); break;
      case UpdateKind::kMomentum: MomentumStep(x.p[j], x.slot1[j], x.g[j], rate, shared.momentum, x.regularized); break;
      case UpdateKind::kAdam: AdamStep(x.p[j], x.slot1[j], x.slot2[j], x.g[j], rate, shared.adam, x.regularized); break;
      case UpdateKind::kRmsProp:
        RmsPropStep(x.p[j], x.slot1[j], x.slot2 != nullptr ? &x.slot2[j] : nullptr, x.g[j], rate, shared.decay,
                    shared.one_minus_decay, shared.epsilon, x.regularized);
        break;
    }
  }
}

template <typename T> class MultiUpdateCuda final : public Kernel {
 public:
  explicit MultiUpdateCuda(const KernelSetup& setup) : stream_(CudaStreamOf(setup)), attrs_(setup.Get<MultiUpdateAttrs>()) {
    if (attrs_.members.empty() || attrs_.members.size() != attrs_.arity.size()) {
      throw std::invalid_argument(fmt::format("[multi_update] '{}': {} members and {} arities", setup.op_name,
                                              attrs_.members.size(), attrs_.arity.size()));
    }
    const Optimizer& optimizer = attrs_.members[0].optimizer;
    if (attrs_.update == "sgd_update") {
      shared_.kind = UpdateKind::kSgd;
    } else if (attrs_.update == "momentum_update") {
      shared_.kind = UpdateKind::kMomentum;
      shared_.momentum = static_cast<T>(optimizer.momentum);
    } else if (attrs_.update == "adam_update") {
      shared_.kind = UpdateKind::kAdam;
      shared_.beta1 = optimizer.beta1;
      shared_.beta2 = optimizer.beta2;
      shared_.adam = MakeAdamConstants<T>(optimizer);
    } else if (attrs_.update == "rmsprop_update") {
      shared_.kind = UpdateKind::kRmsProp;
      shared_.decay = static_cast<T>(optimizer.decay_rate);
      shared_.one_minus_decay = static_cast<T>(1 - optimizer.decay_rate);
      shared_.epsilon = static_cast<T>(optimizer.epsilon);
    } else {
      throw std::invalid_argument(fmt::format("[multi_update] '{}': no multi-tensor {} (sgd_update, momentum_update, "
                                              "adam_update or rmsprop_update)", setup.op_name, attrs_.update));
    }
    bias_correction_ = shared_.kind == UpdateKind::kAdam && optimizer.do_bias_correction;
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
      UpdateTensor<T>& tensor = tensors_[j];
      tensor.p = MutableOf<T>(inputs[o]);
      tensor.g = inputs[o + 1].As<T>();
      tensor.lr = inputs[o + 2].As<float>();
      tensor.train_step = bias_correction_ ? inputs[o + 5].As<std::int64_t>() : nullptr;
      tensor.slot1 = attrs_.arity[j] > 3 ? MutableOf<T>(inputs[o + 3]) : nullptr;
      const bool second_slot = shared_.kind == UpdateKind::kAdam || attrs_.arity[j] == 5;  // centered RMSProp
      tensor.slot2 = second_slot ? MutableOf<T>(inputs[o + 4]) : nullptr;
    }
    const int count = static_cast<int>(tensors_.size());
    for (int first = 0; first < count; first += kTensorsPerUpdateLaunch) {
      UpdateBatch<T> batch{};
      batch.count = count - first < kTensorsPerUpdateLaunch ? count - first : kTensorsPerUpdateLaunch;
      for (int t = 0; t < batch.count; ++t) {
        batch.tensor[t] = tensors_[static_cast<std::size_t>(first + t)];
        batch.begin[t + 1] = batch.begin[t] + batch.tensor[t].count;
      }
      cuda::LaunchOver(stream_, batch.begin[batch.count], &MultiTensorUpdateKernel<T>, shared_, batch);
    }
  }

 private:
  void* stream_;
  MultiUpdateAttrs attrs_;
  SharedUpdate<T> shared_;
  bool bias_correction_ = false;
  std::vector<std::size_t> offsets_;
  std::vector<UpdateTensor<T>> tensors_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"multi_update", Device::Kind::kCuda, DType::kF32}, &MakeKernel<MultiUpdateCuda<float>>);
  RegisterKernel({"multi_update", Device::Kind::kCuda, DType::kF64}, &MakeKernel<MultiUpdateCuda<double>>);
}

}  // namespace
}  // namespace weir::internal
