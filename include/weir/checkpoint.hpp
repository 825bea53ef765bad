#pragma once
/// \file Checkpoints in OneFlow's on-disk layout, so models move between OneFlow and Weir:
///
///     <path>/<variable name>/out    raw C-order little-endian bytes of the tensor
///     <path>/<variable name>/meta   text protobuf: `shape { dim: 2 dim: 5 }` and `data_type: kFloat`
///     <path>/snapshot_done          empty; written last, marks a complete checkpoint
///
/// OneFlow 0.2 wrote no `meta` files; load those with the overload that takes expected specs.
#include <map>
#include <string>
#include <vector>

#include "weir/dtype.hpp"
#include "weir/shape.hpp"
#include "weir/tensor.hpp"

namespace weir {

/// How SaveCheckpoint treats an existing folder at the target path.
struct SaveOptions {
  /// Replace a non-empty folder at `path`. Without it such a folder is an error; an empty folder
  /// is always replaced. The old folder goes away only after the new checkpoint is complete.
  bool overwrite = false;
};

/// The shape and dtype a loader expects of a variable.
struct TensorSpec {
  Shape shape;
  DType dtype = DType::kF32;
};

/// Names a loaded checkpoint lacks or has on top of the ones a job wants.
struct LoadReport {
  /// Wanted but not in the checkpoint, in the order they were wanted (left initialised by callers).
  std::vector<std::string> missing;
  /// In the checkpoint but not wanted, sorted.
  std::vector<std::string> unexpected;
};

/// Writes `variables` (CPU tensors) as a OneFlow checkpoint at `path`, atomically: everything goes
/// into a temporary sibling folder, is fsync'ed, and is renamed onto `path` at the end, so `path`
/// holds either the complete new checkpoint or what it held before. Missing parent folders are
/// created. Throws std::invalid_argument for a bad variable name (empty, containing '/' or NUL,
/// "." or "..") or a tensor that is undefined or not on the CPU, and std::runtime_error when `path`
/// is a non-empty folder and `options.overwrite` is false, or when the OS fails (with strerror).
void SaveCheckpoint(const std::string& path, const std::map<std::string, Tensor>& variables,
                    SaveOptions options = {});

/// Reads every variable folder of the checkpoint at `path`; shapes and dtypes come from the `meta`
/// files. Throws std::runtime_error naming the variable, the file and the problem when
/// `snapshot_done` is missing, a `meta` is missing, garbled or names an unsupported data_type, or
/// an `out` file does not hold exactly shape x dtype bytes.
std::map<std::string, Tensor> LoadCheckpoint(const std::string& path);

/// As above, but `expected` supplies shape and dtype for variables without a `meta` file (OneFlow
/// 0.2 checkpoints) and is checked against `meta` where there is one: a mismatch is an error
/// naming both. Variables in `expected` but not on disk are not an error (see CompareCheckpoint);
/// a variable with neither `meta` nor an entry in `expected` is.
std::map<std::string, Tensor> LoadCheckpoint(const std::string& path,
                                             const std::map<std::string, TensorSpec>& expected);

/// Partitions names: which of `wanted` `loaded` lacks, and which names of `loaded` are not wanted.
LoadReport CompareCheckpoint(const std::map<std::string, Tensor>& loaded, const std::vector<std::string>& wanted);

}  // namespace weir
