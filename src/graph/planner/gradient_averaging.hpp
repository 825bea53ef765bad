#pragma once
// The gradient averaging pass of the mirrored view: per-device values averaged over their devices
// (and, across processes, over theirs) by all-reduce actors; across processes, gradients averaged in
// buckets (fusion), as PyTorch DDP does.
#include <cstddef>
#include <vector>

#include "graph/planner/boxing.hpp"
#include "graph/planner/lowering.hpp"

namespace weir::internal {

class GradientAveraging {
 public:
  GradientAveraging(Lowering& lowering, Boxing& boxing) : lowering_(lowering), boxing_(boxing) {}

  /// Averages the per-device values among `values`: one all-reduce actor on the collective stream for
  /// all of them (a bucket crosses the processes as one collective), whose one result per value every
  /// device reads (the devices of a process share memory). The values have their pieces on the same
  /// devices.
  void AllReduce(std::vector<int> values);
  /// Adds a gradient to the open bucket, in the order gradients are made; the bucket is averaged once
  /// it holds the fusion threshold's bytes (the first one 1 MiB, so that the first collective starts
  /// early in the backward pass), or when a value of another dtype or other devices joins.
  void AddToBucket(int value);
  /// Averages the open bucket now (an op reads one of its gradients, or the job's nodes are done).
  void CloseBucket();
  /// Whether one of `values` waits in the open bucket.
  bool BucketHolds(const std::vector<int>& values) const;

 private:
  Lowering& lowering_;
  Boxing& boxing_;
  std::vector<int> bucket_;  // gradient values, in the order they were made
  std::size_t bucket_bytes_ = 0;
  bool first_bucket_ = true;
};

}  // namespace weir::internal
