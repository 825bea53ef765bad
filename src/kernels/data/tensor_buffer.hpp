#pragma once
// Tensors of dtype kTensorBuffer: each element is a TensorBufferItem describing one variable-sized
// item (a serialized record, a decoded image), whose bytes the kernel that made it owns.
//
// Why the producer owns the bytes, per register slot: registers are fixed-size slots in one arena, and
// a slot is written again only once every reader has returned it (the register protocol). So the
// producer keeps one set of item buffers per slot it writes (keyed by the slot's address) and reuses
// them when that slot comes round again: by then no reader looks at the old items. This holds only
// while the items are read in place, on the host: the data ops are host-only, and nothing else has a
// kernel for kTensorBuffer (a copy would outlive the slot it points into).
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "weir/dtype.hpp"
#include "weir/shape.hpp"

namespace weir::internal {

struct TensorBufferItem {
  const std::uint8_t* data = nullptr;
  std::int64_t bytes = 0;
  /// The item's shape: a record (bytes,); an image (height, width, channels).
  std::int32_t dims[3] = {0, 0, 0};
  std::int8_t ndim = 0;
  DType dtype = DType::kU8;

  std::span<const std::uint8_t> Bytes() const { return {data, static_cast<std::size_t>(bytes)}; }
};
static_assert(sizeof(TensorBufferItem) == 32, "SizeOf(DType::kTensorBuffer) in common/dtype.cpp says 32");

/// The item buffers of one kernel's tensor-buffer output, one set per register slot.
class TensorBufferSlots {
 public:
  /// The `count` item buffers for the slot at `slot` (kept from its last use: their capacity is reused).
  std::vector<std::vector<std::uint8_t>>& For(const void* slot, std::size_t count) {
    std::vector<std::vector<std::uint8_t>>& items = slots_[slot];
    items.resize(count);
    return items;
  }

 private:
  std::unordered_map<const void*, std::vector<std::vector<std::uint8_t>>> slots_;
};

/// Makes `item` describe `bytes` (owned by the caller: its TensorBufferSlots, or a kernel's constant
/// items), elements of `dtype` shaped `dims`.
inline void SetItem(TensorBufferItem& item, const std::vector<std::uint8_t>& bytes, std::span<const std::int32_t> dims,
                    DType dtype = DType::kU8) {
  item.data = bytes.data();
  item.bytes = static_cast<std::int64_t>(bytes.size());
  item.ndim = static_cast<std::int8_t>(dims.size());
  for (std::size_t d = 0; d < 3; ++d) item.dims[d] = d < dims.size() ? dims[d] : 0;
  item.dtype = dtype;
}

/// The item's shape.
inline Shape ItemShape(const TensorBufferItem& item) {
  return Shape(std::vector<std::int64_t>(item.dims, item.dims + item.ndim));
}

}  // namespace weir::internal
