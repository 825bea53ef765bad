#include "weir/checkpoint.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>  // renameat2
#include <filesystem>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "api/checkpoint_internal.hpp"
#include "api/data/binary_file.hpp"
#include "common/stale_files.hpp"

namespace weir {

namespace fs = std::filesystem;

// `out` files are little-endian by definition; tensors are written and read as they lie in memory.
static_assert(std::endian::native == std::endian::little, "checkpoint IO assumes a little-endian host");

namespace {

constexpr const char* kOutFile = "out";
constexpr const char* kMetaFile = "meta";
constexpr const char* kSnapshotDone = "snapshot_done";
// A real meta is ~100 bytes; the cap keeps a hostile one from costing memory.
constexpr std::size_t kMaxMetaBytes = std::size_t{1} << 20;
constexpr std::size_t kMaxRank = 64;
constexpr int kMaxMetaDepth = 16;
// write(2) moves at most ~2 GiB per call on Linux.
constexpr std::size_t kMaxIoChunk = std::size_t{1} << 30;

// ---------------------------------------------------------------------------------------------
// OS helpers: every failure becomes a std::runtime_error with strerror's text.

std::string ErrorText(int error) { return std::generic_category().message(error); }

[[noreturn]] void ThrowOsMessage(std::string_view message, int error) {
  throw std::runtime_error(fmt::format("[checkpoint] {}: {}", message, ErrorText(error)));
}

// "[checkpoint] <context><what> '<file>': <strerror>".
[[noreturn]] void ThrowOs(const std::string& context, std::string_view what, const fs::path& file, int error) {
  ThrowOsMessage(fmt::format("{}{} '{}'", context, what, file.string()), error);
}

// Prefix for messages about one variable; work on the checkpoint as a whole passes "" instead.
std::string VariableContext(const std::string& name) { return fmt::format("variable '{}': ", name); }

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  FileDescriptor& operator=(FileDescriptor&&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int Get() const { return fd_; }
  // Returns close(2)'s errno, or 0; a late write error can surface only here.
  int Close() {
    const int result = ::close(fd_);
    fd_ = -1;
    return result == 0 ? 0 : errno;
  }

 private:
  int fd_;
};

void SyncDirectory(const fs::path& dir, const std::string& context) {
  FileDescriptor fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.Get() < 0) ThrowOs(context, "cannot open folder", dir, errno);
  if (::fsync(fd.Get()) != 0) ThrowOs(context, "cannot fsync folder", dir, errno);
  if (const int error = fd.Close(); error != 0) ThrowOs(context, "cannot close folder", dir, error);
}

void MakeDirectory(const fs::path& dir, const std::string& context) {
  if (::mkdir(dir.c_str(), 0755) != 0) ThrowOs(context, "cannot create folder", dir, errno);
}

void WriteFileSynced(const fs::path& file, const void* data, std::size_t size, const std::string& context) {
  FileDescriptor fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.Get() < 0) ThrowOs(context, "cannot create", file, errno);
  const auto* bytes = static_cast<const std::byte*>(data);
  std::size_t written = 0;
  while (written < size) {
    const ssize_t result = ::write(fd.Get(), bytes + written, std::min(size - written, kMaxIoChunk));
    if (result < 0) {
      if (errno == EINTR) continue;
      ThrowOs(context, "cannot write", file, errno);
    }
    written += static_cast<std::size_t>(result);
  }
  if (::fsync(fd.Get()) != 0) ThrowOs(context, "cannot fsync", file, errno);
  if (const int error = fd.Close(); error != 0) ThrowOs(context, "cannot close", file, error);
}

