// categorical_ordinal_encode on the CPU: the keys in position order, each probing the table
// (kernels/functors/categorical_ordinal.hpp) until it meets its key or a free slot, which a new key
// takes with the next ordinal.
#include <cstdint>

#include <fmt/format.h>

#include "kernels/functors/categorical_ordinal.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

template <typename T> class CategoricalOrdinalEncodeCpu final : public Kernel {
 public:
  explicit CategoricalOrdinalEncodeCpu(const KernelSetup& setup)
      : capacity_(setup.inputs[0].shape[0] / 2), count_(setup.inputs[2].shape.NumElements()) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    T* table = const_cast<T*>(inputs[0].As<T>());  // written in place (OpDef::mutates_inputs)
    T* size = const_cast<T*>(inputs[1].As<T>());
    const T* in = inputs[2].As<T>();
    T* out = outputs[0].As<T>();
    for (std::int64_t i = 0; i < count_; ++i) out[i] = Encode(table, size, in[i]);
  }

 private:
  T Encode(T* table, T* size, T key) const {
    std::int64_t slot = FirstOrdinalSlot(key, capacity_);
    for (std::int64_t probes = 0; probes < capacity_; ++probes) {
      T* pair = table + 2 * slot;
      if (pair[1] == 0) {  // a free slot: the key is new (and the table not full)
        pair[0] = key;
        pair[1] = ++size[0];
        return pair[1];
      }
      if (pair[0] == key) return pair[1];
      slot = NextOrdinalSlot(slot, capacity_);
    }
    throw KernelError(fmt::format("[categorical_ordinal_encode] key {} is new and the table is full: all {} ordinals are "
                                  "given; make the encoder's capacity larger",
                                  key, capacity_));
  }

  std::int64_t capacity_;
  std::int64_t count_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"categorical_ordinal_encode", Device::Kind::kCpu, DType::kI32},
                 &MakeKernel<CategoricalOrdinalEncodeCpu<std::int32_t>>);
  RegisterKernel({"categorical_ordinal_encode", Device::Kind::kCpu, DType::kI64},
                 &MakeKernel<CategoricalOrdinalEncodeCpu<std::int64_t>>);
}

}  // namespace
}  // namespace weir::internal
