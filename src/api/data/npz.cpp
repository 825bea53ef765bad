// .npz archives (numpy.savez / savez_compressed): a zip of .npy files, STORED or DEFLATE. Every
// offset and size comes from the file, so each is bounds-checked before use: a hostile archive gets
// an error, never a read outside the buffer or an allocation its own size cannot justify.
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "api/data/binary_file.hpp"
#include "weir/data.hpp"

namespace weir {

namespace {

constexpr std::uint32_t kLocalHeaderSignature = 0x04034b50;
constexpr std::uint32_t kCentralHeaderSignature = 0x02014b50;
constexpr std::uint32_t kEndSignature = 0x06054b50;
constexpr std::uint32_t kZip64EndSignature = 0x06064b50;
constexpr std::uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr std::uint64_t kLocalHeaderBytes = 30;
constexpr std::uint64_t kCentralHeaderBytes = 46;
constexpr std::uint64_t kEndBytes = 22;
constexpr std::uint64_t kZip64EndBytes = 56;
constexpr std::uint64_t kZip64LocatorBytes = 20;
constexpr std::uint64_t kMaxCommentBytes = 0xFFFF;
constexpr std::uint16_t kMethodStored = 0;
constexpr std::uint16_t kMethodDeflate = 8;
constexpr std::uint16_t kFlagEncrypted = 0x1;
constexpr std::uint16_t kZip64ExtraId = 0x0001;
// DEFLATE never expands data more than about 1032 times, so a larger claimed size is a lie.
constexpr std::uint64_t kMaxDeflateRatio = 1032;
// Inflating starts with a buffer of at most this ratio (real .npz files stay far below it) and
// grows only as real output arrives, so a size a header merely claims reserves no memory.
constexpr std::uint64_t kInflateStartRatio = 64;
constexpr std::uint64_t kInflateStartSlack = 64 << 10;
constexpr std::size_t kMaxNpyRank = 64;

// Little-endian reads from a buffer whose bounds the caller has checked.
std::uint16_t U16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }
std::uint32_t U32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) | (std::uint32_t{p[3]} << 24);
}
std::uint64_t U64(const std::uint8_t* p) { return std::uint64_t{U32(p)} | (std::uint64_t{U32(p + 4)} << 32); }

struct ZipEntry {
  std::string name;
  std::string label;  // the name as messages show it: cut short, unprintable bytes escaped
  std::uint16_t flags = 0;
  std::uint16_t method = 0;
  std::uint32_t crc32 = 0;
  std::uint64_t compressed_size = 0;
  std::uint64_t uncompressed_size = 0;
  std::uint64_t local_header_offset = 0;
};

class NpzReader {
 public:
  NpzReader(std::string path, std::vector<std::uint8_t> bytes) : path_(std::move(path)), bytes_(std::move(bytes)) {}

  std::map<std::string, NpyArray> Read() {
    constexpr std::string_view kSuffix = ".npy";
    std::vector<ZipEntry> members;
    for (ZipEntry& entry : CentralDirectory()) {
      // numpy.load treats other members as opaque; nothing MNIST needs lives there.
      if (entry.name.size() > kSuffix.size() && entry.name.ends_with(kSuffix)) members.push_back(std::move(entry));
    }
    CheckNoOverlap(members);
    std::map<std::string, NpyArray> arrays;
    for (const ZipEntry& entry : members) {
      const std::string key = entry.name.substr(0, entry.name.size() - kSuffix.size());
      if (arrays.contains(key)) throw Fail(fmt::format("member '{}' appears twice", entry.label));
      arrays.emplace(key, ParseNpy(entry.label, Extract(entry)));
    }
    return arrays;
  }

 private:
  std::runtime_error Fail(const std::string& what) const {
    return std::runtime_error(fmt::format("[ReadNpz] {}: {}", path_, what));
  }

  std::uint64_t Size() const { return bytes_.size(); }