// Opens a file to read; nullopt when it does not exist. O_NONBLOCK keeps a FIFO planted in a
// checkpoint from blocking the open; the S_ISREG check then rejects it.
std::optional<FileDescriptor> OpenRegularFile(const fs::path& file, const std::string& context, struct stat& info) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    ThrowOs(context, "cannot open", file, errno);
  }
  std::optional<FileDescriptor> result(std::in_place, fd);
  if (::fstat(fd, &info) != 0) ThrowOs(context, "cannot stat", file, errno);
  if (!S_ISREG(info.st_mode)) {
    throw std::runtime_error(fmt::format("[checkpoint] {}'{}' is not a regular file", context, file.string()));
  }
  return result;
}

// Reads up to `size` bytes; returns how many there were (fewer only at end of file).
std::size_t ReadUpTo(int fd, void* data, std::size_t size, const fs::path& file, const std::string& context) {
  auto* bytes = static_cast<std::byte*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t result = ::read(fd, bytes + done, std::min(size - done, kMaxIoChunk));
    if (result < 0) {
      if (errno == EINTR) continue;
      ThrowOs(context, "cannot read", file, errno);
    }
    if (result == 0) break;
    done += static_cast<std::size_t>(result);
  }
  return done;
}

// A fresh sibling of `target` named "<target><tag><machine>-<pid>-<random>" (common/stale_files.hpp),
// so it lies on the same filesystem (rename needs that) and never collides with another writer's.
fs::path SiblingName(const fs::path& target, std::string_view tag) {
  return target.parent_path() / fmt::format("{}{}{}", target.filename().string(), tag, internal::OwnedSuffix());
}

fs::path MakeTempSibling(const fs::path& target) {
  for (int attempt = 0;; ++attempt) {
    fs::path temp = SiblingName(target, ".tmp-");
    if (::mkdir(temp.c_str(), 0755) == 0) return temp;
    if (errno != EEXIST || attempt == 8) ThrowOs("", "cannot create temporary folder", temp, errno);
  }
}

// "ckpt/" -> "<cwd>/ckpt": the sibling temp folder needs the folder's own name.
fs::path TargetPath(const std::string& path) {
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  if (trimmed.empty()) throw std::invalid_argument("[checkpoint] the checkpoint path is empty");
  fs::path target = fs::absolute(trimmed);
  const std::string leaf = target.filename().string();
  if (leaf.empty() || leaf == "." || leaf == "..") {
    throw std::invalid_argument(fmt::format("[checkpoint] path '{}' does not name a folder to write", path));
  }
  return target;
}

// Nullopt when `dir` does not exist.
std::optional<bool> IsEmptyFolder(const fs::path& dir, const std::string& shown) {
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0) {
    if (errno == ENOENT) return std::nullopt;
    ThrowOs("", "cannot stat", dir, errno);
  }
  if (!S_ISDIR(info.st_mode)) {
    throw std::runtime_error(fmt::format("[checkpoint] '{}' exists and is not a folder", shown));
  }
  std::error_code error;
  const bool empty = fs::is_empty(dir, error);
  if (error) ThrowOs("", "cannot list folder", dir, error.value());
  return empty;
}

[[noreturn]] void ThrowNonEmpty(const std::string& shown) {
  throw std::runtime_error(fmt::format(
      "[checkpoint] '{}' is a non-empty folder; remove it or save with SaveOptions{{.overwrite = true}}", shown));
}

// ---------------------------------------------------------------------------------------------
// Names: OneFlow's data_type.proto enum, and the variable names a folder can hold.

std::string_view OneFlowDataTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "kFloat";
    case DType::kF64: return "kDouble";
    case DType::kI32: return "kInt32";
    case DType::kI64: return "kInt64";
    case DType::kU8: return "kUInt8";
    case DType::kI8: return "kInt8";
    case DType::kBool: return "kBool";
    case DType::kF16: return "kFloat16";
    case DType::kBF16: return "kBFloat16";
    case DType::kTensorBuffer: return "kTensorBuffer";
  }
  return "kInvalidDataType";
}

