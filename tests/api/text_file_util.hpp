#pragma once
// Reading what a test had the session write (traces) and counting what it holds.
#include <cstddef>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

namespace weir::testing {

inline std::string ReadTextFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// How often `needle` occurs in `text` (overlapping occurrences included).
inline std::size_t Occurrences(std::string_view text, std::string_view needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace weir::testing
