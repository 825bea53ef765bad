// where on the CPU: each output element from x or y as its condition says (kernels/functors/where.hpp),
// elements moved as words of their size, so one kernel serves every dtype of x and y. The kernel key is
// the condition's dtype.
#include <cstdint>
#include <memory>

#include <fmt/format.h>

#include "kernels/functors/where.hpp"
#include "kernels/kernel.hpp"
#include "kernels/word_dispatch.hpp"

namespace weir::internal {
namespace {

template <typename Condition, typename Word> class WhereCpu final : public Kernel {
 public:
  explicit WhereCpu(const KernelSetup& setup) : count_(setup.outputs[0].shape.NumElements()) {
    if (!PlanWhere(setup.inputs[0].shape.Dims(), setup.inputs[1].shape.Dims(), setup.inputs[2].shape.Dims(),
                   setup.outputs[0].shape.Dims(), plan_)) {
      throw std::invalid_argument(fmt::format("[where] '{}': the operands broadcast over more than {} axes that do not merge",
                                              setup.op_name, BroadcastPlan::kMaxRank));
    }
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const Condition* condition = inputs[0].As<Condition>();
    const Word* x = inputs[1].As<Word>();
    const Word* y = inputs[2].As<Word>();
    Word* out = outputs[0].As<Word>();
    for (std::int64_t i = 0; i < count_; ++i) {
      std::int64_t c = 0, from_x = 0, from_y = 0;
      plan_.Offsets(i, c, from_x, from_y);
      out[i] = condition[c] != 0 ? x[from_x] : y[from_y];
    }
  }

 private:
  std::int64_t count_;
  WherePlan plan_;
};

// The condition as the word of its size (any nonzero takes x), x and y as words of theirs.
std::unique_ptr<Kernel> MakeWhere(const KernelSetup& setup) {
  return WithWordOf(setup.inputs[0].dtype, [&]<typename Condition>() {
    return WithWordOf(setup.inputs[1].dtype, [&]<typename Word>() -> std::unique_ptr<Kernel> {
      return std::make_unique<WhereCpu<Condition, Word>>(setup);
    });
  });
}

WEIR_REGISTER_KERNELS {
  for (DType dtype : {DType::kI8, DType::kU8, DType::kBool, DType::kI32, DType::kI64}) {
    RegisterKernel({"where", Device::Kind::kCpu, dtype}, &MakeWhere);
  }
}

}  // namespace
}  // namespace weir::internal