// Every name and number of OneFlow's DataType enum; `dtype` is empty where Weir has no such type.
struct OneFlowDataType {
  std::string_view name;
  int number;
  std::optional<DType> dtype;
};
constexpr OneFlowDataType kOneFlowDataTypes[] = {
    {"kChar", 1, DType::kI8},            {"kFloat", 2, DType::kF32},      {"kDouble", 3, DType::kF64},
    {"kInt8", 4, DType::kI8},          {"kInt32", 5, DType::kI32},      {"kInt64", 6, DType::kI64},
    {"kUInt8", 7, DType::kU8},           {"kOFRecord", 8, std::nullopt},  {"kFloat16", 9, DType::kF16},
    {"kTensorBuffer", 10, std::nullopt}, {"kBFloat16", 11, DType::kBF16}, {"kBool", 12, DType::kBool},
};

void CheckVariableName(const std::string& name) {
  if (name.empty()) throw std::invalid_argument("[checkpoint] a variable name is empty");
  if (name == "." || name == ".." || name.find_first_of(std::string_view("/\0", 2)) != std::string::npos) {
    throw std::invalid_argument(fmt::format(
        "[checkpoint] variable name '{}' cannot be a folder name (no '/', NUL, '.' or '..')", name));
  }
  // The marker file sits beside the variable folders.
  if (name == kSnapshotDone) {
    throw std::invalid_argument(fmt::format("[checkpoint] variable name '{}' is reserved for the marker file", name));
  }
}

// shape x dtype in bytes; nullopt when a product of the leading dims overflows int64, even if a
// later zero dim would empty the tensor: Shape::NumElements multiplies in that order in int64.
std::optional<std::uint64_t> CheckedByteSize(const Shape& shape, DType dtype) {
  auto bytes = static_cast<std::int64_t>(SizeOf(dtype));
  for (std::int64_t dim : shape.Dims()) {
    if (__builtin_mul_overflow(bytes, dim, &bytes)) return std::nullopt;
  }
  return static_cast<std::uint64_t>(bytes);
}

std::string MetaText(const Shape& shape, DType dtype) {
  // Byte-for-byte what OneFlow's text_format.MessageToString(VariableMetaInfo) writes.
  std::string text = "shape {\n";
  for (std::int64_t dim : shape.Dims()) text += fmt::format("  dim: {}\n", dim);
  text += fmt::format("}}\ndata_type: {}\n", OneFlowDataTypeName(dtype));
  return text;
}

// ---------------------------------------------------------------------------------------------
// The meta parser: the subset of protobuf text format a VariableMetaInfo uses, tolerant of
// layout (one line or many, ':' before '{', '<>' braces, '#' comments, `dim: [2, 5]`), and
// skipping fields it does not know (newer OneFlow adds `stride`).

class MetaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// A well-formed meta naming a data_type Weir cannot hold: not "garbled", just unsupported.
class DataTypeError : public MetaError {
 public:
  using MetaError::MetaError;
};

struct Token {
  enum class Kind : std::uint8_t { kEnd, kIdentifier, kNumber, kString, kSymbol };
  Kind kind = Kind::kEnd;
  std::string_view text;
  int line = 1;
};