  // True when [offset, offset + length) lies inside the file.
  bool Inside(std::uint64_t offset, std::uint64_t length) const {
    return offset <= Size() && length <= Size() - offset;
  }

  void Require(std::uint64_t offset, std::uint64_t length, std::string_view what) const {
    if (!Inside(offset, length)) {
      throw Fail(fmt::format("truncated or corrupt zip: the {} at offset {} ({} bytes) runs past the end of the "
                             "file ({} bytes)",
                             what, offset, length, Size()));
    }
  }

  const std::uint8_t* At(std::uint64_t offset) const { return bytes_.data() + offset; }

  // The end-of-central-directory record: the last occurrence of its signature that leaves room
  // for the record and its comment.
  std::uint64_t FindEnd() const {
    if (Size() < kEndBytes) {
      throw Fail(fmt::format("not a zip archive (an .npz): the file has {} bytes, a zip needs at least {}", Size(),
                             kEndBytes));
    }
    const std::uint64_t last = Size() - kEndBytes;
    const std::uint64_t first = last > kMaxCommentBytes ? last - kMaxCommentBytes : 0;
    for (std::uint64_t offset = last + 1; offset-- > first;) {
      if (U32(At(offset)) == kEndSignature && offset + kEndBytes + U16(At(offset + 20)) <= Size()) return offset;
    }
    if (Size() >= 6 && std::memcmp(At(0), "\x93NUMPY", 6) == 0) {
      throw Fail("this is a single .npy file, not an .npz archive");
    }
    if (U32(At(0)) == kLocalHeaderSignature) {
      throw Fail("truncated or corrupt zip: it starts like a zip archive but has no end-of-central-directory record");
    }
    throw Fail("not a zip archive (an .npz): no end-of-central-directory record");
  }

  std::vector<ZipEntry> CentralDirectory() const {
    const std::uint64_t end = FindEnd();
    const std::uint8_t* record = At(end);
    if (U16(record + 4) != 0 || U16(record + 6) != 0) throw Fail("multi-disk zip archives are not supported");
    std::uint64_t entry_count = U16(record + 10);
    std::uint64_t directory_size = U32(record + 12);
    std::uint64_t directory_offset = U32(record + 16);
    if (entry_count == 0xFFFF || directory_size == 0xFFFFFFFF || directory_offset == 0xFFFFFFFF) {
      // Zip64: the real values live in a record that a locator just before this one points to.
      if (end < kZip64LocatorBytes || U32(At(end - kZip64LocatorBytes)) != kZip64LocatorSignature) {
        throw Fail("corrupt zip: the end record asks for zip64 but no zip64 locator precedes it");
      }
      const std::uint64_t zip64_end = U64(At(end - kZip64LocatorBytes + 8));
      Require(zip64_end, kZip64EndBytes, "zip64 end record");
      if (U32(At(zip64_end)) != kZip64EndSignature) throw Fail("corrupt zip: bad zip64 end record signature");
      entry_count = U64(At(zip64_end + 32));
      directory_size = U64(At(zip64_end + 40));
      directory_offset = U64(At(zip64_end + 48));
    }
    Require(directory_offset, directory_size, "central directory");

    std::vector<ZipEntry> entries;
    const std::uint64_t directory_end = directory_offset + directory_size;
    std::uint64_t offset = directory_offset;
    // Each entry consumes at least kCentralHeaderBytes, so a huge claimed count cannot loop long.
    for (std::uint64_t i = 0; i < entry_count; ++i) {
      if (offset > directory_end || directory_end - offset < kCentralHeaderBytes) {
        throw Fail(fmt::format("corrupt zip: the central directory ({} bytes) ends inside entry {} of {}",
                               directory_size, i, entry_count));
      }
      const std::uint8_t* header = At(offset);
      if (U32(header) != kCentralHeaderSignature) {
        throw Fail(fmt::format("corrupt zip: bad central directory signature at offset {}", offset));
      }
      ZipEntry entry;
      entry.flags = U16(header + 8);
      entry.method = U16(header + 10);
      entry.crc32 = U32(header + 16);
      entry.compressed_size = U32(header + 20);
      entry.uncompressed_size = U32(header + 24);
      const std::uint64_t name_length = U16(header + 28);
      const std::uint64_t extra_length = U16(header + 30);
      const std::uint64_t comment_length = U16(header + 32);
      entry.local_header_offset = U32(header + 42);
      const std::uint64_t entry_bytes = kCentralHeaderBytes + name_length + extra_length + comment_length;
      if (directory_end - offset < entry_bytes) {
        throw Fail(fmt::format("corrupt zip: central directory entry {} runs past the directory's end", i));
      }
      entry.name.assign(reinterpret_cast<const char*>(header + kCentralHeaderBytes), name_length);
      entry.label = internal::Excerpt(entry.name);
      ReadZip64Extra(header + kCentralHeaderBytes + name_length, extra_length, entry);
      entries.push_back(std::move(entry));
      offset += entry_bytes;
    }
    return entries;
  }

