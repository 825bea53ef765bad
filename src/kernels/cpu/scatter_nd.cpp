// The scatter_nd family on the CPU (graph/ops/scatter_nd.cpp): the output starts as zeros (scatter_nd)
// or as a copy of params (tensor_scatter_nd_add/_update); every tuple of indices is checked (a bad one
// fails the call, naming its position in indices, before anything is written), then each update's
// slice is added into, or copied over, the slice its tuple picks, tuple after tuple (so a repeated
// tuple's last update wins a replacement).
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "kernels/attrs/nd_index_attrs.hpp"
#include "kernels/kernel.hpp"
#include "kernels/scatter_nd_kernels.hpp"

namespace weir::internal {
namespace {

// T: the element type (a word of the dtype's size for kReplace).
template <Scatter kHow, typename T, typename Index> class ScatterNdCpu final : public Kernel {
  // scatter_nd's inputs are (indices, updates); the tensor_ variants' (params, indices, updates).
  static constexpr int kIndices = kScatterIndices<kHow>;

 public:
  explicit ScatterNdCpu(const KernelSetup& setup)
      : plan_(PlanNdIndexOf(setup.outputs[0].shape, setup.inputs[kIndices].shape)),
        out_bytes_(static_cast<std::size_t>(setup.outputs[0].NumBytes())), slices_(static_cast<std::size_t>(plan_.tuples)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const Index* indices = inputs[kIndices].As<Index>();
    const T* updates = inputs[kIndices + 1].As<T>();
    T* out = outputs[0].As<T>();
    for (std::int64_t n = 0; n < plan_.tuples; ++n) {
      std::int64_t bad = 0;
      slices_[static_cast<std::size_t>(n)] = plan_.SliceOf(indices, n, &bad);
      if (slices_[static_cast<std::size_t>(n)] < 0) {
        throw KernelError(fmt::format("[{}] index {} at position {} of indices is outside [0, {})", ScatterOpName<kHow>(),
                                      indices[bad], bad, plan_.dims[bad % plan_.depth]));
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
        for (std::int64_t i = 0; i < slice; ++i) {
          if constexpr (std::is_integral_v<T>) {  // wraps, as the GPU's atomics do, instead of overflowing
            using U = std::make_unsigned_t<T>;
            to[i] = static_cast<T>(static_cast<U>(static_cast<U>(to[i]) + static_cast<U>(from[i])));
          } else {
            to[i] += from[i];
          }
        }
      }
    }
  }

 private:
  NdIndexPlan plan_;
  std::size_t out_bytes_;
  std::vector<std::int64_t> slices_;  // each tuple's slice, checked before any write
};

WEIR_REGISTER_KERNELS { RegisterScatterNdKernels<ScatterNdCpu>(Device::Kind::kCpu); }

}  // namespace
}  // namespace weir::internal
