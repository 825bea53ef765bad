// The scatter_nd family on the CPU (graph/ops/scatter_nd.cpp): the output starts as zeros (scatter_nd)
// or as a copy of params (tensor_scatter_nd_add/_update); every tuple of indices is checked (a bad one
// fails the call, naming its position in indices, before anything is written), then each update's
// slice is added into, or copied over, the slice its tuple picks, tuple after tuple (so a repeated
// tuple's last update wins a replacement).
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "kernels/attrs/nd_index_attrs.hpp"
#include "kernels/kernel.hpp"
#include "kernels/word_dispatch.hpp"

namespace weir::internal {
namespace {

enum class Scatter : std::uint8_t { kIntoZeros, kAdd, kReplace };

// T: the element type (a word of the dtype's size for kReplace).
template <Scatter kHow, typename T, typename Index> class ScatterNdCpu final : public Kernel {
  // scatter_nd's inputs are (indices, updates); the tensor_ variants' (params, indices, updates).
  static constexpr int kIndices = kHow == Scatter::kIntoZeros ? 0 : 1;

 public:
  explicit ScatterNdCpu(const KernelSetup& setup)
      : plan_(PlanNdIndexOf(setup.outputs[0].shape, setup.inputs[kIndices].shape)),
        out_bytes_(static_cast<std::size_t>(setup.outputs[0].NumBytes())) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const Index* indices = inputs[kIndices].As<Index>();
    const T* updates = inputs[kIndices + 1].As<T>();
    T* out = outputs[0].As<T>();
    slices_.resize(static_cast<std::size_t>(plan_.tuples));
    for (std::int64_t n = 0; n < plan_.tuples; ++n) {
      std::int64_t bad = 0;
      slices_[static_cast<std::size_t>(n)] = plan_.SliceOf(indices, n, &bad);
      if (slices_[static_cast<std::size_t>(n)] < 0) {
        throw KernelError(fmt::format("[{}] index {} at position {} of indices is outside [0, {})", Name(), indices[bad], bad,
                                      plan_.dims[bad % plan_.depth]));
      }
    }
    if (out_bytes_ == 0) return;
    if constexpr (kHow == Scatter::kIntoZeros) {
      std::memset(out, 0, out_bytes_);
    } else if (out != inputs[0].data) {
      std::memcpy(out, inputs[0].data, out_bytes_);
    }
    const std::int64_t slice = plan_.slice;
    for (std::int64_t n = 0; n < plan_.tuples; ++n) {
      T* to = out + slices_[static_cast<std::size_t>(n)] * slice;
      const T* from = updates + n * slice;
      if constexpr (kHow == Scatter::kReplace) {
        std::memcpy(to, from, static_cast<std::size_t>(slice) * sizeof(T));
      } else {
        for (std::int64_t i = 0; i < slice; ++i) to[i] += from[i];
      }
    }
  }

 private:
  static const char* Name() {
    if constexpr (kHow == Scatter::kIntoZeros) return "scatter_nd";
    else if constexpr (kHow == Scatter::kAdd) return "tensor_scatter_nd_add";
    else return "tensor_scatter_nd_update";
  }

  NdIndexPlan plan_;
  std::size_t out_bytes_;
  std::vector<std::int64_t> slices_;  // each tuple's slice, checked before any write
};

template <Scatter kHow, typename T> std::unique_ptr<Kernel> MakeScatterNd(const KernelSetup& setup) {
  constexpr int kIndices = kHow == Scatter::kIntoZeros ? 0 : 1;
  if (setup.inputs[kIndices].dtype == DType::kI64) return std::make_unique<ScatterNdCpu<kHow, T, std::int64_t>>(setup);
  return std::make_unique<ScatterNdCpu<kHow, T, std::int32_t>>(setup);
}

// Keyed by the first input's dtype: scatter_nd's is the indices', so the updates' picks the type here.
std::unique_ptr<Kernel> MakeScatterNdIntoZeros(const KernelSetup& setup) {
  return WithTypeOf(setup.inputs[1].dtype, [&]<typename T>() -> std::unique_ptr<Kernel> {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
                  std::is_same_v<T, std::int64_t>) {
      return MakeScatterNd<Scatter::kIntoZeros, T>(setup);
    } else {
      throw std::invalid_argument(fmt::format("[scatter_nd] no CPU kernel for {} updates", setup.inputs[1].dtype));
    }
  });
}

std::unique_ptr<Kernel> MakeTensorScatterNdUpdate(const KernelSetup& setup) {
  return WithWordOf(setup.inputs[0].dtype, [&]<typename Word>() { return MakeScatterNd<Scatter::kReplace, Word>(setup); });
}

WEIR_REGISTER_KERNELS {
  for (DType dtype : {DType::kI32, DType::kI64}) RegisterKernel({"scatter_nd", Device::Kind::kCpu, dtype}, &MakeScatterNdIntoZeros);
  RegisterKernel({"tensor_scatter_nd_add", Device::Kind::kCpu, DType::kF32}, &MakeScatterNd<Scatter::kAdd, float>);
  RegisterKernel({"tensor_scatter_nd_add", Device::Kind::kCpu, DType::kF64}, &MakeScatterNd<Scatter::kAdd, double>);
  RegisterKernel({"tensor_scatter_nd_add", Device::Kind::kCpu, DType::kI32}, &MakeScatterNd<Scatter::kAdd, std::int32_t>);
  RegisterKernel({"tensor_scatter_nd_add", Device::Kind::kCpu, DType::kI64}, &MakeScatterNd<Scatter::kAdd, std::int64_t>);
  for (DType dtype : kAllDTypes) RegisterKernel({"tensor_scatter_nd_update", Device::Kind::kCpu, dtype}, &MakeTensorScatterNdUpdate);
}

}  // namespace
}  // namespace weir::internal