  // Sizes and offsets too large for 32 bits are 0xFFFFFFFF in the header; the zip64 extra field
  // then holds them as 64-bit values, in this order, only for the fields that overflowed.
  void ReadZip64Extra(const std::uint8_t* extra, std::uint64_t length, ZipEntry& entry) const {
    std::uint64_t position = 0;
    while (length - position >= 4) {
      const std::uint16_t id = U16(extra + position);
      const std::uint64_t size = U16(extra + position + 2);
      position += 4;
      if (size > length - position) throw Fail(fmt::format("corrupt zip: extra field of '{}' overruns", entry.label));
      if (id == kZip64ExtraId) {
        std::uint64_t field = 0;
        for (std::uint64_t* value : {&entry.uncompressed_size, &entry.compressed_size, &entry.local_header_offset}) {
          if (*value != 0xFFFFFFFF) continue;
          if (size - field < 8) throw Fail(fmt::format("corrupt zip: short zip64 field for '{}'", entry.label));
          *value = U64(extra + position + field);
          field += 8;
        }
      }
      position += size;
    }
  }

  // Where a member's data starts, after checking that its local header and data lie in the file.
  std::uint64_t DataOffset(const ZipEntry& entry) const {
    Require(entry.local_header_offset, kLocalHeaderBytes, fmt::format("local header of '{}'", entry.label));
    const std::uint8_t* local = At(entry.local_header_offset);
    if (U32(local) != kLocalHeaderSignature) {
      throw Fail(fmt::format("corrupt zip: bad local header signature for '{}' at offset {}", entry.label,
                             entry.local_header_offset));
    }
    // The local header's own name and extra lengths may differ from the central directory's.
    const std::uint64_t data_offset = entry.local_header_offset + kLocalHeaderBytes + U16(local + 26) + U16(local + 28);
    Require(data_offset, entry.compressed_size, fmt::format("data of '{}'", entry.label));
    return data_offset;
  }

  // Entries that share bytes would let a small archive expand into any number of copies of one
  // member (a zip bomb); in a real archive each member's header and data are its own.
  void CheckNoOverlap(const std::vector<ZipEntry>& members) const {
    struct Span {
      std::uint64_t begin;
      std::uint64_t end;
      const ZipEntry* entry;
    };
    std::vector<Span> spans;
    for (const ZipEntry& entry : members) {
      spans.push_back({entry.local_header_offset, DataOffset(entry) + entry.compressed_size, &entry});
    }
    std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
    const Span* furthest = nullptr;  // of the spans so far, the one reaching furthest
    for (const Span& span : spans) {
      if (furthest != nullptr && span.begin < furthest->end) {
        throw Fail(fmt::format("corrupt zip: members '{}' and '{}' overlap at offset {} (a zip bomb?)",
                               furthest->entry->label, span.entry->label, span.begin));
      }
      if (furthest == nullptr || span.end > furthest->end) furthest = &span;
    }
  }

