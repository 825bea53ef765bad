#pragma once
// Pieces of src/api/checkpoint.cpp that tests reach directly.
#include <filesystem>

namespace weir::internal {

/// Puts the complete folder `from` in place of the existing non-empty folder `onto` and deletes the
/// old contents; `onto` names either the old or the new folder at every moment a crash could hit.
/// Swaps with renameat2(RENAME_EXCHANGE) where the filesystem supports it, otherwise renames the
/// old folder aside first. `allow_exchange = false` forces the second way, so tests cover it.
void ReplaceFolder(const std::filesystem::path& from, const std::filesystem::path& onto, bool allow_exchange = true);

}  // namespace weir::internal
