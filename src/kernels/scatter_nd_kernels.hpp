#pragma once
// What the CPU and CUDA kernels of the scatter_nd family (graph/ops/scatter_nd.cpp) share: which of
// the three ops a kernel runs, its inputs' order, its name in errors, and the factories and
// registrations over the element and index types. Each device's kernel is a class template
// K<Scatter kHow, typename T, typename Index>.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>

#include "kernels/kernel.hpp"
#include "kernels/word_dispatch.hpp"

namespace weir::internal {

enum class Scatter : std::uint8_t { kIntoZeros, kAdd, kReplace };

/// Where the indices are: scatter_nd's inputs are (indices, updates), the tensor_ variants' (params,
/// indices, updates); the updates follow the indices.
template <Scatter kHow> inline constexpr int kScatterIndices = kHow == Scatter::kIntoZeros ? 0 : 1;

template <Scatter kHow> constexpr const char* ScatterOpName() {
  if constexpr (kHow == Scatter::kIntoZeros) return "scatter_nd";
  else if constexpr (kHow == Scatter::kAdd) return "tensor_scatter_nd_add";
  else return "tensor_scatter_nd_update";
}

template <template <Scatter, typename, typename> class K, Scatter kHow, typename T>
std::unique_ptr<Kernel> MakeScatterNd(const KernelSetup& setup) {
  if (setup.inputs[kScatterIndices<kHow>].dtype == DType::kI64) return std::make_unique<K<kHow, T, std::int64_t>>(setup);
  return std::make_unique<K<kHow, T, std::int32_t>>(setup);
}

// Keyed by the first input's dtype: scatter_nd's is the indices', so the updates' picks the type here.
template <template <Scatter, typename, typename> class K> std::unique_ptr<Kernel> MakeScatterNdIntoZeros(const KernelSetup& setup) {
  return WithTypeOf(setup.inputs[1].dtype, [&]<typename T>() -> std::unique_ptr<Kernel> {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
                  std::is_same_v<T, std::int64_t>) {
      return MakeScatterNd<K, Scatter::kIntoZeros, T>(setup);
    } else {  // the op's inference admits these four only
      throw std::invalid_argument(fmt::format("[scatter_nd] no kernel for {} updates", setup.inputs[1].dtype));
    }
  });
}

// A replacement moves words of the element's size: one instantiation per size serves every dtype.
template <template <Scatter, typename, typename> class K> std::unique_ptr<Kernel> MakeTensorScatterNdUpdate(const KernelSetup& setup) {
  return WithWordOf(setup.inputs[0].dtype, [&]<typename Word>() { return MakeScatterNd<K, Scatter::kReplace, Word>(setup); });
}

/// Registers device `device`'s kernels K of the three ops: the sums for f32, f64, i32 and i64, the
/// replacement for every dtype.
template <template <Scatter, typename, typename> class K> void RegisterScatterNdKernels(Device::Kind device) {
  for (DType dtype : {DType::kI32, DType::kI64}) RegisterKernel({"scatter_nd", device, dtype}, &MakeScatterNdIntoZeros<K>);
  RegisterKernel({"tensor_scatter_nd_add", device, DType::kF32}, &MakeScatterNd<K, Scatter::kAdd, float>);
  RegisterKernel({"tensor_scatter_nd_add", device, DType::kF64}, &MakeScatterNd<K, Scatter::kAdd, double>);
  RegisterKernel({"tensor_scatter_nd_add", device, DType::kI32}, &MakeScatterNd<K, Scatter::kAdd, std::int32_t>);
  RegisterKernel({"tensor_scatter_nd_add", device, DType::kI64}, &MakeScatterNd<K, Scatter::kAdd, std::int64_t>);
  for (DType dtype : kAllDTypes) RegisterKernel({"tensor_scatter_nd_update", device, dtype}, &MakeTensorScatterNdUpdate<K>);
}

}  // namespace weir::internal
