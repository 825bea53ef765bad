#pragma once
// Building the bytes of data files in tests: byte order helpers, raw deflate (what a zip's deflated
// members hold), and zips as numpy writes them, with where each field lies (for the fuzz tests).
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

namespace weir::testing {

using Bytes = std::vector<std::uint8_t>;

/// Writes `bytes` to a new file at `path` (whatever was there removed first: ext4 flushes a truncated
/// file to disk on close, which made thousands of rewrites in the fuzz tests take seconds).
inline void WriteBytes(const std::filesystem::path& path, const Bytes& bytes) {
  std::error_code ignored;
  std::filesystem::remove_all(path, ignored);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

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

struct Field {
  std::size_t offset;
  int width;
  std::string name;
  bool big_endian = false;
};

// A file with the integer fields and record boundaries a mutation aims at.
struct Layout {
  Bytes bytes;
  std::vector<Field> fields;
  std::vector<std::size_t> boundaries;
  std::vector<std::pair<std::size_t, std::size_t>> payloads;  // member data, [begin, end)
};

// A zip as numpy.savez (stored) or savez_compressed (deflate) writes it; kZip64 puts every size and
// offset in zip64 fields, as Python's zipfile does past 4 GiB. `aliases` more central directory
// entries, "alias<i>.npy", point at the first member's local header: overlapping members.
inline Layout Zip(const std::vector<ZipMember>& members, ZipKind kind, int aliases = 0) {
  const bool zip64 = kind == ZipKind::kZip64;
  const std::uint16_t method = kind == ZipKind::kDeflate ? 8 : 0;
  Layout zip;
  Bytes& out = zip.bytes;
  Bytes directory;
  std::vector<Field> directory_fields;  // offsets within `directory`
  struct Central {
    std::string name;
    std::uint32_t crc;
    std::uint64_t stored_size;
    std::uint64_t size;
    std::uint64_t offset;
  };
  std::vector<Central> entries;
  for (const ZipMember& member : members) {
    const Bytes stored = method == 8 ? Deflate(member.data) : member.data;
    const auto crc = static_cast<std::uint32_t>(crc32_z(0, member.data.data(), member.data.size()));
    const std::size_t local = out.size();
    entries.push_back({member.name, crc, stored.size(), member.data.size(), local});
    zip.boundaries.push_back(local);
    PutLittle(out, 0x04034b50, 4);
    PutLittle(out, zip64 ? 45 : 20, 2);
    PutLittle(out, 0, 2);
    PutLittle(out, method, 2);
    PutLittle(out, 0, 4);
    PutLittle(out, crc, 4);
    PutLittle(out, zip64 ? 0xFFFFFFFF : stored.size(), 4);
    PutLittle(out, zip64 ? 0xFFFFFFFF : member.data.size(), 4);
    PutLittle(out, member.name.size(), 2);
    PutLittle(out, zip64 ? 20 : 0, 2);
    for (const auto& [offset, width, name] :
         std::vector<std::tuple<std::size_t, int, const char*>>{{0, 4, "signature"},
                                                                {6, 2, "flags"},
                                                                {8, 2, "method"},
                                                                {14, 4, "crc"},
                                                                {18, 4, "compressed size"},
                                                                {22, 4, "size"},
                                                                {26, 2, "name length"},
                                                                {28, 2, "extra length"}}) {
      zip.fields.push_back({local + offset, width, fmt::format("local {} of {}", name, member.name)});
    }
    out.insert(out.end(), member.name.begin(), member.name.end());
    zip.boundaries.push_back(out.size());
    if (zip64) {
      const std::size_t extra = out.size();
      PutLittle(out, 0x0001, 2);
      PutLittle(out, 16, 2);
      PutLittle(out, member.data.size(), 8);
      PutLittle(out, stored.size(), 8);
      zip.fields.push_back({extra + 2, 2, "local zip64 extra size"});
      zip.fields.push_back({extra + 4, 8, "local zip64 size"});
      zip.fields.push_back({extra + 12, 8, "local zip64 compressed size"});
    }
    zip.boundaries.push_back(out.size());
    zip.payloads.push_back({out.size(), out.size() + stored.size()});
    Append(out, stored);
    zip.boundaries.push_back(out.size());
  }
  for (int i = 0; i < aliases && !entries.empty(); ++i) {
    Central alias = entries.front();
    alias.name = fmt::format("alias{}.npy", i);
    entries.push_back(alias);
  }
  for (const Central& entry : entries) {
    const std::size_t at = directory.size();
    PutLittle(directory, 0x02014b50, 4);
    PutLittle(directory, 45, 2);
    PutLittle(directory, zip64 ? 45 : 20, 2);
    PutLittle(directory, 0, 2);
    PutLittle(directory, method, 2);
    PutLittle(directory, 0, 4);
    PutLittle(directory, entry.crc, 4);
    PutLittle(directory, zip64 ? 0xFFFFFFFF : entry.stored_size, 4);
    PutLittle(directory, zip64 ? 0xFFFFFFFF : entry.size, 4);
    PutLittle(directory, entry.name.size(), 2);
    PutLittle(directory, zip64 ? 28 : 0, 2);
    PutLittle(directory, 0, 2);
    PutLittle(directory, 0, 2);
    PutLittle(directory, 0, 2);
    PutLittle(directory, 0, 4);
    PutLittle(directory, zip64 ? 0xFFFFFFFF : entry.offset, 4);
    for (const auto& [offset, width, name] :
         std::vector<std::tuple<std::size_t, int, const char*>>{{0, 4, "signature"},
                                                                {8, 2, "flags"},
                                                                {10, 2, "method"},
                                                                {16, 4, "crc"},
                                                                {20, 4, "compressed size"},
                                                                {24, 4, "size"},
                                                                {28, 2, "name length"},
                                                                {30, 2, "extra length"},
                                                                {32, 2, "comment length"},
                                                                {34, 2, "disk"},
                                                                {42, 4, "local header offset"}}) {
      directory_fields.push_back({at + offset, width, fmt::format("central {} of {}", name, entry.name)});
    }
    directory.insert(directory.end(), entry.name.begin(), entry.name.end());
    if (zip64) {
      const std::size_t extra = directory.size();
      PutLittle(directory, 0x0001, 2);
      PutLittle(directory, 24, 2);
      PutLittle(directory, entry.size, 8);
      PutLittle(directory, entry.stored_size, 8);
      PutLittle(directory, entry.offset, 8);
      directory_fields.push_back({extra + 2, 2, "central zip64 extra size of " + entry.name});
      directory_fields.push_back({extra + 4, 8, "central zip64 size of " + entry.name});
      directory_fields.push_back({extra + 12, 8, "central zip64 compressed size of " + entry.name});
      directory_fields.push_back({extra + 20, 8, "central zip64 local header offset of " + entry.name});
    }
  }
  const std::size_t directory_offset = out.size();
  for (Field field : directory_fields) {
    field.offset += directory_offset;
    zip.fields.push_back(field);
  }
  Append(out, directory);
  zip.boundaries.push_back(out.size());
  if (zip64) {
    const std::size_t record = out.size();
    PutLittle(out, 0x06064b50, 4);
    PutLittle(out, 44, 8);
    PutLittle(out, 45, 2);
    PutLittle(out, 45, 2);
    PutLittle(out, 0, 4);
    PutLittle(out, 0, 4);
    PutLittle(out, entries.size(), 8);
    PutLittle(out, entries.size(), 8);
    PutLittle(out, directory.size(), 8);
    PutLittle(out, directory_offset, 8);
    const std::size_t locator = out.size();
    PutLittle(out, 0x07064b50, 4);
    PutLittle(out, 0, 4);
    PutLittle(out, record, 8);
    PutLittle(out, 1, 4);
    for (const auto& [offset, width, name] :
         std::vector<std::tuple<std::size_t, int, const char*>>{{record, 4, "zip64 end signature"},
                                                                {record + 4, 8, "zip64 end record size"},
                                                                {record + 16, 4, "zip64 end disk"},
                                                                {record + 24, 8, "zip64 entries on disk"},
                                                                {record + 32, 8, "zip64 entries"},
                                                                {record + 40, 8, "zip64 directory size"},
                                                                {record + 48, 8, "zip64 directory offset"},
                                                                {locator, 4, "zip64 locator signature"},
                                                                {locator + 8, 8, "zip64 end record offset"}}) {
      zip.fields.push_back({offset, width, name});
    }
    zip.boundaries.push_back(locator);
    zip.boundaries.push_back(out.size());
  }
  const std::size_t end = out.size();
  PutLittle(out, 0x06054b50, 4);
  PutLittle(out, 0, 4);
  PutLittle(out, zip64 ? 0xFFFF : entries.size(), 2);
  PutLittle(out, zip64 ? 0xFFFF : entries.size(), 2);
  PutLittle(out, zip64 ? 0xFFFFFFFF : directory.size(), 4);
  PutLittle(out, zip64 ? 0xFFFFFFFF : directory_offset, 4);
  PutLittle(out, 0, 2);
  for (const auto& [offset, width, name] :
       std::vector<std::tuple<std::size_t, int, const char*>>{{0, 4, "end signature"},
                                                              {4, 2, "end disk"},
                                                              {6, 2, "end directory disk"},
                                                              {8, 2, "end entries on disk"},
                                                              {10, 2, "end entries"},
                                                              {12, 4, "end directory size"},
                                                              {16, 4, "end directory offset"},
                                                              {20, 2, "end comment length"}}) {
    zip.fields.push_back({end + offset, width, name});
  }
  zip.boundaries.push_back(end);
  zip.boundaries.push_back(out.size());
  return zip;
}

}  // namespace weir::testing