std::vector<Token> Tokenize(std::string_view text) {
  std::vector<Token> tokens;
  int line = 1;
  std::size_t i = 0;
  auto is_alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++i;
    } else if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (is_alpha(c)) {
      const std::size_t start = i;
      while (i < text.size() && (is_alpha(text[i]) || is_digit(text[i]))) ++i;
      tokens.push_back({Token::Kind::kIdentifier, text.substr(start, i - start), line});
    } else if (is_digit(c) || ((c == '-' || c == '+' || c == '.') && i + 1 < text.size() &&
                               (is_digit(text[i + 1]) || text[i + 1] == '.'))) {
      const std::size_t start = i++;
      while (i < text.size()) {
        const char d = text[i];
        const bool exponent_sign = (d == '-' || d == '+') && (text[i - 1] == 'e' || text[i - 1] == 'E');
        if (!(is_alpha(d) || is_digit(d) || d == '.' || exponent_sign)) break;
        ++i;
      }
      tokens.push_back({Token::Kind::kNumber, text.substr(start, i - start), line});
    } else if (c == '"' || c == '\'') {
      const std::size_t start = i++;
      while (i < text.size() && text[i] != c && text[i] != '\n') i += (text[i] == '\\' && i + 1 < text.size()) ? 2 : 1;
      if (i >= text.size() || text[i] != c) throw MetaError(fmt::format("unterminated string at line {}", line));
      ++i;
      tokens.push_back({Token::Kind::kString, text.substr(start, i - start), line});
    } else if (std::string_view("{}<>:;,[]").find(c) != std::string_view::npos) {
      tokens.push_back({Token::Kind::kSymbol, text.substr(i, 1), line});
      ++i;
    } else {
      throw MetaError(fmt::format("unexpected character 0x{:02x} at line {}", static_cast<unsigned char>(c), line));
    }
  }
  tokens.push_back({Token::Kind::kEnd, {}, line});
  return tokens;
}

class MetaParser {
 public:
  explicit MetaParser(std::string_view text) : tokens_(Tokenize(text)) {}

  TensorSpec Parse() {
    std::optional<std::vector<std::int64_t>> dims;
    std::optional<DType> dtype;
    ParseFields(/*closer=*/'\0', 0, [&](const Token& field) {
      if (field.text == "shape") {
        if (dims) throw Error(field, "a second 'shape'");
        dims.emplace();
        ParseShape(field, *dims);
      } else if (field.text == "data_type") {
        if (dtype) throw Error(field, "a second 'data_type'");
        dtype = ParseDataType(field);
      } else {
        SkipValue(field, 1);
      }
    });
    if (!dims) throw MetaError("no 'shape' field");
    if (!dtype) throw MetaError("no 'data_type' field");
    return TensorSpec{Shape(std::move(*dims)), *dtype};
  }

 private:
  const Token& Peek() const { return tokens_[position_]; }
  const Token& Next() {
    const Token& token = tokens_[position_];
    if (token.kind != Token::Kind::kEnd) ++position_;
    return token;
  }
  bool AcceptSymbol(char symbol) {
    if (Peek().kind == Token::Kind::kSymbol && Peek().text[0] == symbol) {
      ++position_;
      return true;
    }
    return false;
  }
  bool PeekSymbol(char symbol) const { return Peek().kind == Token::Kind::kSymbol && Peek().text[0] == symbol; }

  static MetaError Error(const Token& at, std::string_view what) {
    if (at.kind == Token::Kind::kEnd) return MetaError(fmt::format("{} at the end of the file", what));
    return MetaError(fmt::format("{} at line {} (near '{}')", what, at.line, internal::Excerpt(at.text, 40)));
  }

  // Calls on_field(name token) for each field up to `closer` ('\0': end of file), after which the
  // handler has consumed the field's value.
  template <typename OnField> void ParseFields(char closer, int depth, OnField&& on_field) {
    if (depth > kMaxMetaDepth) throw Error(Peek(), "messages nested too deeply");
    while (true) {
      const Token& token = Peek();
      if (closer == '\0' && token.kind == Token::Kind::kEnd) return;
      if (closer != '\0' && AcceptSymbol(closer)) return;
      if (token.kind != Token::Kind::kIdentifier) {
        throw Error(token, closer == '\0' ? "expected a field name" : fmt::format("expected a field name or '{}'", closer));
      }
      on_field(Next());
      if (!AcceptSymbol(',')) AcceptSymbol(';');
    }
  }

  // After a field name: `{` or `<` opens a message (an optional ':' may come first). Returns the
  // closing symbol, or '\0' when a scalar value follows the ':'.
  char OpenValue(const Token& field) {
    const bool colon = AcceptSymbol(':');
    if (AcceptSymbol('{')) return '}';
    if (AcceptSymbol('<')) return '>';
    if (!colon) throw Error(Peek(), fmt::format("expected ':' or '{{' after '{}'", field.text));
    return '\0';
  }

