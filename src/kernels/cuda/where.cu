// where on CUDA: a thread per output element (the index arithmetic in kernels/functors/where.hpp);
// elements moved as words of their size, as on the CPU.
#include <cstdint>
#include <memory>

#include "kernels/cuda/cuda_kernel.hpp"
#include "kernels/cuda/grid.cuh"
#include "kernels/functors/where.hpp"
#include "kernels/word_dispatch.hpp"

namespace weir::internal {
namespace {

template <typename Condition, typename Word>
__global__ void WhereKernel(WherePlan plan, const Condition* condition, const Word* x, const Word* y, Word* out,
                            std::int64_t count) {
  WEIR_FOR_EACH_ELEMENT(i, count) {
    std::int64_t c = 0, from_x = 0, from_y = 0;
    plan.Offsets(i, c, from_x, from_y);
    out[i] = condition[c] != 0 ? x[from_x] : y[from_y];
  }
}

template <typename Condition, typename Word> class WhereCuda final : public Kernel {
 public:
  explicit WhereCuda(const KernelSetup& setup) : stream_(CudaStreamOf(setup)), count_(setup.outputs[0].shape.NumElements()) {
    if (!PlanWhere(setup.inputs[0].shape.Dims(), setup.inputs[1].shape.Dims(), setup.inputs[2].shape.Dims(),
                   setup.outputs[0].shape.Dims(), plan_)) {
      throw std::invalid_argument(fmt::format("[where] '{}': the operands broadcast over more than {} axes that do not merge",
                                              setup.op_name, BroadcastPlan::kMaxRank));
    }
  }
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    cuda::LaunchOver(stream_, count_, &WhereKernel<Condition, Word>, plan_, inputs[0].As<Condition>(), inputs[1].As<Word>(),
                     inputs[2].As<Word>(), outputs[0].As<Word>(), count_);
  }

 private:
  void* stream_;
  std::int64_t count_;
  WherePlan plan_;
};

// The condition as the word of its size (any nonzero takes x), x and y as words of theirs.
std::unique_ptr<Kernel> MakeWhere(const KernelSetup& setup) {
  return WithWordOf(setup.inputs[0].dtype, [&]<typename Condition>() {
    return WithWordOf(setup.inputs[1].dtype, [&]<typename Word>() -> std::unique_ptr<Kernel> {
      return std::make_unique<WhereCuda<Condition, Word>>(setup);
    });
  });
}

WEIR_REGISTER_KERNELS {
  for (DType dtype : {DType::kI8, DType::kU8, DType::kBool, DType::kI32, DType::kI64}) {
    RegisterKernel({"where", Device::Kind::kCuda, dtype}, &MakeWhere);
  }
}

}  // namespace
}  // namespace weir::internal