  std::vector<std::uint8_t> Extract(const ZipEntry& entry) const {
    if (entry.flags & kFlagEncrypted) throw Fail(fmt::format("member '{}' is encrypted", entry.label));
    const std::uint8_t* data = At(DataOffset(entry));

    std::vector<std::uint8_t> out;
    if (entry.method == kMethodStored) {
      if (entry.compressed_size != entry.uncompressed_size) {
        throw Fail(fmt::format("corrupt zip: stored member '{}' has compressed size {} but size {}", entry.label,
                               entry.compressed_size, entry.uncompressed_size));
      }
      out.assign(data, data + entry.compressed_size);
    } else if (entry.method == kMethodDeflate) {
      out = Inflate(entry, data);
    } else {
      throw Fail(fmt::format("member '{}' uses compression method {}; only stored (0) and deflate (8) are supported",
                             entry.label, entry.method));
    }
    const std::uint32_t crc = static_cast<std::uint32_t>(crc32_z(crc32_z(0, nullptr, 0), out.data(), out.size()));
    if (crc != entry.crc32) {
      throw Fail(fmt::format("member '{}' is corrupt: CRC-32 0x{:08x}, the archive says 0x{:08x}", entry.label, crc,
                             entry.crc32));
    }
    return out;
  }

  std::vector<std::uint8_t> Inflate(const ZipEntry& entry, const std::uint8_t* data) const {
    const std::uint64_t declared = entry.uncompressed_size;
    if (declared / kMaxDeflateRatio > entry.compressed_size + 1) {
      throw Fail(fmt::format("corrupt zip: member '{}' claims {} bytes from {} compressed bytes", entry.label,
                             declared, entry.compressed_size));
    }
    std::vector<std::uint8_t> out(
        std::min(declared, entry.compressed_size * kInflateStartRatio + kInflateStartSlack));
    std::uint8_t no_output = 0;  // zlib rejects a null next_out even when nothing is to be written
    z_stream stream{};
    // Negative window bits: raw DEFLATE, as zip stores it (no zlib or gzip wrapper).
    if (inflateInit2(&stream, -MAX_WBITS) != Z_OK) throw Fail("zlib inflateInit2 failed");
    stream.next_out = &no_output;
    // avail_in and avail_out are 32-bit, so members over 4 GiB go through in chunks.
    constexpr std::uint64_t kChunk = std::numeric_limits<uInt>::max();
    std::uint64_t consumed = 0;  // input handed to zlib so far
    int status = Z_OK;
    while (true) {
      if (stream.avail_in == 0 && consumed < entry.compressed_size) {
        stream.next_in = const_cast<Bytef*>(data + consumed);
        stream.avail_in = static_cast<uInt>(std::min(entry.compressed_size - consumed, kChunk));
        consumed += stream.avail_in;
      }
      if (stream.avail_out == 0) {
        const std::uint64_t produced = stream.total_out;
        if (produced == out.size() && out.size() < declared) out.resize(std::min(declared, 2 * out.size()));
        if (produced < out.size()) {
          stream.next_out = out.data() + produced;
          stream.avail_out = static_cast<uInt>(std::min(out.size() - produced, kChunk));
        }
      }
      status = inflate(&stream, Z_NO_FLUSH);
      if (status == Z_STREAM_END) break;
      // Z_BUF_ERROR means no progress was possible: go on only if the next round can add input or room.
      const bool can_refill = stream.avail_in == 0 && consumed < entry.compressed_size;
      const bool can_grow = stream.avail_out == 0 && stream.total_out < declared;
      if (status == Z_OK || (status == Z_BUF_ERROR && (can_refill || can_grow))) continue;
      break;
    }
    const std::uint64_t produced = stream.total_out;
    const char* message = stream.msg;  // a static string in zlib, valid after inflateEnd
    inflateEnd(&stream);
    if (status != Z_STREAM_END) {
      const std::string reason = message != nullptr            ? message
                                 : status != Z_BUF_ERROR        ? zError(status)
                                 : produced == declared         ? "it holds more data than the archive says"
                                                                : "the compressed data ends early";
      throw Fail(fmt::format("member '{}' does not inflate: {} (after {} of {} bytes)", entry.label, reason, produced,
                             declared));
    }
    if (produced != declared) {
      throw Fail(fmt::format("member '{}' inflates to {} bytes, the archive says {}", entry.label, produced, declared));
    }
    return out;
  }