  void ParseShape(const Token& field, std::vector<std::int64_t>& dims) {
    const char closer = OpenValue(field);
    if (closer == '\0') throw Error(field, "'shape' is not a message");
    ParseFields(closer, 1, [&](const Token& inner) {
      if (inner.text != "dim") {
        SkipValue(inner, 2);
        return;
      }
      if (OpenValue(inner) != '\0') throw Error(inner, "'dim' is not a number");
      auto add = [&] {
        if (dims.size() == kMaxRank) throw Error(Peek(), fmt::format("more than {} dims", kMaxRank));
        dims.push_back(ParseDim());
      };
      if (AcceptSymbol('[')) {
        if (AcceptSymbol(']')) return;
        do {
          add();
        } while (AcceptSymbol(','));
        if (!AcceptSymbol(']')) throw Error(Peek(), "expected ']'");
      } else {
        add();
      }
    });
  }

  std::int64_t ParseDim() {
    const Token& token = Next();
    if (token.kind != Token::Kind::kNumber) throw Error(token, "expected a dim");
    std::string_view digits = token.text;
    if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
    std::int64_t value = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (error == std::errc::result_out_of_range) throw Error(token, "dim out of the int64 range");
    if (error != std::errc() || end != digits.data() + digits.size()) throw Error(token, "dim is not a decimal integer");
    if (value < 0) throw Error(token, "negative dim");
    return value;
  }

  DType ParseDataType(const Token& field) {
    if (OpenValue(field) != '\0') throw Error(field, "'data_type' is not an enum value");
    const Token& token = Next();
    const OneFlowDataType* found = nullptr;
    if (token.kind == Token::Kind::kIdentifier) {
      for (const OneFlowDataType& type : kOneFlowDataTypes) {
        if (type.name == token.text) found = &type;
      }
    } else if (token.kind == Token::Kind::kNumber) {
      int number = 0;
      const auto [end, error] = std::from_chars(token.text.data(), token.text.data() + token.text.size(), number);
      if (error == std::errc() && end == token.text.data() + token.text.size()) {
        for (const OneFlowDataType& type : kOneFlowDataTypes) {
          if (type.number == number) found = &type;
        }
      }
    } else {
      throw Error(token, "expected a data_type");
    }
    if (found == nullptr) {
      throw DataTypeError(fmt::format("unknown data_type '{}'", internal::Excerpt(token.text, 40)));
    }
    if (!found->dtype) throw DataTypeError(fmt::format("data_type {} is not supported by Weir", found->name));
    return *found->dtype;
  }

  void SkipValue(const Token& field, int depth) {
    const char closer = OpenValue(field);
    if (closer != '\0') {
      ParseFields(closer, depth, [&](const Token& inner) { SkipValue(inner, depth + 1); });
      return;
    }
    if (AcceptSymbol('[')) {
      if (AcceptSymbol(']')) return;
      do {
        SkipScalar();
      } while (AcceptSymbol(','));
      if (!AcceptSymbol(']')) throw Error(Peek(), "expected ']'");
      return;
    }
    SkipScalar();
  }

  void SkipScalar() {
    const Token& token = Next();
    if (token.kind == Token::Kind::kIdentifier || token.kind == Token::Kind::kNumber ||
        token.kind == Token::Kind::kString) {
      return;
    }
    throw Error(token, "expected a value");
  }

