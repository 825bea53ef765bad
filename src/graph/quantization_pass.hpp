#pragma once
// Quantization-aware training (OneFlow's enable_qat): the job trains through fake quantization
// (fake_quantization: rounded to an 8-bit grid and back, the gradient straight through) wherever an
// int8 inference backend would quantize, so that the trained weights suit that backend. The
// observers that give each grid its scale and zero point are built here too; flow.quantization's
// observers are the same functions.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "graph/job_graph.hpp"

namespace weir::internal {

/// An 8-bit (or fewer) grid's scheme, as fake_quantization's attributes name it: "google" symmetric
/// (zero point 0) or affine, or "cambricon" (symmetric, the scale a power of two's exponent).
struct QuantizationGridKind {
  int bits = 8;
  bool affine = false;
  bool cambricon = false;
};

/// (scale, zero_point) of x's values, of x's dtype (OneFlow's min_max_observer): (1,) each, or per
/// channel along axis 0 ((x.shape[0],), google only, x of rank >= 2) unless `per_layer`.
/// Symmetric: scale = max|x| / (2^(bits-1) - 1), zero point 0; affine: scale = (max - min) /
/// (2^bits - 1), zero point = -min / scale (not rounded); cambricon: scale = floor(log2(max|x|)) -
/// (bits - 2), zero point 0.
std::pair<Blob, Blob> MinMaxObserver(const Blob& x, const QuantizationGridKind& grid, bool per_layer);

/// (scale, zero_point), (1,) each, by min_max_observer's formulas from moving statistics of x's range
/// (OneFlow's moving_average_min_max_observer) kept in the non-trainable variables `max_name` and
/// `min_name` (zeros at first). In a train job (`training`) each call first updates them: to the
/// call's range while they are zero, else to moving · momentum + range · (1 - momentum); with
/// `stop_update_after_iters`, only while the train step is at most that. Otherwise they are read.
std::pair<Blob, Blob> MovingAverageObserver(const Blob& x, const QuantizationGridKind& grid, double momentum,
                                            const std::string& max_name, const std::string& min_name, bool training,
                                            std::optional<std::int64_t> stop_update_after_iters = std::nullopt);

/// Rewrites `graph` (unbuilt, before autodiff) for `config.quantization_aware_training`, as OneFlow's
/// pass: the ops an int8 backend runs (google: add of equal shapes, matmul, batch_matmul, conv2d,
/// avg_pool2d, max_pool2d; cambricon: conv2d and matmul), reshapes between them (google), and a
/// convolution's bias_add, batch_norm and relu chain read fake-quantized inputs: a variable through
/// min_max_observer, an activation through a moving-average observer, a convolution's bias with
/// the scale input scale × weight scale. Google also quantizes what such an op (or its chain)
/// passes on. Ops created under a scope with quantization off (JobBuilder::PushQuantizationScope)
/// are left as they are. Returns the number of values fake-quantized.
int UseQuantizationAwareTraining(const std::shared_ptr<JobGraph>& graph);

}  // namespace weir::internal
