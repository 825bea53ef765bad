#pragma once
// Devices have streams; every compiled task runs on exactly one. On the CPU a stream is an
// executor (one CAF actor hosting many tasks); a CUDA device adds compute, host-to-device and
// device-to-host streams whose ordering comes from the CUDA stream itself.
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "weir/tensor.hpp"

namespace weir::internal {

/// kDeviceToDevice: copies from another GPU of the process, on the destination GPU.
enum class StreamKind : std::uint8_t { kControl, kCompute, kHostToDevice, kDeviceToHost, kCollective, kDeviceToDevice };

struct StreamId {
  Device device;
  StreamKind kind = StreamKind::kCompute;
  int index = 0;  // several compute streams may share a device

  std::string ToString() const;
  friend bool operator==(const StreamId&, const StreamId&) = default;
};

}  // namespace weir::internal
