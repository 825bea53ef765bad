// megatron_gpt_mmap_data_loader: each call, a batch of token samples from a Megatron-LM indexed
// dataset (OneFlow's flow.data.megatron_gpt_mmap_data_loader, the GPT trainer's reader;
// kernels/data/megatron_dataset.hpp has the format and the sample order). A source on the host: the
// devices that split the batch each read their rows of it. With an iteration variable as its input
// (start_from_saved_progress) it reads the batch the variable names, and its builder adds the
// increment of the variable, so a checkpoint saves where the reader is.
#include <algorithm>
#include <filesystem>

#include <fmt/ranges.h>

#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/sbp.hpp"
#include "kernels/data/megatron_dataset.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

constexpr std::string_view kOp = "megatron_gpt_mmap_data_loader";

std::vector<TensorMeta> InferMegatronGptLoader(const InferContext& ctx) {
  const auto& attrs = ctx.Get<MegatronGptLoaderAttrs>();
  if (ctx.inputs.size() > 1) throw OpError(ctx.op_type, "takes at most one input (iteration), got {}", ctx.inputs.size());
  if (ctx.inputs.size() == 1 && ctx.inputs[0] != TensorMeta{Shape{1}, DType::kI64}) {
    throw OpError(ctx.op_type, "iteration must be an i64(1) variable, got {}", ctx.inputs[0].ToString());
  }
  if (attrs.seq_length < 1 || attrs.num_samples < 1 || attrs.batch_size < 1) {
    throw OpError(ctx.op_type, "seq_length, num_samples and batch_size must be >= 1, got {}, {}, {}", attrs.seq_length,
                  attrs.num_samples, attrs.batch_size);
  }
  // OneFlow's reader copies sample i and the next one's first token; longer labels are not its.
  if (attrs.label_length != 1) throw OpError(ctx.op_type, "label_length must be 1, got {}", attrs.label_length);
  if (attrs.dtype != DType::kI32 && attrs.dtype != DType::kI64) {
    throw OpError(ctx.op_type, "dtype must be int32 or int64, got {}", attrs.dtype);
  }
  if (attrs.split_sizes.empty() || std::any_of(attrs.split_sizes.begin(), attrs.split_sizes.end(), [](auto s) { return s < 0; }) ||
      std::all_of(attrs.split_sizes.begin(), attrs.split_sizes.end(), [](auto s) { return s == 0; })) {
    throw OpError(ctx.op_type, "split_sizes must be sizes >= 0 with a positive sum, got [{}]", fmt::join(attrs.split_sizes, ", "));
  }
  if (attrs.split_index < 0 || attrs.split_index >= static_cast<std::int64_t>(attrs.split_sizes.size())) {
    throw OpError(ctx.op_type, "split_index {} is out of range of split_sizes [{}]", attrs.split_index,
                  fmt::join(attrs.split_sizes, ", "));
  }
  // The files and the index's header and bounds, now rather than at the first call.
  std::error_code error;
  for (const char* suffix : {".idx", ".bin"}) {
    const std::string path = attrs.data_file_prefix + suffix;
    if (!std::filesystem::is_regular_file(path, error)) {
      throw OpError(ctx.op_type, "data_file_prefix '{}': there is no file '{}'", attrs.data_file_prefix, path);
    }
  }
  try {
    megatron::ReadIndex(attrs.data_file_prefix);
  } catch (const megatron::FormatError& e) {
    throw OpError(ctx.op_type, "{}", e.what());
  }
  return {{Shape{attrs.batch_size, attrs.seq_length + attrs.label_length}, attrs.dtype}};
}

// The batch split over the devices (the iteration, if any, whole on each); with split_batch false
// only the all-broadcast signature, where one reader reads the whole batch.
std::vector<SbpSignature> MegatronGptLoaderSbp(const SbpContext& ctx) {
  if (!ctx.Get<MegatronGptLoaderAttrs>().split_batch) return {};
  return {{std::vector<Sbp>(ctx.inputs.size(), Sbp::B()), {Sbp::S(0)}}};
}

std::vector<Blob> BuildMegatronGptLoader(const std::vector<Blob>& inputs, const std::any& attrs, std::string_view name) {
  std::vector<Blob> tokens = AddOp(kOp, inputs, attrs, name);
  if (!inputs.empty()) {
    const std::string op = tokens[0].Name().substr(0, tokens[0].Name().rfind('/'));  // "<op name>/out"
    AddOp("increment", {inputs[0]}, std::any{}, op + "-iteration_increment");
  }
  return tokens;
}

WEIR_REGISTER_OP({.type = kOp, .num_inputs = -1, .input_names = {"iteration"}, .infer = InferMegatronGptLoader,
                  .sbp = MegatronGptLoaderSbp,
                  .read_attrs = ReadAttrs<MegatronGptLoaderAttrs>(
                      Attr("data_file_prefix", &MegatronGptLoaderAttrs::data_file_prefix),
                      Attr("seq_length", &MegatronGptLoaderAttrs::seq_length),
                      Attr("label_length", &MegatronGptLoaderAttrs::label_length),
                      Attr("num_samples", &MegatronGptLoaderAttrs::num_samples),
                      Attr("batch_size", &MegatronGptLoaderAttrs::batch_size), Attr("dtype", &MegatronGptLoaderAttrs::dtype),
                      Attr("split_sizes", &MegatronGptLoaderAttrs::split_sizes),
                      Attr("split_index", &MegatronGptLoaderAttrs::split_index),
                      Attr("shuffle", &MegatronGptLoaderAttrs::shuffle),
                      Attr("random_seed", &MegatronGptLoaderAttrs::random_seed),
                      Attr("split_batch", &MegatronGptLoaderAttrs::split_batch)),
                  .build = BuildMegatronGptLoader, .host_only = true, .per_device_source = true});

}  // namespace
}  // namespace internal

Blob MegatronGptMmapDataLoader(JobBuilder& job, MegatronGptLoaderAttrs attrs, std::string_view name) {
  return internal::AddSourceOp(job.Graph(), internal::kOp, std::move(attrs), name).front();
}

Blob MegatronGptMmapDataLoader(const Blob& iteration, MegatronGptLoaderAttrs attrs, std::string_view name) {
  return internal::BuildMegatronGptLoader({iteration}, std::any(std::move(attrs)), name).front();
}

}  // namespace weir
