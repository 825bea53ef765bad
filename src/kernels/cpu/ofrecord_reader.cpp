// ofrecord_reader on the host: reads its share of the part files record by record, epoch after
// epoch, optionally through a shuffle buffer. The records it hands out live in its own buffers, one
// set per output slot (kernels/data/tensor_buffer.hpp), so the register pipeline reads ahead: while
// the job computes on one batch, the reader fills the next slot.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/data/ofrecord.hpp"
#include "kernels/data/tensor_buffer.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {
namespace {

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

class OFRecordReaderCpu final : public Kernel {
 public:
  explicit OFRecordReaderCpu(const KernelSetup& setup)
      : attrs_(setup.Get<OFRecordReaderAttrs>()),
        op_name_(setup.op_name),
        rng_(attrs_.seed ^ (0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(setup.shard + 1))) {
    // Each of the parallel readers takes a contiguous, balanced share of the part files (OneFlow's).
    const std::int64_t parts = attrs_.data_part_num;
    if (parts < setup.shards) {
      throw std::invalid_argument(fmt::format(
          "[ofrecord_reader] op '{}': data_part_num is {}, fewer than the {} readers that split the batch (one per "
          "device, over every process): each reads its own part files, so write at least {} part files",
          op_name_, parts, setup.shards, setup.shards));
    }
    const std::int64_t begin = parts * setup.shard / setup.shards;
    const std::int64_t end = parts * (setup.shard + 1) / setup.shards;
    for (std::int64_t part = begin; part < end; ++part) files_.push_back(ofrecord::PartFilePath(attrs_, part));
    order_ = files_;
    if (attrs_.shuffle_after_epoch) std::shuffle(order_.begin(), order_.end(), rng_);
  }

  void Run(std::span<const ConstTensorView> /*inputs*/, std::span<const TensorView> outputs) override {
    const std::int64_t batch = outputs[0].NumElements();
    auto* items = outputs[0].As<TensorBufferItem>();
    std::vector<std::vector<std::uint8_t>>& buffers = slots_.For(outputs[0].data, static_cast<std::size_t>(batch));
    for (std::int64_t i = 0; i < batch; ++i) {
      std::vector<std::uint8_t>& record = buffers[static_cast<std::size_t>(i)];
      Next(record);
      const std::int32_t dims[] = {static_cast<std::int32_t>(record.size())};
      SetItem(items[i], record, dims);
    }
  }

 private:
  // The next record into `record`: from the shuffle buffer, or straight from the files.
  void Next(std::vector<std::uint8_t>& record) {
    if (!attrs_.random_shuffle) {
      ReadRecord(record);
      return;
    }
    while (static_cast<std::int64_t>(shuffle_.size()) < attrs_.shuffle_buffer_size) {
      shuffle_.emplace_back();
      ReadRecord(shuffle_.back());
    }
    std::uniform_int_distribution<std::size_t> pick(0, shuffle_.size() - 1);
    std::swap(shuffle_[pick(rng_)], shuffle_.back());
    record.swap(shuffle_.back());
    shuffle_.pop_back();
  }

  // The next record of the files, in order, starting the next epoch at the end of the last file.
  void ReadRecord(std::vector<std::uint8_t>& record) {
    for (int empty_files = 0;; ++empty_files) {
      if (file_ == nullptr) {
        if (empty_files > static_cast<int>(order_.size())) {
          throw KernelError(fmt::format("[ofrecord_reader] op '{}': its part files ({} to {}) hold no records", op_name_,
                                        files_.front(), files_.back()));
        }
        OpenNext();
      }
      std::uint8_t header[8];
      const std::size_t got = std::fread(header, 1, sizeof(header), file_.get());
      if (got == 0 && std::feof(file_.get())) {
        file_.reset();
        continue;
      }
      if (got != sizeof(header)) Corrupt(fmt::format("a record's length is cut off ({} of 8 bytes)", got));
      std::uint64_t length = 0;
      for (int b = 7; b >= 0; --b) length = (length << 8) | header[b];  // little-endian int64
      if (length > remaining_ - sizeof(header)) {
        Corrupt(fmt::format("a record says it has {} bytes, but {} are left in the file", length, remaining_ - sizeof(header)));
      }
      record.resize(static_cast<std::size_t>(length));
      if (std::fread(record.data(), 1, record.size(), file_.get()) != record.size()) Corrupt("a read failed");
      try {
        ofrecord::Validate(record);
      } catch (const ofrecord::FormatError& e) {
        Corrupt(e.what());
      }
      offset_ += sizeof(header) + length;
      remaining_ -= sizeof(header) + length;
      return;
    }
  }

  void OpenNext() {
    if (next_ == order_.size()) {  // a new epoch
      next_ = 0;
      if (attrs_.shuffle_after_epoch) std::shuffle(order_.begin(), order_.end(), rng_);
    }
    path_ = order_[next_++];
    file_.reset(std::fopen(path_.c_str(), "rb"));
    if (file_ == nullptr) {
      throw KernelError(fmt::format("[ofrecord_reader] op '{}': cannot open part file '{}'", op_name_, path_));
    }
    std::setvbuf(file_.get(), nullptr, _IOFBF, 1 << 20);
    std::fseek(file_.get(), 0, SEEK_END);
    remaining_ = static_cast<std::uint64_t>(std::ftell(file_.get()));
    std::fseek(file_.get(), 0, SEEK_SET);
    offset_ = 0;
  }

  [[noreturn]] void Corrupt(const std::string& why) {
    const std::string message =
        fmt::format("[ofrecord_reader] op '{}': part file '{}' is corrupt at byte {}: {}", op_name_, path_, offset_, why);
    file_.reset();  // the next call goes on with the next file
    throw KernelError(message);
  }

  OFRecordReaderAttrs attrs_;
  std::string op_name_;
  std::mt19937_64 rng_;
  std::vector<std::string> files_;  // this reader's share, in part order
  std::vector<std::string> order_;  // this epoch's order
  std::size_t next_ = 0;
  std::unique_ptr<std::FILE, FileCloser> file_;
  std::string path_;
  std::uint64_t remaining_ = 0;
  std::uint64_t offset_ = 0;
  std::vector<std::vector<std::uint8_t>> shuffle_;
  TensorBufferSlots slots_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"ofrecord_reader", Device::Kind::kCpu, DType::kTensorBuffer}, &MakeKernel<OFRecordReaderCpu>);
}

}  // namespace
}  // namespace weir::internal
