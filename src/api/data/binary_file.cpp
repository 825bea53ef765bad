#include "api/data/binary_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace weir::internal {

BinaryFile::BinaryFile(std::string path, std::string_view who) : path_(std::move(path)), who_(who) {
  descriptor_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (descriptor_ < 0) {
    throw std::runtime_error(fmt::format("[{}] {}: cannot open: {}", who_, path_, std::strerror(errno)));
  }
  struct stat info {};
  std::string problem;
  if (::fstat(descriptor_, &info) != 0) problem = fmt::format("cannot stat: {}", std::strerror(errno));
  else if (S_ISDIR(info.st_mode)) problem = "is a folder, not a file";
  else if (!S_ISREG(info.st_mode)) problem = "is not a regular file";
  if (!problem.empty()) {
    ::close(descriptor_);
    throw std::runtime_error(fmt::format("[{}] {}: {}", who_, path_, problem));
  }
  size_ = static_cast<std::uint64_t>(info.st_size);
}

BinaryFile::~BinaryFile() {
  if (descriptor_ >= 0) ::close(descriptor_);
}

void BinaryFile::Read(void* destination, std::size_t bytes) {
  auto* out = static_cast<std::byte*>(destination);
  std::size_t done = 0;
  while (done < bytes) {
    // read() moves at most about 2 GiB per call on Linux, so large payloads take several.
    const ssize_t got = ::read(descriptor_, out + done, bytes - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      throw std::runtime_error(fmt::format("[{}] {}: read failed at byte {}: {}", who_, path_, position_ + done,
                                           std::strerror(errno)));
    }
    if (got == 0) {
      throw std::runtime_error(fmt::format("[{}] {}: the file ended at byte {} while {} more bytes were expected",
                                           who_, path_, position_ + done, bytes - done));
    }
    done += static_cast<std::size_t>(got);
  }
  position_ += bytes;
}

std::vector<std::uint8_t> BinaryFile::ReadRest() {
  std::vector<std::uint8_t> bytes(position_ < size_ ? size_ - position_ : 0);
  Read(bytes.data(), bytes.size());
  return bytes;
}

}  // namespace weir::internal
