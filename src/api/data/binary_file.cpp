#include "api/data/binary_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace weir::internal {

BinaryFile::BinaryFile(std::string path, std::string_view who) : path_(std::move(path)), who_(who) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever; the S_ISREG check below
  // rejects it, and on a regular file the flag changes nothing.
  descriptor_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
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
  const std::uint64_t rest = position_ < size_ ? size_ - position_ : 0;
  if (rest > PhysicalMemoryBytes()) {
    throw std::runtime_error(fmt::format("[{}] {}: the file has {} bytes, more than this machine's memory ({} bytes)",
                                         who_, path_, size_, PhysicalMemoryBytes()));
  }
  std::vector<std::uint8_t> bytes(rest);
  Read(bytes.data(), bytes.size());
  return bytes;
}

std::uint64_t PhysicalMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  // Unknown: no cap beyond what the file's own size allows.
  if (pages <= 0 || page_size <= 0) return std::numeric_limits<std::uint64_t>::max();
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
}

std::string Excerpt(std::string_view text, std::size_t max_bytes) {
  std::string shown;
  for (std::size_t i = 0; i < text.size() && i < max_bytes; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\') shown += static_cast<char>(c);
    else shown += fmt::format("\\x{:02x}", c);
  }
  if (text.size() > max_bytes) shown += fmt::format("... ({} bytes)", text.size());
  return shown;
}

std::string DimsText(const std::vector<std::int64_t>& dims) {
  constexpr std::size_t kShown = 16;
  if (dims.size() <= kShown) return fmt::format("({})", fmt::join(dims, ","));
  return fmt::format("({},... {} dims)", fmt::join(dims.begin(), dims.begin() + kShown, ","), dims.size());
}

}  // namespace weir::internal
