#pragma once
/// \file Datasets: MNIST from its original IDX files (`make data`) or from OneFlow's mnist.npz.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "weir/tensor.hpp"

namespace weir {

/// One split of MNIST cut into batches, in file order (unshuffled), as OneFlow's load_mnist gives it.
struct MnistSplit {
  /// f32 (num_batches, batch_size, 1, 28, 28): pixel / 255, so values lie in [0, 1].
  Tensor images;
  /// i32 (num_batches, batch_size): the digits.
  Tensor labels;
};

/// Both splits of MNIST: 60,000 training and 10,000 test examples before batching.
struct Mnist {
  MnistSplit train;
  MnistSplit test;
};

/// Loads MNIST in batches of `batch_size`; the last N % batch_size examples of each split are
/// dropped. `data_dir` is a folder holding the four IDX files (train-images-idx3-ubyte,
/// train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte) or, failing them, a
/// mnist.npz; or the path of a .npz file (arrays x_train, y_train, x_test, y_test). Empty means
/// $WEIR_DATA_DIR, else ~/.cache/weir/mnist, where `make data` puts the IDX files.
/// Throws std::invalid_argument for a bad batch size and std::runtime_error, naming the file, when
/// data is missing or malformed.
Mnist LoadMnist(int batch_size, std::string data_dir = "");

/// The contents of one IDX file of unsigned bytes.
struct IdxArray {
  /// Outermost first: (N) for labels, (N, 28, 28) for images.
  std::vector<std::int64_t> dims;
  /// The payload, row-major; as many bytes as the product of `dims`.
  std::vector<std::uint8_t> data;
};

/// Reads an IDX file of unsigned bytes (magic 0x00000801 for labels, 0x00000803 for images; any
/// dims count is accepted). Throws std::runtime_error on a wrong magic number or a file whose size
/// differs from what its dims say.
IdxArray ReadIdx(const std::string& path);

/// One array of a .npy file, its bytes as stored.
struct NpyArray {
  /// NumPy's type string: byte order ('<', '>', '|' or '='), kind and item size, e.g. "|u1", "<i8".
  std::string descr;
  std::vector<std::int64_t> shape;
  /// C (row-major) order; product(shape) * item size bytes.
  std::vector<std::uint8_t> data;
};

/// Reads every .npy member of a .npz archive (numpy.savez or savez_compressed: STORED or DEFLATE
/// entries), keyed by member name without ".npy". Checks each member's CRC-32. Throws
/// std::runtime_error on anything malformed or unsupported (Fortran order, structured dtypes).
std::map<std::string, NpyArray> ReadNpz(const std::string& path);

}  // namespace weir
