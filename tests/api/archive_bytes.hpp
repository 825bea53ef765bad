#pragma once
// Building the bytes of data files in tests: byte order helpers, raw deflate (what a zip's deflated
// members hold) and the kinds of zip numpy writes.
#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include <doctest/doctest.h>

namespace weir::testing {

using Bytes = std::vector<std::uint8_t>;

inline void PutLittle(Bytes& out, std::uint64_t value, int width) {
  for (int i = 0; i < width; ++i) out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}
inline void PutBig32(Bytes& out, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(value >> shift));
}
inline void Append(Bytes& out, const Bytes& more) { out.insert(out.end(), more.begin(), more.end()); }

/// Raw deflate (no zlib header), as a zip member's compressed data.
inline Bytes Deflate(const Bytes& data) {
  z_stream stream{};
  REQUIRE(deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  Bytes out(deflateBound(&stream, data.size()));
  stream.next_in = const_cast<Bytef*>(data.data());
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = out.data();
  stream.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&stream, Z_FINISH) == Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

struct ZipMember {
  std::string name;
  Bytes data;
};

/// numpy.savez (stored), savez_compressed (deflate), or every size and offset in zip64 records.
enum class ZipKind { kStored, kDeflate, kZip64 };

}  // namespace weir::testing
