// categorical_ordinal_encode on CUDA: a thread per key, probing the table as the CPU kernel does
// (kernels/functors/categorical_ordinal.hpp). A free slot is claimed by swapping its ordinal 0 for -1
// (atomicCAS); the claimer writes the key, draws the next ordinal from size (atomicAdd) and publishes
// it; a thread that meets a claimed slot waits for that ordinal before it compares keys, so two threads
// with one new key meet at the slot the first claims. Keys new in one call are numbered in the order
// their threads claim slots, not in position order (the CPU's): each key still gets one ordinal, and
// the ordinals given are 1 ... size. A new key that finds no free slot fails the call (DeviceReports).
// The wait relies on independent thread scheduling (Volta and later): a waiting lane does not stall
// the claimer in its warp.
#include <cstdint>
#include <memory>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/categorical_ordinal.hpp"

namespace weir::internal {
namespace {

__device__ std::int32_t AtomicCas(std::int32_t* word, std::int32_t expected, std::int32_t desired) {
  return atomicCAS(word, expected, desired);
}
__device__ std::int64_t AtomicCas(std::int64_t* word, std::int64_t expected, std::int64_t desired) {
  return static_cast<std::int64_t>(atomicCAS(reinterpret_cast<unsigned long long*>(word),
                                             static_cast<unsigned long long>(expected), static_cast<unsigned long long>(desired)));
}
__device__ std::int32_t AtomicIncrement(std::int32_t* word) { return atomicAdd(word, 1); }
__device__ std::int64_t AtomicIncrement(std::int64_t* word) {
  return static_cast<std::int64_t>(atomicAdd(reinterpret_cast<unsigned long long*>(word), 1ull));
}
__device__ void AtomicStore(std::int32_t* word, std::int32_t value) { atomicExch(word, value); }
__device__ void AtomicStore(std::int64_t* word, std::int64_t value) {
  atomicExch(reinterpret_cast<unsigned long long*>(word), static_cast<unsigned long long>(value));
}

template <typename T>
__global__ void EncodeKernel(T* table, T* size, const T* in, T* out, std::int64_t count, std::int64_t capacity,
                             cuda::ReportRing reports) {
  WEIR_FOR_EACH_ELEMENT(i, count) {
    const T key = in[i];
    std::int64_t slot = FirstOrdinalSlot(key, capacity);
    T ordinal = 0;
    for (std::int64_t probes = 0; probes < capacity; ++probes) {
      T* pair = table + 2 * slot;
      T seen = AtomicCas(pair + 1, T{0}, T{-1});
      if (seen == 0) {  // claimed: the key is new
        pair[0] = key;
        ordinal = AtomicIncrement(size) + 1;
        __threadfence();  // the key before the ordinal that publishes it
        AtomicStore(pair + 1, ordinal);
        break;
      }
      while (seen == T{-1}) seen = *static_cast<volatile T*>(pair + 1);
      __threadfence();
      if (*static_cast<volatile T*>(pair) == key) {
        ordinal = seen;
        break;
      }
      slot = NextOrdinalSlot(slot, capacity);
    }
    if (ordinal == 0) cuda::CheckIndex(i, -1, 1, reports);  // no free slot: reports position i
    out[i] = ordinal;
  }
}

template <typename T> class CategoricalOrdinalEncodeCuda final : public Kernel {
 public:
  explicit CategoricalOrdinalEncodeCuda(const KernelSetup& setup)
      : stream_(CudaStreamOf(setup)), capacity_(setup.inputs[0].shape[0] / 2), count_(setup.inputs[2].shape.NumElements()) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    // The table and size are written in place (OpDef::mutates_inputs).
    cuda::LaunchOver(stream_, count_, &EncodeKernel<T>, const_cast<T*>(inputs[0].As<T>()), const_cast<T*>(inputs[1].As<T>()),
                     inputs[2].As<T>(), outputs[0].As<T>(), count_, capacity_, reports_.Ring());
    reports_.AdvanceAfterRun(stream_);
  }

  void AfterCompletion() override {
    if (const auto full = reports_.TakeCompleted()) {
      throw KernelError(fmt::format("[categorical_ordinal_encode] the key at position {} is new and the table is full: "
                                    "all {} ordinals are given; make the encoder's capacity larger",
                                    full->position, capacity_));
    }
  }

 private:
  void* stream_;
  std::int64_t capacity_;
  std::int64_t count_;
  DeviceReports reports_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"categorical_ordinal_encode", Device::Kind::kCuda, DType::kI32},
                 &MakeKernel<CategoricalOrdinalEncodeCuda<std::int32_t>>);
  RegisterKernel({"categorical_ordinal_encode", Device::Kind::kCuda, DType::kI64},
                 &MakeKernel<CategoricalOrdinalEncodeCuda<std::int64_t>>);
}

}  // namespace
}  // namespace weir::internal
