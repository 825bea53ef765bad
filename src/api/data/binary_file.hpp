#pragma once
// Reading whole binary files (datasets) with errors that name the file and the caller.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace weir::internal {

/// A regular file open for sequential reading. Every failure throws std::runtime_error
/// "[who] path: what went wrong".
class BinaryFile {
 public:
  BinaryFile(std::string path, std::string_view who);
  ~BinaryFile();
  BinaryFile(const BinaryFile&) = delete;
  BinaryFile& operator=(const BinaryFile&) = delete;

  /// The size when the file was opened.
  std::uint64_t Size() const { return size_; }
  /// Reads exactly `bytes` bytes from the current position; a file that ends first is an error.
  void Read(void* destination, std::size_t bytes);
  /// The rest of the file, in one read; a file larger than the machine's memory is an error.
  std::vector<std::uint8_t> ReadRest();

 private:
  std::string path_;
  std::string who_;
  int descriptor_ = -1;
  std::uint64_t size_ = 0;
  std::uint64_t position_ = 0;
};

/// The machine's physical memory in bytes. A file's size is no proof that its contents fit in memory
/// (a sparse file of terabytes takes no disk), so readers refuse to allocate more than this.
std::uint64_t PhysicalMemoryBytes();

/// At most `max_bytes` of `text` for an error message, with bytes other than printable ASCII shown
/// as \xNN and "... (N bytes)" where it is cut: a hostile file's garbage stays short and legible.
std::string Excerpt(std::string_view text, std::size_t max_bytes = 80);

/// "(7,28,28)"; past 16 dims only the first 16 and the count, so no shape makes a message long.
std::string DimsText(const std::vector<std::int64_t>& dims);

}  // namespace weir::internal
