// ofrecord_reader: each call, a batch of serialized OFRecords read from part files (OneFlow's
// flow.data.ofrecord_reader). A source on the host: in the consistent view each device reads its
// piece of the batch from its share of the part files; in the mirrored view each device reads a
// whole batch of its own share.
#include <filesystem>

#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "kernels/data/ofrecord.hpp"
#include "weir/ops.hpp"

namespace weir {

namespace internal {
namespace {

std::vector<TensorMeta> InferOFRecordReader(const InferContext& ctx) {
  const auto& attrs = ctx.Get<OFRecordReaderAttrs>();
  if (attrs.batch_size < 1) throw OpError(ctx.op_type, "batch_size must be >= 1, got {}", attrs.batch_size);
  if (attrs.data_part_num < 1) throw OpError(ctx.op_type, "data_part_num must be >= 1, got {}", attrs.data_part_num);
  if (attrs.part_name_suffix_length < -1) {
    throw OpError(ctx.op_type, "part_name_suffix_length must be -1 (no padding) or >= 0, got {}",
                  attrs.part_name_suffix_length);
  }
  if (attrs.shuffle_buffer_size < 1) {
    throw OpError(ctx.op_type, "shuffle_buffer_size must be >= 1, got {}", attrs.shuffle_buffer_size);
  }
  std::error_code error;
  if (!std::filesystem::is_directory(attrs.data_dir, error)) {
    throw OpError(ctx.op_type, "ofrecord_dir '{}' is not a directory", attrs.data_dir);
  }
  for (std::int64_t part = 0; part < attrs.data_part_num; ++part) {
    const std::string path = ofrecord::PartFilePath(attrs, part);
    if (!std::filesystem::is_regular_file(path, error)) {
      throw OpError(ctx.op_type, "data_part_num is {} but part file '{}' does not exist (part_name_prefix '{}', "
                    "part_name_suffix_length {})", attrs.data_part_num, path, attrs.part_name_prefix,
                    attrs.part_name_suffix_length);
    }
  }
  return {{Shape{attrs.batch_size}, DType::kTensorBuffer}};
}

WEIR_REGISTER_OP({.type = "ofrecord_reader", .num_inputs = 0, .infer = InferOFRecordReader, .sbp = BatchSplitSbp,
                  .read_attrs = ReadAttrs<OFRecordReaderAttrs>(
                      Attr("data_dir", &OFRecordReaderAttrs::data_dir), Attr("batch_size", &OFRecordReaderAttrs::batch_size),
                      Attr("data_part_num", &OFRecordReaderAttrs::data_part_num),
                      Attr("part_name_prefix", &OFRecordReaderAttrs::part_name_prefix),
                      Attr("part_name_suffix_length", &OFRecordReaderAttrs::part_name_suffix_length),
                      Attr("random_shuffle", &OFRecordReaderAttrs::random_shuffle),
                      Attr("shuffle_buffer_size", &OFRecordReaderAttrs::shuffle_buffer_size),
                      Attr("shuffle_after_epoch", &OFRecordReaderAttrs::shuffle_after_epoch),
                      Attr("seed", &OFRecordReaderAttrs::seed)),
                  .host_only = true, .per_device_source = true});

}  // namespace
}  // namespace internal

Blob OFRecordReader(JobBuilder& job, OFRecordReaderAttrs attrs, std::string_view name) {
  return internal::AddSourceOp(job.Graph(), "ofrecord_reader", std::move(attrs), name).front();
}

}  // namespace weir
