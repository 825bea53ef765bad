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
  /// The rest of the file, in one read.
  std::vector<std::uint8_t> ReadRest();

 private:
  std::string path_;
  std::string who_;
  int descriptor_ = -1;
  std::uint64_t size_ = 0;
  std::uint64_t position_ = 0;
};

}  // namespace weir::internal