  // --- .npy: magic, version, a little-endian header length, then a Python dict literal such as
  // {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), } and the raw data.

  NpyArray ParseNpy(const std::string& member, std::vector<std::uint8_t> bytes) const {
    const auto fail = [&](const std::string& what) { return Fail(fmt::format("member '{}': {}", member, what)); };
    if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) throw fail("not a .npy file (bad magic)");
    const int major = bytes[6];
    std::uint64_t header_start = 0;
    std::uint64_t header_length = 0;
    if (major == 1) {
      header_start = 10;
      header_length = U16(bytes.data() + 8);
    } else if (major == 2 || major == 3) {
      if (bytes.size() < 12) throw fail("truncated .npy header");
      header_start = 12;
      header_length = U32(bytes.data() + 8);
    } else {
      throw fail(fmt::format("unsupported .npy format version {}.{}", major, bytes[7]));
    }
    if (header_length > bytes.size() - header_start) {
      throw fail(fmt::format("truncated .npy header: it announces {} bytes, {} follow", header_length,
                             bytes.size() - header_start));
    }
    const std::string_view header(reinterpret_cast<const char*>(bytes.data() + header_start), header_length);
    NpyArray array;
    bool fortran_order = false;
    ParseNpyHeader(header, array, fortran_order, fail);

    // Only plain numbers: bool, signed and unsigned integers, floats, complex.
    const std::string& descr = array.descr;
    const bool known_order = !descr.empty() && std::string_view("<>|=").find(descr[0]) != std::string_view::npos;
    const bool known_kind = descr.size() >= 2 && std::string_view("biufc").find(descr[1]) != std::string_view::npos;
    const std::string_view digits = descr.size() > 2 ? std::string_view(descr).substr(2) : std::string_view();
    const bool numeric_size = !digits.empty() && digits.size() <= 2 &&
                              std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
    std::uint64_t item_size = 0;
    for (char c : digits) item_size = item_size * 10 + static_cast<std::uint64_t>(c - '0');
    if (!known_order || !known_kind || !numeric_size || item_size == 0 || item_size > 16) {
      throw fail(fmt::format("unsupported npy dtype '{}': only numeric types (b, i, u, f, c) are supported",
                             internal::Excerpt(descr, 40)));
    }
    if (fortran_order && array.shape.size() > 1) {
      throw fail(fmt::format("Fortran-order arrays (shape {}) are not supported", internal::DimsText(array.shape)));
    }

