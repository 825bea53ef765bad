#include "graph/planner/gradient_averaging.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace weir::internal {

namespace {

// The first gradient bucket of a call closes once it holds this many bytes (or the fusion threshold,
// if smaller), as PyTorch DDP's first bucket does: its collective then overlaps the rest of the
// backward pass.
constexpr std::size_t kFirstBucketBytes = std::size_t{1} << 20;

}  // namespace

void GradientAveraging::AllReduce(std::vector<int> values) {
  std::erase_if(values, [&](int value) { return !lowering_.PlacedOf(value).PerDevice(); });
  if (values.empty()) return;
  const Placed first = lowering_.PlacedOf(values.front());
  if (first.registers.size() == 1 && !lowering_.topology.across_processes) {  // one device: the average is the value
    for (int value : values) {
      Placed& piece = lowering_.PlacedOf(value);
      piece = Placed{piece.registers, {piece.devices.front()}};
    }
    return;
  }
  const int devices = static_cast<int>(first.registers.size());
  std::vector<int> from;
  std::vector<TensorMeta> in_metas, out_metas;
  for (int value : values) {
    const Placed& piece = lowering_.PlacedOf(value);
    const TensorMeta& meta = lowering_.Value(value).meta;
    from.insert(from.end(), piece.registers.begin(), piece.registers.end());
    in_metas.insert(in_metas.end(), static_cast<std::size_t>(devices), meta);
    out_metas.push_back(meta);
  }
  const std::string& name = lowering_.Value(values.front()).name;
  const std::vector<int> registers = boxing_.CollectiveTask(
      "all_reduce", values.size() == 1 ? name : fmt::format("{} and {} more", name, values.size() - 1),
      {.op = ReduceOp::kMean, .devices = devices, .tensors = static_cast<int>(values.size()),
       .across_processes = lowering_.topology.across_processes},
      from, in_metas, out_metas);
  for (std::size_t j = 0; j < values.size(); ++j) {
    lowering_.PlacedOf(values[j]) = Placed{{registers[j]}, {first.devices.front()}};
  }
}

void GradientAveraging::CloseBucket() {
  if (bucket_.empty()) return;
  AllReduce(bucket_);
  first_bucket_ = false;
  bucket_.clear();
  bucket_bytes_ = 0;
}

void GradientAveraging::AddToBucket(int value) {
  const ValueInfo& info = lowering_.Value(value);
  if (!bucket_.empty()) {  // a bucket holds one dtype on one device
    const int last = bucket_.back();
    if (lowering_.Value(last).meta.dtype != info.meta.dtype ||
        lowering_.PlacedOf(last).devices != lowering_.PlacedOf(value).devices) {
      CloseBucket();
    }
  }
  bucket_.push_back(value);
  bucket_bytes_ += info.meta.NumBytes();
  const std::size_t threshold = lowering_.options.fusion_threshold_bytes;
  const std::size_t cap = first_bucket_ ? std::min(kFirstBucketBytes, threshold) : threshold;
  if (bucket_bytes_ >= cap) CloseBucket();
}

bool GradientAveraging::BucketHolds(const std::vector<int>& values) const {
  return std::any_of(values.begin(), values.end(),
                     [&](int value) { return std::find(bucket_.begin(), bucket_.end(), value) != bucket_.end(); });
}

}  // namespace weir::internal
