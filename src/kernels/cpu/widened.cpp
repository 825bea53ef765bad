// A float16 or bfloat16 op on the CPU through the op's float32 kernel. Few CPU kernels have 16-bit
// versions (the CPU has no 16-bit arithmetic short of AVX512_FP16/AMX, and mixed precision picks
// only the products that do); OneFlow programs still place float16 ops on devices that turn out to
// be CPUs ("gpu" placements without a GPU). Such an op widens each 16-bit input into a float32
// buffer, runs the float32 kernel, and rounds each 16-bit output back (to nearest, ties to even):
// the result is the float32 op's, rounded once, as a GPU kernel that computes in float32 gives.
#include <vector>

#include "kernels/cpu/widened.hpp"

#include <algorithm>

#include "kernels/cpu/dnnl_engine.hpp"
#include "weir/half.hpp"

namespace weir::internal {
namespace {

bool IsHalf(DType dtype) { return dtype == DType::kF16 || dtype == DType::kBF16; }

TensorMeta Widened(const TensorMeta& meta) { return IsHalf(meta.dtype) ? TensorMeta{meta.shape, DType::kF32} : meta; }

void Widen(const ConstTensorView& from, float* to) {
  const std::int64_t count = from.NumElements();
  const auto* bits = from.As<std::uint16_t>();
  if (from.GetDType() == DType::kF16) {
    for (std::int64_t i = 0; i < count; ++i) to[i] = half_bits::FloatFromFloat16(bits[i]);
  } else {
    for (std::int64_t i = 0; i < count; ++i) to[i] = half_bits::FloatFromBFloat16(bits[i]);
  }
}

void Narrow(const float* from, const TensorView& to) {
  const std::int64_t count = to.NumElements();
  auto* bits = to.As<std::uint16_t>();
  if (to.GetDType() == DType::kF16) {
    for (std::int64_t i = 0; i < count; ++i) bits[i] = half_bits::Float16FromFloat(from[i]);
  } else {
    for (std::int64_t i = 0; i < count; ++i) bits[i] = half_bits::BFloat16FromFloat(from[i]);
  }
}

class WidenedKernel final : public Kernel {
 public:
  explicit WidenedKernel(const KernelSetup& setup) {
    for (const TensorMeta& meta : setup.inputs) wide_inputs_.push_back(Widened(meta));
    for (const TensorMeta& meta : setup.outputs) wide_outputs_.push_back(Widened(meta));
    input_buffers_.resize(wide_inputs_.size());
    output_buffers_.resize(wide_outputs_.size());
    for (std::size_t i = 0; i < setup.inputs.size(); ++i) {
      if (IsHalf(setup.inputs[i].dtype)) input_buffers_[i].resize(static_cast<std::size_t>(setup.inputs[i].shape.NumElements()));
    }
    for (std::size_t i = 0; i < setup.outputs.size(); ++i) {
      if (IsHalf(setup.outputs[i].dtype)) output_buffers_[i].resize(static_cast<std::size_t>(setup.outputs[i].shape.NumElements()));
    }
    input_views_.resize(wide_inputs_.size());
    output_views_.resize(wide_outputs_.size());
    KernelSetup wide = setup;
    wide.inputs = wide_inputs_;
    wide.outputs = wide_outputs_;
    const KernelFactory factory = FindKernel({std::string(setup.op_type), Device::Kind::kCpu, DType::kF32});
    if (factory == nullptr) {
      throw std::invalid_argument(fmt::format("[{}] op '{}' has no CPU kernel for f32 to run its 16-bit tensors through",
                                              setup.op_type, setup.op_name));
    }
    inner_ = factory(wide);
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (!IsHalf(inputs[i].GetDType())) {
        input_views_[i] = inputs[i];
        continue;
      }
      Widen(inputs[i], input_buffers_[i].data());
      input_views_[i] = {input_buffers_[i].data(), &wide_inputs_[i]};
    }
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      const bool half = IsHalf(outputs[i].GetDType());
      output_views_[i] = half ? TensorView{output_buffers_[i].data(), &wide_outputs_[i]} : outputs[i];
    }
    inner_->Run(input_views_, output_views_);
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      if (IsHalf(outputs[i].GetDType())) Narrow(output_buffers_[i].data(), outputs[i]);
    }
  }

  void AfterCompletion() override { inner_->AfterCompletion(); }

 private:
  std::vector<TensorMeta> wide_inputs_;
  std::vector<TensorMeta> wide_outputs_;
  std::vector<std::vector<float>> input_buffers_;
  std::vector<std::vector<float>> output_buffers_;
  std::vector<ConstTensorView> input_views_;
  std::vector<TensorView> output_views_;
  std::unique_ptr<Kernel> inner_;
};

}  // namespace

bool RunsWidenedOnCpu(std::string_view op_type, DType dtype) {
  return IsHalf(dtype) && FindKernel({std::string(op_type), Device::Kind::kCpu, dtype}) == nullptr &&
         FindKernel({std::string(op_type), Device::Kind::kCpu, DType::kF32}) != nullptr;
}

std::unique_ptr<Kernel> MakeWidenedKernel(const KernelSetup& setup) { return std::make_unique<WidenedKernel>(setup); }

bool DnnlRunsHalfTensorsOf(const KernelSetup& setup) {
  const auto bf16 = [](const TensorMeta& meta) { return meta.dtype == DType::kBF16; };
  const bool any = std::any_of(setup.inputs.begin(), setup.inputs.end(), bf16) ||
                   std::any_of(setup.outputs.begin(), setup.outputs.end(), bf16);
  return !any || DnnlRunsBFloat16();
}

}  // namespace weir::internal
