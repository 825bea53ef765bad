// megatron_gpt_mmap_data_loader on the host: the n-th batch of samples (or the iteration variable's)
// from the memory-mapped dataset, this device's rows of it. Batch n is samples
// [n * global, (n + 1) * global), where global is the batch of all devices together, so that the
// tokens do not depend on how many devices split the batch (OneFlow's rule).
#include <cstdint>
#include <memory>

#include <fmt/format.h>

#include "common/split.hpp"
#include "kernels/data/megatron_dataset.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> class MegatronGptLoaderCpu final : public Kernel {
 public:
  explicit MegatronGptLoaderCpu(const KernelSetup& setup) : op_name_(setup.op_name) {
    const auto& attrs = setup.Get<MegatronGptLoaderAttrs>();
    const std::int64_t rows = setup.outputs[0].shape.Dims()[0];
    // A device whose piece is the whole batch reads a batch of its own (the mirrored view: shard k of
    // `shards` reads rows [k * batch, (k + 1) * batch) of their joint batch); else its rows of the
    // split batch, which must split evenly as OneFlow's reader requires.
    if (rows == attrs.batch_size) {
      global_ = rows * setup.shards;
      first_ = rows * setup.shard;
    } else if (rows * setup.shards == attrs.batch_size) {
      global_ = attrs.batch_size;
      first_ = SplitBegin(attrs.batch_size, setup.shards, setup.shard);
    } else {
      throw std::invalid_argument(fmt::format("[megatron_gpt_mmap_data_loader] op '{}': batch_size {} does not split "
                                              "evenly over the {} devices that read it", op_name_, attrs.batch_size,
                                              setup.shards));
    }
    megatron::SampleSpec spec{.seq_length = attrs.seq_length, .label_length = attrs.label_length,
                              .num_samples = attrs.num_samples, .split_sizes = attrs.split_sizes,
                              .split_index = attrs.split_index, .shuffle = attrs.shuffle,
                              .seed = static_cast<std::uint32_t>(attrs.random_seed)};  // OneFlow's 32-bit seed
    try {
      dataset_ = std::make_unique<megatron::Dataset>(attrs.data_file_prefix, std::move(spec));
    } catch (const std::exception& e) {
      throw std::invalid_argument(fmt::format("[megatron_gpt_mmap_data_loader] op '{}': {}", op_name_, e.what()));
    }
    sample_length_ = attrs.seq_length + attrs.label_length;
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const std::int64_t iteration = inputs.empty() ? calls_++ : inputs[0].As<std::int64_t>()[0];
    const std::int64_t rows = outputs[0].meta->shape.Dims()[0];
    if (iteration < 0 || static_cast<std::size_t>((iteration + 1) * global_) > dataset_->Size()) {
      throw KernelError(fmt::format(
          "[megatron_gpt_mmap_data_loader] op '{}': batch {} would read samples [{}, {}), but the dataset gives {} "
          "samples ({} epochs for num_samples): ask for more num_samples", op_name_, iteration, iteration * global_,
          (iteration + 1) * global_, dataset_->Size(), dataset_->Epochs()));
    }
    T* out = outputs[0].As<T>();
    for (std::int64_t i = 0; i < rows; ++i) {
      dataset_->Sample(static_cast<std::size_t>(iteration * global_ + first_ + i), out + i * sample_length_);
    }
  }

 private:
  std::string op_name_;
  std::unique_ptr<megatron::Dataset> dataset_;
  std::int64_t global_ = 0;  // samples per call over every device
  std::int64_t first_ = 0;   // this device's first row of them
  std::int64_t sample_length_ = 0;
  std::int64_t calls_ = 0;
};

// The tokens' dtype is the output's; the planner looks the kernel up by the iteration's (i64) where
// the op has one, so one factory serves both keys.
std::unique_ptr<Kernel> MakeMegatronGptLoader(const KernelSetup& setup) {
  if (setup.outputs[0].dtype == DType::kI32) return std::make_unique<MegatronGptLoaderCpu<std::int32_t>>(setup);
  return std::make_unique<MegatronGptLoaderCpu<std::int64_t>>(setup);
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"megatron_gpt_mmap_data_loader", Device::Kind::kCpu, DType::kI32}, &MakeMegatronGptLoader);
  RegisterKernel({"megatron_gpt_mmap_data_loader", Device::Kind::kCpu, DType::kI64}, &MakeMegatronGptLoader);
}

}  // namespace
}  // namespace weir::internal