  std::vector<Token> tokens_;
  std::size_t position_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Loading one variable.

std::optional<TensorSpec> ReadMeta(const fs::path& file, const std::string& context) {
  struct stat info {};
  std::optional<FileDescriptor> fd = OpenRegularFile(file, context, info);
  if (!fd) return std::nullopt;
  if (static_cast<std::uint64_t>(info.st_size) > kMaxMetaBytes) {
    throw std::runtime_error(fmt::format("[checkpoint] {}meta '{}' has {} bytes, more than a meta can ({})", context,
                                         file.string(), info.st_size, kMaxMetaBytes));
  }
  // One byte more than fstat reported shows a file that grew meanwhile.
  const auto size = static_cast<std::size_t>(info.st_size);
  std::string text(size + 1, '\0');
  text.resize(ReadUpTo(fd->Get(), text.data(), text.size(), file, context));
  if (text.size() > size) {
    throw std::runtime_error(fmt::format("[checkpoint] {}meta '{}' changed size while being read", context, file.string()));
  }
  try {
    return MetaParser(text).Parse();
  } catch (const DataTypeError& error) {
    throw std::runtime_error(fmt::format("[checkpoint] {}meta '{}': {}", context, file.string(), error.what()));
  } catch (const MetaError& error) {
    throw std::runtime_error(fmt::format("[checkpoint] {}meta '{}' is garbled: {}", context, file.string(), error.what()));
  } catch (const std::invalid_argument& error) {
    throw std::runtime_error(fmt::format("[checkpoint] {}meta '{}' is garbled: {}", context, file.string(), error.what()));
  }
}

Tensor LoadVariable(const std::string& name, const fs::path& dir, const TensorSpec* expected) {
  const std::string context = VariableContext(name);
  const fs::path meta_path = dir / kMetaFile;
  const fs::path out_path = dir / kOutFile;

  std::optional<TensorSpec> spec = ReadMeta(meta_path, context);
  std::string spec_source = "meta";
  if (spec && expected != nullptr && (spec->shape != expected->shape || spec->dtype != expected->dtype)) {
    throw std::runtime_error(fmt::format("[checkpoint] {}meta '{}' says {} {}, expected {} {}", context,
                                         meta_path.string(), spec->shape, spec->dtype, expected->shape,
                                         expected->dtype));
  }
  if (!spec) {
    if (expected == nullptr) {
      throw std::runtime_error(fmt::format(
          "[checkpoint] {}no meta file '{}'; load OneFlow 0.2 checkpoints (which have none) with the expected "
          "shapes and dtypes: LoadCheckpoint(path, expected)",
          context, meta_path.string()));
    }
    spec = *expected;
    spec_source = "the expected spec";
  }

  // Checked before anything is allocated: a garbled shape must not turn into a huge allocation.
  const std::optional<std::uint64_t> bytes = CheckedByteSize(spec->shape, spec->dtype);
  if (!bytes) {
    const std::string source = spec_source == "meta" ? fmt::format("meta '{}'", meta_path.string())
                                                     : fmt::format("the expected spec for out '{}'", out_path.string());
    throw std::runtime_error(fmt::format("[checkpoint] {}{} says {} {}, more bytes than 64 bits can count", context,
                                         source, spec->shape, spec->dtype));
  }
  struct stat info {};
  std::optional<FileDescriptor> fd = OpenRegularFile(out_path, context, info);
  if (!fd) throw std::runtime_error(fmt::format("[checkpoint] {}no out file '{}'", context, out_path.string()));
  const auto file_size = static_cast<std::uint64_t>(info.st_size);
  if (file_size != *bytes) {
    throw std::runtime_error(fmt::format("[checkpoint] {}out '{}' has {} bytes, {} says {} {} = {} bytes ({})", context,
                                         out_path.string(), file_size, spec_source, spec->shape, spec->dtype, *bytes,
                                         file_size < *bytes ? "truncated" : "too long"));
  }

  // The size matches, but a sparse file's size costs no disk: no file justifies more than RAM.
  if (*bytes > internal::PhysicalMemoryBytes()) {
    throw std::runtime_error(fmt::format("[checkpoint] {}out '{}' has {} bytes, more than this machine's memory "
                                         "({} bytes)",
                                         context, out_path.string(), file_size, internal::PhysicalMemoryBytes()));
  }
  Tensor tensor(spec->shape, spec->dtype);
  const std::size_t read = ReadUpTo(fd->Get(), tensor.RawData(), *bytes, out_path, context);
  std::byte extra{};
  if (read != *bytes || ReadUpTo(fd->Get(), &extra, 1, out_path, context) != 0) {
    throw std::runtime_error(
        fmt::format("[checkpoint] {}out '{}' changed size while being read", context, out_path.string()));
  }
  if (spec->dtype == DType::kBool) {
    // Any byte but 0 or 1 read through a bool is undefined behaviour.
    const auto* data = static_cast<const std::uint8_t*>(tensor.RawData());
    for (std::uint64_t i = 0; i < *bytes; ++i) {
      if (data[i] > 1) {
        throw std::runtime_error(fmt::format("[checkpoint] {}out '{}' holds byte {} at offset {}, not a bool (0 or 1)",
                                             context, out_path.string(), data[i], i));
      }
    }
  }
  return tensor;
}

std::map<std::string, Tensor> LoadFolder(const std::string& path, const std::map<std::string, TensorSpec>* expected) {
  const fs::path root(path);
  struct stat info {};
  if (::stat(root.c_str(), &info) != 0) ThrowOs("", "cannot open checkpoint", root, errno);
  if (!S_ISDIR(info.st_mode)) throw std::runtime_error(fmt::format("[checkpoint] '{}' is not a folder", path));
  if (::stat((root / kSnapshotDone).c_str(), &info) != 0) {
    if (errno != ENOENT) ThrowOs("", "cannot stat", root / kSnapshotDone, errno);
    throw std::runtime_error(fmt::format(
        "[checkpoint] '{}' is incomplete: it has no snapshot_done marker (the save did not finish)", path));
  }

  // Sorted, so that of several bad variables the same one is reported every time.
  std::vector<std::string> names;
  std::error_code error;
  for (fs::directory_iterator it(root, error), end; !error && it != end; it.increment(error)) {
    std::error_code type_error;
    if (it->is_directory(type_error)) names.push_back(it->path().filename().string());
  }
  if (error) ThrowOs("", "cannot list checkpoint", root, error.value());
  std::sort(names.begin(), names.end());

  std::map<std::string, Tensor> variables;
  for (const std::string& name : names) {
    const TensorSpec* spec = nullptr;
    if (expected != nullptr) {
      if (auto found = expected->find(name); found != expected->end()) spec = &found->second;
    }
    variables.emplace(name, LoadVariable(name, root / name, spec));
  }
  return variables;
}

void RemoveQuietly(const fs::path& dir) {
  std::error_code ignored;
  fs::remove_all(dir, ignored);
}

// A save killed before its rename leaves "<folder>.tmp-<suffix>" behind: the next save into the same
// parent removes those whose writer, a process of this machine, is gone. (".old-" folders are left:
// one killed mid-swap holds the previous checkpoint.)
void RemoveStaleTemps(const fs::path& parent) {
  std::error_code error;
  for (fs::directory_iterator it(parent, error); !error && it != fs::directory_iterator(); it.increment(error)) {
    const std::string name = it->path().filename().string();
    const std::size_t at = name.rfind(".tmp-");
    if (at != std::string::npos && internal::GoneOwner(std::string_view(name).substr(at + 5))) RemoveQuietly(it->path());
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------

namespace internal {

void ReplaceFolder(const fs::path& from, const fs::path& onto, bool allow_exchange) {
  const fs::path parent = onto.parent_path();
  if (allow_exchange) {
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, onto.c_str(), RENAME_EXCHANGE) == 0) {
      // `from` now holds the old checkpoint; the new one is in place whatever happens next.
      SyncDirectory(parent, "");
      RemoveQuietly(from);
      return;
    }
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) {
      ThrowOsMessage(fmt::format("cannot swap '{}' with '{}'", from.string(), onto.string()), errno);
    }
  }
  // No atomic swap on this filesystem: between the two renames `onto` is briefly absent, but the
  // old checkpoint stays whole under `aside` and is put back if the second rename fails.
  const fs::path aside = SiblingName(onto, ".old-");
  if (::rename(onto.c_str(), aside.c_str()) != 0) {
    ThrowOsMessage(fmt::format("cannot move the old checkpoint '{}' aside to '{}'", onto.string(), aside.string()), errno);
  }
  if (::rename(from.c_str(), onto.c_str()) != 0) {
    const int error = errno;
    ::rename(aside.c_str(), onto.c_str());
    ThrowOsMessage(fmt::format("cannot rename '{}' to '{}'", from.string(), onto.string()), error);
  }
  SyncDirectory(parent, "");
  RemoveQuietly(aside);
}

}  // namespace internal

