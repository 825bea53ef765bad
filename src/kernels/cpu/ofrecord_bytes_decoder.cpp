// ofrecord_bytes_decoder on the host: the first value of each record's bytes feature, copied into
// this kernel's own item buffers (the records' slot may be reused before the bytes are read).
#include <string>

#include "kernels/data/ofrecord.hpp"
#include "kernels/data/tensor_buffer.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {

namespace {

class OFRecordBytesDecoderCpu final : public Kernel {
 public:
  explicit OFRecordBytesDecoderCpu(const KernelSetup& setup)
      : name_(setup.Get<OFRecordBytesDecoderAttrs>().name), op_name_(setup.op_name) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    const auto* records = inputs[0].As<TensorBufferItem>();
    auto* items = outputs[0].As<TensorBufferItem>();
    const std::int64_t batch = inputs[0].NumElements();
    std::vector<std::vector<std::uint8_t>>& buffers = slots_.For(outputs[0].data, static_cast<std::size_t>(batch));
    for (std::int64_t i = 0; i < batch; ++i) {
      const std::span<const std::uint8_t> bytes = ofrecord::FirstBytes(records[i].Bytes(), name_, i, "ofrecord_bytes_decoder", op_name_);
      std::vector<std::uint8_t>& buffer = buffers[static_cast<std::size_t>(i)];
      buffer.assign(bytes.begin(), bytes.end());
      const std::int32_t dims[] = {static_cast<std::int32_t>(buffer.size())};
      SetItem(items[i], buffer, dims);
    }
  }

 private:
  std::string name_;
  std::string op_name_;
  TensorBufferSlots slots_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"ofrecord_bytes_decoder", Device::Kind::kCpu, DType::kTensorBuffer}, &MakeKernel<OFRecordBytesDecoderCpu>);
}

}  // namespace
}  // namespace weir::internal