    const std::uint64_t data_bytes = bytes.size() - header_start - header_length;
    std::uint64_t expected = item_size;
    bool too_large = false;
    for (std::int64_t extent : array.shape) {
      const auto dim = static_cast<std::uint64_t>(extent);
      if (dim != 0 && expected > std::numeric_limits<std::uint64_t>::max() / dim) too_large = true;
      else expected *= dim;
    }
    if (expected == 0) too_large = false;
    if (too_large || expected != data_bytes) {
      throw fail(fmt::format("{}: shape {} of '{}' needs {} data bytes, the member has {}",
                             !too_large && expected < data_bytes ? "unexpected trailing data" : "truncated data",
                             internal::DimsText(array.shape), descr,
                             too_large ? std::string("more than 2^64") : fmt::format("{}", expected), data_bytes));
    }
    const auto data_start = static_cast<std::ptrdiff_t>(header_start + header_length);
    bytes.erase(bytes.begin(), bytes.begin() + data_start);  // moves the data down; the buffer is reused
    array.data = std::move(bytes);
    return array;
  }

  template <typename FailFn>
  static void ParseNpyHeader(std::string_view text, NpyArray& array, bool& fortran_order, const FailFn& fail) {
    std::size_t position = 0;
    const auto bad = [&](std::string_view what) {
      return fail(fmt::format("malformed .npy header ({} at column {}): {}", what, position,
                              internal::Excerpt(text, 200)));
    };
    const auto skip_spaces = [&] {
      while (position < text.size() && (text[position] == ' ' || text[position] == '\t' || text[position] == '\n' ||
                                        text[position] == '\r')) {
        ++position;
      }
    };
    const auto peek = [&]() -> char {
      skip_spaces();
      return position < text.size() ? text[position] : '\0';
    };
    const auto expect = [&](char c) {
      if (peek() != c) throw bad(fmt::format("expected '{}'", c));
      ++position;
    };
    const auto parse_string = [&]() -> std::string {
      const char quote = peek();
      if (quote != '\'' && quote != '"') throw bad("expected a quoted string");
      const std::size_t close = text.find(quote, position + 1);
      if (close == std::string_view::npos) throw bad("unterminated string");
      std::string value(text.substr(position + 1, close - position - 1));
      position = close + 1;
      return value;
    };
    const auto parse_word = [&]() -> std::string_view {
      peek();
      const std::size_t start = position;
      while (position < text.size() && std::isalpha(static_cast<unsigned char>(text[position]))) ++position;
      return text.substr(start, position - start);
    };
    const auto parse_int = [&]() -> std::int64_t {
      peek();
      std::int64_t value = 0;
      const std::size_t start = position;
      while (position < text.size() && text[position] >= '0' && text[position] <= '9') {
        const int digit = text[position++] - '0';
        if (value > (std::numeric_limits<std::int64_t>::max() - digit) / 10) throw bad("dimension too large");
        value = value * 10 + digit;
      }
      if (position == start) throw bad("expected a non-negative integer");
      if (position < text.size() && text[position] == 'L') ++position;  // Python 2's long literal
      return value;
    };

    bool has_descr = false;
    bool has_fortran_order = false;
    bool has_shape = false;
    expect('{');
    while (peek() != '}') {
      const std::string key = parse_string();
      expect(':');
      if (key == "descr") {
        if (peek() == '[') throw fail("unsupported npy dtype: structured arrays are not supported");
        array.descr = parse_string();
        has_descr = true;
      } else if (key == "fortran_order") {
        const std::string_view word = parse_word();
        if (word != "True" && word != "False") throw bad("fortran_order must be True or False");
        fortran_order = word == "True";
        has_fortran_order = true;
      } else if (key == "shape") {
        expect('(');
        array.shape.clear();
        while (peek() != ')') {
          // NumPy itself allows 64 dims (32 before 2.0).
          if (array.shape.size() == kMaxNpyRank) throw bad(fmt::format("more than {} dims", kMaxNpyRank));
          array.shape.push_back(parse_int());
          if (peek() == ',') ++position;
          else if (peek() != ')') throw bad("expected ',' or ')'");
        }
        ++position;
        has_shape = true;
      } else {
        throw bad(fmt::format("unexpected key '{}'", internal::Excerpt(key, 40)));
      }
      if (peek() == ',') ++position;
      else if (peek() != '}') throw bad("expected ',' or '}'");
    }
    if (!has_descr || !has_fortran_order || !has_shape) {
      throw bad("the header needs the keys 'descr', 'fortran_order' and 'shape'");
    }
  }

  std::string path_;
  std::vector<std::uint8_t> bytes_;
};

}  // namespace

std::map<std::string, NpyArray> ReadNpz(const std::string& path) {
  internal::BinaryFile file(path, "ReadNpz");
  return NpzReader(path, file.ReadRest()).Read();
}

}  // namespace weir