void SaveCheckpoint(const std::string& path, const std::map<std::string, Tensor>& variables, SaveOptions options) {
  // Everything that can be checked without touching the disk is checked first.
  for (const auto& [name, tensor] : variables) {
    CheckVariableName(name);
    if (!tensor.Defined()) {
      throw std::invalid_argument(fmt::format("[checkpoint] {}the tensor is undefined", VariableContext(name)));
    }
    if (tensor.GetDevice().kind != Device::Kind::kCpu) {
      throw std::invalid_argument(fmt::format("[checkpoint] {}the tensor is on {}; only CPU tensors can be saved",
                                              VariableContext(name), tensor.GetDevice().ToString()));
    }
  }
  const fs::path target = TargetPath(path);
  const fs::path parent = target.parent_path();
  if (std::optional<bool> empty = IsEmptyFolder(target, path); empty && !*empty && !options.overwrite) {
    ThrowNonEmpty(path);
  }
  std::error_code error;
  fs::create_directories(parent, error);
  if (error) ThrowOs("", "cannot create folder", parent, error.value());

  RemoveStaleTemps(parent);
  const fs::path temp = MakeTempSibling(target);
  try {
    for (const auto& [name, tensor] : variables) {
      const std::string context = VariableContext(name);
      const fs::path dir = temp / name;
      MakeDirectory(dir, context);
      WriteFileSynced(dir / kOutFile, tensor.RawData(), tensor.NumBytes(), context);
      const std::string meta = MetaText(tensor.GetShape(), tensor.GetDType());
      WriteFileSynced(dir / kMetaFile, meta.data(), meta.size(), context);
      SyncDirectory(dir, context);
    }
    WriteFileSynced(temp / kSnapshotDone, nullptr, 0, "");
    SyncDirectory(temp, "");

    // rename(2) replaces a missing or empty folder in one step.
    if (::rename(temp.c_str(), target.c_str()) == 0) {
      SyncDirectory(parent, "");
      return;
    }
    const int rename_error = errno;
    if (rename_error != ENOTEMPTY && rename_error != EEXIST) {
      ThrowOsMessage(fmt::format("cannot rename '{}' to '{}'", temp.string(), target.string()), rename_error);
    }
    // The folder filled up while we wrote.
    if (!options.overwrite) ThrowNonEmpty(path);
    internal::ReplaceFolder(temp, target);
  } catch (...) {
    RemoveQuietly(temp);
    throw;
  }
}

std::map<std::string, Tensor> LoadCheckpoint(const std::string& path) { return LoadFolder(path, nullptr); }

std::map<std::string, Tensor> LoadCheckpoint(const std::string& path, const std::map<std::string, TensorSpec>& expected) {
  return LoadFolder(path, &expected);
}

LoadReport CompareCheckpoint(const std::map<std::string, Tensor>& loaded, const std::vector<std::string>& wanted) {
  LoadReport report;
  std::set<std::string> wanted_set;
  for (const std::string& name : wanted) {
    if (wanted_set.insert(name).second && !loaded.contains(name)) report.missing.push_back(name);
  }
  for (const auto& [name, tensor] : loaded) {
    if (!wanted_set.contains(name)) report.unexpected.push_back(name);
  }
  return report;
}

}  // namespace weir
