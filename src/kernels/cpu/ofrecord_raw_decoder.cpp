// ofrecord_raw_decoder on the host: each record's feature converted into its row of the output.
#include <algorithm>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/data/ofrecord.hpp"
#include "kernels/data/tensor_buffer.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

template <typename T> class OFRecordRawDecoderCpu final : public Kernel {
 public:
  explicit OFRecordRawDecoderCpu(const KernelSetup& setup)
      : attrs_(setup.Get<OFRecordRawDecoderAttrs>()), op_name_(setup.op_name), per_record_(attrs_.shape.NumElements()) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const auto* records = inputs[0].As<TensorBufferItem>();
    T* out = outputs[0].As<T>();
    for (std::int64_t i = 0; i < inputs[0].NumElements(); ++i) {
      const std::span<const std::uint8_t> record = records[i].Bytes();
      const std::optional<ofrecord::Feature> feature = ofrecord::Find(record, attrs_.name);
      if (!feature) {
        throw KernelError(fmt::format("[ofrecord_raw_decoder] op '{}': record {} of the batch has no feature '{}' (it has: {})",
                                      op_name_, i, attrs_.name, fmt::join(ofrecord::FeatureNames(record), ", ")));
      }
      T* row = out + i * per_record_;
      const std::int64_t count = ofrecord::ReadValues<T>(*feature, row, per_record_);  // one pass over the list
      if (count > per_record_ || (count < per_record_ && !attrs_.auto_zero_padding)) {
        throw KernelError(fmt::format("[ofrecord_raw_decoder] op '{}': feature '{}' of record {} holds {} values, shape {} "
                                      "takes {}{}",
                                      op_name_, attrs_.name, i, count, attrs_.shape, per_record_,
                                      count < per_record_ ? " (auto_zero_padding=True pads it with zeros)" : ""));
      }
      std::fill(row + count, row + per_record_, T{0});
    }
  }

 private:
  OFRecordRawDecoderAttrs attrs_;
  std::string op_name_;
  std::int64_t per_record_;
};

std::unique_ptr<Kernel> MakeRawDecoder(const KernelSetup& setup) {
  switch (setup.outputs[0].dtype) {
    case DType::kF64: return std::make_unique<OFRecordRawDecoderCpu<double>>(setup);
    case DType::kI32: return std::make_unique<OFRecordRawDecoderCpu<std::int32_t>>(setup);
    case DType::kI64: return std::make_unique<OFRecordRawDecoderCpu<std::int64_t>>(setup);
    case DType::kU8: return std::make_unique<OFRecordRawDecoderCpu<std::uint8_t>>(setup);
    case DType::kI8: return std::make_unique<OFRecordRawDecoderCpu<std::int8_t>>(setup);
    default: return std::make_unique<OFRecordRawDecoderCpu<float>>(setup);
  }
}

WEIR_REGISTER_KERNELS {
  RegisterKernel({"ofrecord_raw_decoder", Device::Kind::kCpu, DType::kTensorBuffer}, &MakeRawDecoder);
}

}  // namespace
}  // namespace weir::internal
