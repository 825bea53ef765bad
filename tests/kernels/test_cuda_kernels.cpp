// The CUDA kernels against the CPU kernels (tests/conformance.hpp) for the core's ops, whose samples
// are listed here; ops with a test file of their own list theirs there. On a machine with a GPU each
// sample runs on the CPU kernel and on the CUDA kernel on the same random inputs, odd and empty shapes
// included, and the results must agree; without one the samples run on the CPU kernels only. The
// checks of the f16 kernels against the CPU's f32 ones, fused-kernel regressions, and the test that
// every op with a CPU kernel has a CUDA kernel are here too.
#include <doctest/doctest.h>

#include <any>
#include <array>
#include <chrono>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/cuda_backend.hpp"
#include "common/cuda_runtime.hpp"
#include "common/device_stream.hpp"
#include "conformance.hpp"
#include "kernels/attrs/batch_norm_attrs.hpp"
#include "kernels/functors/unary.hpp"
#include "kernels/collectives/collective_attrs.hpp"
#include "kernels/attrs/concat_attrs.hpp"
#include "kernels/attrs/gather_attrs.hpp"
#include "kernels/attrs/conv2d_attrs.hpp"
#include "kernels/attrs/slice_attrs.hpp"
#include "kernels/attrs/dropout_attrs.hpp"
#include "kernels/attrs/fused_attrs.hpp"
#include "kernels/attrs/gradient_attrs.hpp"
#include "kernels/attrs/pool_attrs.hpp"
#include "kernels/attrs/update_attrs.hpp"
#include "graph/op_registry.hpp"
#include "kernels/kernel.hpp"
#include "weir/ops.hpp"
#include "weir/optimizers.hpp"
#include "weir/tensor.hpp"

using namespace weir;
using namespace weir::internal;
using namespace weir::testing;

namespace {

// The CUDA kernels register themselves as the CUDA backend loads; this suite (one program with the GPU
// sessions' and NCCL's tests) loads it before any test, as a program asking for a GPU would.
[[maybe_unused]] const bool backend_loaded = CudaBuilt() && (LoadCudaBackend(), true);

// Shapes every elementwise sample runs on: empty, one element, odd, and more than a block of threads.
const std::vector<Shape> kElementwiseShapes = {Shape{0}, Shape{1}, Shape{7, 13}, Shape{1000, 3}};

// Every update op and variant: its optimizer, its slots, and whether the train step is an input.
struct UpdateCase {
  const char* op;
  Optimizer optimizer;
  int slots;
  bool step;
};

std::vector<UpdateCase> UpdateCases() {
  const LrSchedule lr = PiecewiseConstantScheduler({}, {0.1});
  return {{"sgd_update", Sgd(lr, 0.0), 0, false},          {"momentum_update", Sgd(lr, 0.9), 1, false},
          {"adam_update", Adam(lr), 2, false},             {"adam_update", Adam(lr, 0.9, 0.99, 1e-8, true), 2, true},
          {"adam_update", AdamW(lr, 0.01), 2, false},      {"rmsprop_update", RmsProp(lr), 1, false},
          {"rmsprop_update", RmsProp(lr, 0.9, 1e-6, true), 2, false},
          {"lamb_update", Lamb(lr), 2, true},              {"lamb_update", Lamb(lr, 0.9, 0.99, 1e-6, 0.01), 2, true},
          {"lars_update", Lars(lr), 1, false},             {"lars_update", Lars(lr, 0.8, 1e-6, 0.01), 1, false}};
}

std::vector<Sample> Samples() {
  std::vector<Sample> samples;
  // Every unary kind, its inputs drawn from its functor's range (inside the domain).
  for (std::size_t k = 0; k < std::size(kUnaryOpKindNames); ++k) {
    const auto kind = static_cast<UnaryOpKind>(k);
    const auto [low, high, integers] =
        VisitUnaryKind(kind, []<typename Fn>() { return std::tuple{Fn::kLow, Fn::kHigh, Fn::kTakesIntegers}; });
    for (const Shape& shape : kElementwiseShapes) {
      for (DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
        const bool integer = dtype == DType::kI32 || dtype == DType::kI64;
        if (integer && !integers) continue;
        samples.push_back({"unary", UnaryAttrs{kind}, {{shape, dtype}}, {{shape, dtype}}, false, 0, false, low, high});
        if (!integer) {
          samples.push_back({"unary_grad", UnaryAttrs{kind}, {{shape, dtype}, {shape, dtype}}, {{shape, dtype}}, false, 0,
                             false, low, high});
        }
      }
    }
  }
  for (int k = 0; k <= static_cast<int>(ScalarOpKind::kPow); ++k) {
    const auto kind = static_cast<ScalarOpKind>(k);
    for (DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
      const bool integer = dtype == DType::kI32 || dtype == DType::kI64;
      if (integer && (kind == ScalarOpKind::kDiv || kind == ScalarOpKind::kRDiv)) continue;  // the CPU's
      const double value = kind == ScalarOpKind::kPow ? (integer ? 3.0 : 1.5) : integer ? 7.0 : -0.75;
      for (const Shape& shape : kElementwiseShapes) {
        samples.push_back({"scalar", ScalarAttrs{kind, value}, {{shape, dtype}}, {{shape, dtype}},
                           kind == ScalarOpKind::kPow || kind == ScalarOpKind::kRDiv});
      }
    }
  }
  for (int k = 0; k <= static_cast<int>(ScalarOpKind::kPow); ++k) {
    const auto kind = static_cast<ScalarOpKind>(k);
    for (const double value : {2.0, 0.0, -1.5}) {
      for (DType dtype : {DType::kF32, DType::kF64}) {
        samples.push_back({"scalar_grad", ScalarAttrs{kind, value}, {{Shape{7, 13}, dtype}, {Shape{7, 13}, dtype}},
                           {{Shape{7, 13}, dtype}}, true});
      }
    }
  }
  for (const auto& [x, axis] : {std::pair{Shape{7, 10}, -1}, std::pair{Shape{7, 10}, 0}, std::pair{Shape{3, 5, 4}, 1},
                                std::pair{Shape{6, 1}, 1}, std::pair{Shape{0, 4}, 1}}) {
    const int a = axis < 0 ? axis + x.Rank() : axis;
    std::vector<std::int64_t> kept;
    for (int i = 0; i < x.Rank(); ++i) {
      if (i != a) kept.push_back(x[i]);
    }
    for (DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
      for (DType index : {DType::kI32, DType::kI64}) {
        samples.push_back({"argmax", ArgMaxAttrs{axis, index}, {{x, dtype}}, {{Shape(kept), index}}});
      }
    }
  }
  for (const double rate : {0.0, 0.3, 0.9}) {
    for (const Shape& shape : kElementwiseShapes) {
      for (DType dtype : {DType::kF32, DType::kF64}) {
        const DropoutAttrs attrs{rate, 1234};
        samples.push_back({"dropout", attrs, {{shape, dtype}}, {{shape, dtype}, {shape, DType::kU8}}});
        samples.push_back({"dropout_grad", attrs, {{shape, dtype}, {shape, DType::kU8}}, {{shape, dtype}}});
      }
    }
  }
  for (const char* op : {"maximum_grad", "minimum_grad"}) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      samples.push_back({op, std::any(), {{Shape{7, 13}, dtype}, {Shape{7, 13}, dtype}, {Shape{7, 13}, dtype}},
                         {{Shape{7, 13}, dtype}, {Shape{7, 13}, dtype}}});
    }
  }
  for (const auto& [indices, depth] : {std::pair{Shape{7}, std::int64_t{10}}, std::pair{Shape{3, 4}, std::int64_t{5}},
                                       std::pair{Shape{0}, std::int64_t{3}}}) {
    for (DType index : {DType::kI32, DType::kI64}) {
      for (DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
        std::vector<std::int64_t> out = indices.Dims();
        out.push_back(depth);
        samples.push_back({"one_hot", OneHotAttrs{depth, 2.5, -1.0, dtype}, {{indices, index}}, {{Shape(out), dtype}},
                           false, depth});
      }
    }
  }
  // gather along rows, a middle axis (2-D indices) and from the end, with none, and more than a block of
  // threads; every dtype (moved as words). Indices (and integer params) drawn in [0, the gathered axis).
  struct Indexed {
    Shape tensor;
    Shape indices;
    int axis;
    std::int64_t bound;  // the indexed axis: gather's params' axis, the segment count
  };
  for (const auto& [params, indices, axis, bound] : {Indexed{Shape{5, 3}, Shape{7}, 0, 5}, Indexed{Shape{2, 4, 3}, Shape{2, 3}, 1, 4},
                                                     Indexed{Shape{3, 6}, Shape{4}, -1, 6}, Indexed{Shape{4}, Shape{0}, 0, 4},
                                                     Indexed{Shape{300, 8}, Shape{500}, 0, 300}}) {
    for (DType index : {DType::kI32, DType::kI64}) {
      for (DType dtype : kAllDTypes) {
        const int resolved = axis < 0 ? axis + params.Rank() : axis;
        std::vector<std::int64_t> out(params.Dims().begin(), params.Dims().begin() + resolved);
        out.insert(out.end(), indices.Dims().begin(), indices.Dims().end());
        out.insert(out.end(), params.Dims().begin() + resolved + 1, params.Dims().end());
        samples.push_back({"gather", GatherAttrs{axis}, {{params, dtype}, {indices, index}}, {{Shape(out), dtype}}, false, bound});
      }
    }
  }
  // where: the same shapes, the condition broadcast over columns with x over rows, y a scalar; every
  // condition dtype (drawn 0 or 1) with float, integer and byte values.
  struct Selection {
    Shape condition, x, y, out;
  };
  for (const Selection& w : {Selection{Shape{7, 13}, Shape{7, 13}, Shape{7, 13}, Shape{7, 13}},
                             Selection{Shape{7, 1}, Shape{13}, Shape{}, Shape{7, 13}},
                             Selection{Shape{0, 3}, Shape{0, 3}, Shape{3}, Shape{0, 3}},
                             Selection{Shape{1000, 3}, Shape{1, 3}, Shape{1000, 1}, Shape{1000, 3}}}) {
    for (DType condition : {DType::kI8, DType::kU8, DType::kBool, DType::kI32, DType::kI64}) {
      for (DType dtype : {DType::kF32, DType::kF64, DType::kI64, DType::kU8}) {
        samples.push_back({"where", std::any(), {{w.condition, condition}, {w.x, dtype}, {w.y, dtype}}, {{w.out, dtype}},
                           false, 2});
      }
    }
  }
  // unsorted_segment_sum: ids along rows, a middle axis (2-D ids), none, and many ids into few segments.
  for (const auto& [data, ids, axis, segments] : {Indexed{Shape{7, 3}, Shape{7}, 0, 4}, Indexed{Shape{2, 3, 4}, Shape{3, 4}, 1, 5},
                                                  Indexed{Shape{0, 2}, Shape{0}, 0, 3}, Indexed{Shape{1000, 2}, Shape{1000}, 0, 10}}) {
    for (DType index : {DType::kI32, DType::kI64}) {
      for (DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
        std::vector<std::int64_t> out(data.Dims().begin(), data.Dims().begin() + axis);
        out.push_back(segments);
        out.insert(out.end(), data.Dims().begin() + axis + ids.Rank(), data.Dims().end());
        samples.push_back({"unsorted_segment_sum", UnsortedSegmentSumAttrs{axis, segments}, {{data, dtype}, {ids, index}},
                           {{Shape(out), dtype}}, false, segments});
      }
    }
  }
  // Along rows, columns and a middle axis; a one-element axis; an empty batch. Along the last axis the
  // CUDA kernels give a row a warp up to 1024 elements and a block beyond (kernels/cuda/row_team.cuh):
  // rows of 33, 1024, 1025 and 1500 elements, more rows than a block of warps takes.
  for (const auto& [x, axis] : {std::pair{Shape{7, 10}, -1}, std::pair{Shape{7, 10}, 0}, std::pair{Shape{3, 5, 4}, 1},
                                std::pair{Shape{6, 1}, 1}, std::pair{Shape{0, 4}, 1}, std::pair{Shape{41, 33}, 1},
                                std::pair{Shape{2, 1024}, 1}, std::pair{Shape{2, 1025}, -1}, std::pair{Shape{3, 1500}, 1}}) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      samples.push_back({"softmax", SoftmaxAttrs{axis}, {{x, dtype}}, {{x, dtype}}});
      samples.push_back({"softmax_grad", SoftmaxAttrs{axis}, {{x, dtype}, {x, dtype}}, {{x, dtype}}, true});
    }
  }
  for (const ClipAttrs& clip : {ClipAttrs{-0.5, 0.75}, ClipAttrs{std::nullopt, 0.3}, ClipAttrs{-1.2, std::nullopt},
                                ClipAttrs{-0.5, 0.75, /*open_gradient=*/true}}) {
    for (DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
      for (const Shape& shape : kElementwiseShapes) {
        samples.push_back({"clip_by_value", clip, {{shape, dtype}}, {{shape, dtype}}});
        if (dtype == DType::kF32 || dtype == DType::kF64) {
          samples.push_back({"clip_by_value_grad", clip, {{shape, dtype}, {shape, dtype}}, {{shape, dtype}}});
        }
      }
    }
  }
  for (const Shape& shape : kElementwiseShapes) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      samples.push_back({"sigmoid_cross_entropy", std::any(), {{shape, dtype}, {shape, dtype}}, {{shape, dtype}}});
      samples.push_back({"sigmoid_cross_entropy_grad", std::any(), {{shape, dtype}, {shape, dtype}, {shape, dtype}},
                         {{shape, dtype}, {shape, dtype}}});
    }
  }
  // Broadcast layouts: equal, scalar, a trailing row, a column, a strided mix, an empty output.
  const std::vector<std::array<Shape, 3>> layouts = {
      {Shape{7, 13}, Shape{7, 13}, Shape{7, 13}}, {Shape{1}, Shape{7, 13}, Shape{7, 13}},
      {Shape{7, 13}, Shape{13}, Shape{7, 13}},    {Shape{7, 1}, Shape{7, 13}, Shape{7, 13}},
      {Shape{3, 1, 5}, Shape{1, 4, 5}, Shape{3, 4, 5}}, {Shape{2, 1, 3, 1}, Shape{5, 1, 4}, Shape{2, 5, 3, 4}},
      {Shape{0, 3}, Shape{3}, Shape{0, 3}},       {Shape{}, Shape{1}, Shape{1}}};
  for (const char* op : {"add", "sub", "mul", "div", "mod", "maximum", "minimum"}) {
    for (DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kI64, DType::kI8, DType::kF16, DType::kBF16}) {
      const bool integer_division = std::string(op) == "div" || std::string(op) == "mod";
      if (integer_division && !IsFloating(dtype)) continue;  // the CPU's
      for (const auto& [a, b, out] : layouts) samples.push_back({op, std::any(), {{a, dtype}, {b, dtype}}, {{out, dtype}}});
    }
  }
  for (DType dtype : {DType::kF32, DType::kF64}) {  // a positive base: real powers
    for (const auto& [a, b, out] : layouts) {
      samples.push_back({"pow", std::any(), {{a, dtype}, {b, dtype}}, {{out, dtype}}, /*positive=*/true});
    }
  }
  for (std::size_t kind = 0; kind < std::size(kCompareOpKindNames); ++kind) {
    for (DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kI64, DType::kU8, DType::kI8}) {
      for (const auto& [a, b, out] : layouts) {
        samples.push_back({"compare", CompareAttrs{static_cast<CompareOpKind>(kind)}, {{a, dtype}, {b, dtype}},
                           {{out, DType::kI8}}});
      }
    }
  }
  for (const auto& [x, axis] : {std::pair{Shape{7, 13}, 1}, std::pair{Shape{4, 6, 5, 3}, 1}, std::pair{Shape{4, 6, 5}, -1},
                                std::pair{Shape{0, 3}, 1}}) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      const int a = axis < 0 ? axis + x.Rank() : axis;
      samples.push_back({"bias_add", BiasAddAttrs{axis}, {{x, dtype}, {Shape{x[a]}, dtype}}, {{x, dtype}}});
    }
  }
  // Reductions: rows, columns, mixed axes, everything, an empty axis, negative axes, keep_dims.
  struct Reduction {
    Shape x;
    std::vector<int> axes;
    bool keep_dims;
    Shape out;
  };
  for (const Reduction& r : {Reduction{Shape{7, 13}, {1}, false, Shape{7}}, Reduction{Shape{7, 13}, {0}, true, Shape{1, 13}},
                             Reduction{Shape{3, 4, 5}, {0, 2}, false, Shape{4}}, Reduction{Shape{3, 4, 5}, {}, false, Shape{}},
                             Reduction{Shape{1000, 3}, {0}, false, Shape{3}}, Reduction{Shape{4, 0, 3}, {1}, false, Shape{4, 3}},
                             Reduction{Shape{2, 3, 4}, {-1}, false, Shape{2, 3}},
                             // Few long sums: several blocks per output (ReduceSplit), as a bias gradient.
                             Reduction{Shape{25, 3, 37, 41}, {0, 2, 3}, false, Shape{3}}}) {
    for (DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
      const ReduceAttrs attrs{r.axes, r.keep_dims};
      samples.push_back({"reduce_sum", attrs, {{r.x, dtype}}, {{r.out, dtype}}});
      if (dtype == DType::kF32 || dtype == DType::kF64) samples.push_back({"reduce_mean", attrs, {{r.x, dtype}}, {{r.out, dtype}}});
      samples.push_back({"reduce_max", attrs, {{r.x, dtype}}, {{r.out, dtype}}});
      samples.push_back({"reduce_min", attrs, {{r.x, dtype}}, {{r.out, dtype}}});
      // Factors near 1: long products stay in range whatever order the GPU multiplies in (integers wrap alike).
      samples.push_back({"reduce_prod", attrs, {{r.x, dtype}}, {{r.out, dtype}}, false, 0, false, 0.9, 1.1});
      if (dtype == DType::kF32 || dtype == DType::kF64) {  // (x, y, dy): values in {0, 1, 2}, so x often ties y
        samples.push_back({"reduce_extremum_grad", attrs, {{r.x, dtype}, {r.out, dtype}, {r.out, dtype}}, {{r.x, dtype}},
                           false, 0, true});
      }
    }
  }
  for (const auto& [x, target] : {std::pair{Shape{7, 13}, Shape{13}}, std::pair{Shape{7, 13}, Shape{7, 1}},
                                  std::pair{Shape{2, 3, 4}, Shape{3, 1}}, std::pair{Shape{5, 6}, Shape{5, 6}},
                                  std::pair{Shape{0, 4}, Shape{4}}, std::pair{Shape{20, 5, 30, 30}, Shape{5, 1, 1}}}) {
    for (DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kI64, DType::kI8}) {
      samples.push_back({"reduce_sum_to", ReduceSumToAttrs{target}, {{x, dtype}}, {{target, dtype}}});
    }
  }
  // The sparse cross entropy: (labels, logits[, dy]) with labels in range; rows x classes incl. odd and empty,
  // and rows a warp (up to 1024) and a block (beyond) take on CUDA.
  for (const auto& [rows, classes] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {7, 10}, {100, 10}, {3, 1000}, {0, 5},
                                      {2, 1025}, {5, 3000}}) {
    for (DType label : {DType::kI32, DType::kI64}) {
      for (DType dtype : {DType::kF32, DType::kF64}) {
        const TensorMeta labels{Shape{rows}, label}, logits{Shape{rows, classes}, dtype};
        samples.push_back({"sparse_softmax_cross_entropy", std::any(), {labels, logits}, {{Shape{rows}, dtype}}, false, classes});
        samples.push_back({"sparse_softmax_cross_entropy_grad", std::any(), {labels, logits, {Shape{rows}, dtype}},
                           {logits}, false, classes});
      }
    }
  }
  // Copies: identity, reshape and device_copy of every dtype, constants, the train step's increment, every cast,
  // broadcasts.
  for (DType dtype : kAllDTypes) {
    for (const Shape& shape : kElementwiseShapes) samples.push_back({"identity", std::any(), {{shape, dtype}}, {{shape, dtype}}});
    samples.push_back({"reshape", std::any(), {{Shape{7, 13}, dtype}}, {{Shape{13, 7}, dtype}}});
    // The planner's copy between memories (here device to device; host to device in the session tests).
    samples.push_back({"device_copy", std::any(), {{Shape{7, 13}, dtype}}, {{Shape{7, 13}, dtype}}});
    samples.push_back({"parallel_cast", ParallelCastAttrs{}, {{Shape{7, 13}, dtype}}, {{Shape{7, 13}, dtype}}});
    // Along the first, a middle and the last axis; an empty part.
    for (const auto& [axis, parts] : {std::pair{0, std::vector<Shape>{Shape{2, 3}, Shape{4, 3}}},
                                      std::pair{1, std::vector<Shape>{Shape{2, 3, 4}, Shape{2, 1, 4}, Shape{2, 0, 4}}},
                                      std::pair{-1, std::vector<Shape>{Shape{5, 2}, Shape{5, 7}}}}) {
      std::vector<TensorMeta> metas;
      std::vector<std::int64_t> whole = parts[0].Dims(), sizes;
      const int a = axis < 0 ? axis + parts[0].Rank() : axis;
      whole[static_cast<std::size_t>(a)] = 0;
      for (const Shape& part : parts) {
        metas.push_back({part, dtype});
        whole[static_cast<std::size_t>(a)] += part[a];
        sizes.push_back(part[a]);
      }
      samples.push_back({"concat", ConcatAttrs{axis}, metas, {{Shape(whole), dtype}}});
      samples.push_back({"concat_grad", ConcatGradAttrs{a, sizes}, {{Shape(whole), dtype}}, metas});
    }
    for (const auto& [in, perm] : {std::pair{Shape{7, 13}, std::vector<int>{1, 0}}, std::pair{Shape{2, 3, 4, 5}, std::vector<int>{0, 2, 3, 1}},
                                   std::pair{Shape{2, 3, 4}, std::vector<int>{2, 1, 0}}, std::pair{Shape{0, 3}, std::vector<int>{1, 0}}}) {
      std::vector<std::int64_t> out;
      for (int axis : perm) out.push_back(in[axis]);
      samples.push_back({"transpose", TransposeAttrs{perm}, {{in, dtype}}, {{Shape(out), dtype}}});
    }
    // Steps up and down, negative and open ends, an empty slice, one element.
    for (const auto& [in, slice] :
         {std::pair{Shape{7, 13}, SliceAttrs{{1, -1}, {6, -14}, {2, -3}}}, std::pair{Shape{2, 3, 4, 5}, SliceAttrs{{0, 1, 0, 4}, {2, 3, 4, -6}, {1, 1, 2, -1}}},
          std::pair{Shape{5, 3}, SliceAttrs{{3, 0}, {1, 3}, {1, 1}}}, std::pair{Shape{1000, 3}, SliceAttrs{{999, 2}, {-1001, 3}, {-7, 1}}}}) {
      std::string why;
      const Shape out = SliceShape(*ResolveSlice(in, slice, why));
      samples.push_back({"slice", slice, {{in, dtype}}, {{out, dtype}}});
      if (SizeOf(dtype) > 1) {  // slice_grad adds: not for the one-byte types
        samples.push_back({"slice_grad", SliceGradAttrs{slice, in}, {{out, dtype}}, {{in, dtype}}});
      }
    }
    std::mt19937 values(11);
    const Sample shape_only{"constant", std::any(), {{Shape{5, 3}, dtype}}, {}};
    samples.push_back({"constant", RandomTensor({Shape{5, 3}, dtype}, shape_only, values), {}, {{Shape{5, 3}, dtype}}});
    for (DType to : kAllDTypes) {
      for (const Shape& shape : kElementwiseShapes) samples.push_back({"cast", CastAttrs{to}, {{shape, dtype}}, {{shape, to}}});
    }
  }
  samples.push_back({"increment", std::any(), {{Shape{1}, DType::kI64}}, {}});
  for (const DType dtype : kAllDTypes) {  // assign: the value into the variable, in place
    samples.push_back({"assign", std::any(), {{Shape{3, 5}, dtype}, {Shape{3, 5}, dtype}}, {}});
  }
  // Dynamic loss scaling's schedule: flags drawn from {0, 1, 2}, so that both branches run.
  for (const auto& [period, multiplier] : {std::pair{std::int64_t{1}, 2.0}, std::pair{std::int64_t{1000}, 4.0}}) {
    samples.push_back({"dynamic_loss_scale_update", DynamicLossScaleAttrs{period, multiplier},
                       {{Shape{1}, DType::kF32}, {Shape{1}, DType::kI64}, {Shape{1}, DType::kI64}, {Shape{1}, DType::kF32}},
                       {}, false, 0, true});
  }
  // The learning rate of every kind of schedule, with warmups (train steps drawn from 1..1000).
  for (const LrSchedule& schedule :
       {PiecewiseConstantScheduler({100, 500}, {0.1, 0.05, 0.01}), PiecewiseScalingScheduler(0.2, {300}, 0.5),
        CosineScheduler(0.1, 800, 0.1, LinearWarmup(50, 0.1)), PolynomialScheduler(0.1, 300, 1e-4, 2.0, true),
        PolynomialScheduler(0.1, 300), ExponentialScheduler(0.1, 200, 0.9, true, ConstantWarmup(20, 0.5)),
        InverseTimeScheduler(0.1, 200, 0.5), NaturalExpScheduler(0.1, 200, 0.3, true), LinearCosineScheduler(0.1, 700)}) {
    samples.push_back({"learning_rate", LearningRateAttrs{schedule}, {{Shape{1}, DType::kI64}}, {{Shape{1}, DType::kF32}}, true});
  }
  for (const auto& [x, out] : {std::pair{Shape{13}, Shape{7, 13}}, std::pair{Shape{7, 1}, Shape{7, 13}}, std::pair{Shape{1}, Shape{4, 5}},
                               std::pair{Shape{3, 1, 5}, Shape{2, 3, 4, 5}}, std::pair{Shape{6, 2}, Shape{6, 2}},
                               std::pair{Shape{3}, Shape{0, 3}}}) {
    for (DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
      samples.push_back({"broadcast_to", std::any(), {{x, dtype}}, {{out, dtype}}});
    }
  }
  // The dense softmax cross entropy: (labels, logits[, dy]) with probability-like labels.
  for (const auto& [rows, classes] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {7, 10}, {3, 1000}, {0, 5}, {4, 2000}}) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      const TensorMeta logits{Shape{rows, classes}, dtype}, loss{Shape{rows}, dtype};
      samples.push_back({"softmax_cross_entropy", std::any(), {logits, logits}, {loss}, true});
      samples.push_back({"softmax_cross_entropy_grad", std::any(), {logits, logits, loss}, {logits, logits}, true});
    }
  }
  // Updates: (variable, gradient, learning rate[, slots][, train step]), in place; l1, l2 and a scale on.
  const LrSchedule lr = PiecewiseConstantScheduler({}, {0.1});
  for (const UpdateCase& u : UpdateCases()) {
    for (const Shape& shape : kElementwiseShapes) {
      for (DType dtype : {DType::kF32, DType::kF64}) {
        std::vector<TensorMeta> inputs = {{shape, dtype}, {shape, dtype}, {Shape{1}, DType::kF32}};
        for (int k = 0; k < u.slots; ++k) inputs.push_back({shape, dtype});
        if (u.step) inputs.push_back({Shape{1}, DType::kI64});
        samples.push_back({u.op, UpdateAttrs{u.optimizer, Regularizer{0.01, 0.02}, 0.5}, inputs, {}, true});
        // With dynamic loss scaling's skip flag (drawn positive: the step is skipped).
        inputs.push_back({Shape{1}, DType::kF32});
        samples.push_back({u.op, UpdateAttrs{u.optimizer, Regularizer{0.01, 0.02}, 0.5, true}, inputs, {}, true});
      }
    }
    // The planner's multi-tensor kernel of three such updates (one empty), each variable with its own
    // regularizer and gradient scale.
    if (std::string_view(u.op) == "lamb_update" || std::string_view(u.op) == "lars_update") continue;
    for (DType dtype : {DType::kF32, DType::kF64}) {
      MultiUpdateAttrs multi{u.op, {}, {}};
      std::vector<TensorMeta> inputs;
      int member = 0;
      for (const Shape& shape : {Shape{7, 13}, Shape{0}, Shape{1000, 3}}) {
        const std::size_t before = inputs.size();
        inputs.insert(inputs.end(), {{shape, dtype}, {shape, dtype}, {Shape{1}, DType::kF32}});
        for (int k = 0; k < u.slots; ++k) inputs.push_back({shape, dtype});
        if (u.step) inputs.push_back({Shape{1}, DType::kI64});
        multi.members.push_back(UpdateAttrs{u.optimizer, Regularizer{0.01 * member, 0.02}, 0.5 + member});
        multi.arity.push_back(static_cast<int>(inputs.size() - before));
        ++member;
      }
      samples.push_back({"multi_update", multi, inputs, {}, true});
    }
  }
  // LazyAdam: gradients (and everything float) drawn from {0, 1, 2}, so that many elements have none
  // and must stay as they are; no regularizer, which would give every element a gradient.
  Optimizer lazy = Adam(lr, 0.9, 0.99, 1e-8, true);
  lazy.lazy = true;
  for (const Shape& shape : kElementwiseShapes) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      samples.push_back({"adam_update", UpdateAttrs{lazy, Regularizer{}, 0.5},
                         {{shape, dtype}, {shape, dtype}, {Shape{1}, DType::kF32}, {shape, dtype}, {shape, dtype},
                          {Shape{1}, DType::kI64}},
                         {}, true, 0, true});
    }
  }
  // The global norm over gradients of both float dtypes: clipped (norm above clip_norm) and not.
  for (const double clip : {0.5, 1e6}) {
    for (DType first : {DType::kF32, DType::kF64}) {
      const std::vector<TensorMeta> grads = {{Shape{7, 13}, first}, {Shape{5}, DType::kF64}, {Shape{0}, DType::kF32},
                                             {Shape{1000, 3}, DType::kF32}};
      samples.push_back({"clip_by_global_norm", ClipByGlobalNormAttrs{clip, 0.5}, grads, grads});
    }
  }
  // Pooling: NCHW and NHWC; VALID, SAME, explicit and ceil-mode pads (asymmetric ones included);
  // overlapping windows; odd sizes. The output shape is the op's own inference.
  struct Pool {
    std::array<std::int64_t, 2> k, s;
    Padding padding;
    bool ceil;
  };
  for (const Pool& pool : {Pool{{2, 2}, {2, 2}, ValidPadding(), false}, Pool{{3, 3}, {2, 2}, SamePadding(), false},
                           Pool{{3, 2}, {1, 2}, ExplicitPadding(1, 0, 1, 1), false}, Pool{{2, 2}, {2, 2}, ValidPadding(), true},
                           Pool{{3, 3}, {2, 2}, ValidPadding(), true}, Pool{{2, 2}, {2, 2}, SamePadding(), false}}) {
    for (const DataFormat format : {DataFormat::kNCHW, DataFormat::kNHWC}) {
      const Shape x = format == DataFormat::kNCHW ? Shape{2, 3, 7, 9} : Shape{2, 7, 9, 3};
      for (DType dtype : {DType::kF32, DType::kF64}) {
        const Pool2DAttrs attrs{pool.k, pool.s, pool.padding, format, pool.ceil};
        const std::any attrs_any = attrs;
        const std::vector<TensorMeta> in = {{x, dtype}};
        const TensorMeta y = FindOp("max_pool2d").infer({"max_pool2d", "sample", &attrs_any, in})[0];
        samples.push_back({"max_pool2d", attrs, {{x, dtype}}, {y}});
        samples.push_back({"avg_pool2d", attrs, {{x, dtype}}, {y}});
        samples.push_back({"max_pool2d_grad", attrs, {y, {x, dtype}}, {{x, dtype}}});
        // Values in {0, 1, 2}: windows with ties, where the first largest takes the gradient.
        samples.push_back({"max_pool2d_grad", attrs, {y, {x, dtype}}, {{x, dtype}}, false, 0, true});
        samples.push_back({"avg_pool2d_grad", Pool2DGradAttrs{attrs, x}, {y}, {{x, dtype}}});
      }
    }
  }
  // Convolutions: NCHW and NHWC; VALID, SAME (unequal pads: the padded-copy path) and explicit pads;
  // strides, dilation, groups; an empty batch. The output shape is the op's own inference.
  struct Conv {
    Shape x_nchw;
    std::int64_t filters, k_h, k_w;
    Conv2DAttrs attrs;
  };
  for (const Conv& conv : {Conv{Shape{2, 3, 7, 9}, 4, 3, 3, {{1, 1}, {1, 1}, ValidPadding()}},
                           Conv{Shape{2, 3, 8, 7}, 5, 4, 2, {{1, 1}, {1, 1}, SamePadding()}},  // pads (1, 2) and (0, 1)
                           Conv{Shape{3, 2, 9, 9}, 3, 3, 3, {{2, 2}, {1, 1}, SamePadding()}},  // pads (1, 1)
                           Conv{Shape{1, 3, 6, 7}, 2, 2, 3, {{2, 1}, {2, 1}, ExplicitPadding(1, 0, 2, 1)}},
                           Conv{Shape{2, 4, 6, 6}, 6, 3, 3, {{1, 1}, {1, 1}, ExplicitPadding(1, 1, 1, 1), DataFormat::kNCHW, 2}},
                           Conv{Shape{0, 3, 5, 5}, 2, 3, 3, {{1, 1}, {1, 1}, SamePadding()}}}) {
    for (const DataFormat format : {DataFormat::kNCHW, DataFormat::kNHWC}) {
      Conv2DAttrs attrs = conv.attrs;
      attrs.data_format = format;
      const Shape& c = conv.x_nchw;
      const bool nhwc = format == DataFormat::kNHWC;
      const Shape x = nhwc ? Shape{c[0], c[2], c[3], c[1]} : c;
      const std::int64_t group_channels = c[1] / attrs.groups;
      const Shape weight = nhwc ? Shape{conv.filters, conv.k_h, conv.k_w, group_channels}
                                : Shape{conv.filters, group_channels, conv.k_h, conv.k_w};
      for (DType dtype : {DType::kF32, DType::kF64}) {
        const std::any attrs_any = attrs;
        const std::vector<TensorMeta> in = {{x, dtype}, {weight, dtype}};
        const TensorMeta y = FindOp("conv2d").infer({"conv2d", "sample", &attrs_any, in})[0];
        samples.push_back({"conv2d", attrs, in, {y}});
        samples.push_back({"conv2d_grad_data", Conv2DGradAttrs{attrs, x}, {y, {weight, dtype}}, {{x, dtype}}});
        samples.push_back({"conv2d_grad_filter", Conv2DGradAttrs{attrs, weight}, {y, {x, dtype}}, {{weight, dtype}}});
        if (dtype != DType::kF32) continue;  // the fused kernel is f32 on the CPU
        const TensorMeta bias{Shape{conv.filters}, dtype};
        for (FusedActivation act : {FusedActivation::kNone, FusedActivation::kRelu}) {
          samples.push_back({"conv2d_bias_act", FusedConv2DAttrs{attrs, act}, {in[0], in[1], bias}, {y}});
        }
      }
    }
  }
  // Batch norm around channels first, channels last and of a matrix; training and inference; the
  // last two shapes split each channel over several blocks (7 and 2 of them).
  // (Not empty: the CPU's f32 and f64 kernels disagree on an empty batch's statistics.)
  for (const auto& [x, axis] : {std::pair{Shape{4, 3, 5, 6}, 1}, std::pair{Shape{4, 5, 6, 3}, -1}, std::pair{Shape{9, 7}, 1},
                                std::pair{Shape{8, 4, 40, 40}, 1}, std::pair{Shape{6, 20, 20, 3}, -1}}) {
    const int a = axis < 0 ? axis + x.Rank() : axis;
    for (DType dtype : {DType::kF32, DType::kF64}) {
      const TensorMeta data{x, dtype}, channel{Shape{x[a]}, dtype};
      for (const bool training : {true, false}) {
        const BatchNormAttrs attrs{axis, 1e-3, 0.9, training};
        std::vector<TensorMeta> outputs = {data};
        if (training) outputs.insert(outputs.end(), {channel, channel});
        samples.push_back({"batch_norm", attrs, {data, channel, channel, channel, channel}, outputs, true});
        samples.push_back({"batch_norm_grad", attrs, {data, data, channel, channel, channel}, {data, channel, channel}, true});
      }
      samples.push_back({"batch_norm_moving_update", BatchNormMovingUpdateAttrs{0.9, x.NumElements() / x[a]},
                         {channel, channel, channel, channel}, {}, true});
    }
    for (DType dtype : {DType::kF16, DType::kBF16}) {  // a 16-bit batch norm's moving statistics
      const TensorMeta channel{Shape{x[a]}, dtype};
      samples.push_back({"batch_norm_moving_update", BatchNormMovingUpdateAttrs{0.9, x.NumElements() / x[a]},
                         {channel, channel, channel, channel}, {}, true});
    }
  }
  struct Product {
    std::int64_t m, k, n;
    bool ta, tb;
  };
  for (const Product& p : {Product{1, 1, 1, false, false}, Product{7, 5, 3, false, false}, Product{7, 5, 3, true, false},
                           Product{7, 5, 3, false, true}, Product{33, 65, 17, true, true}, Product{4, 0, 3, false, false},
                           Product{0, 4, 3, false, false}, Product{128, 256, 64, false, true}}) {
    for (DType dtype : {DType::kF32, DType::kF64, DType::kBF16}) {
      const Shape a = p.ta ? Shape{p.k, p.m} : Shape{p.m, p.k};
      const Shape b = p.tb ? Shape{p.n, p.k} : Shape{p.k, p.n};
      samples.push_back({"matmul", MatMulAttrs{p.ta, p.tb, 0.5}, {{a, dtype}, {b, dtype}}, {{Shape{p.m, p.n}, dtype}}});
      // The same product for 3 batch indices, and for 2 x 2 (rank 4).
      for (const std::vector<std::int64_t>& batch : {std::vector<std::int64_t>{3}, std::vector<std::int64_t>{2, 2}}) {
        const auto batched = [&batch](const Shape& matrix) {
          std::vector<std::int64_t> dims = batch;
          dims.insert(dims.end(), matrix.Dims().begin(), matrix.Dims().end());
          return Shape(std::move(dims));
        };
        samples.push_back({"batch_matmul", MatMulAttrs{p.ta, p.tb, 0.5}, {{batched(a), dtype}, {batched(b), dtype}},
                           {{batched(Shape{p.m, p.n}), dtype}}});
      }
      if (dtype != DType::kF32) continue;  // the fused kernel is f32 on the CPU
      samples.push_back({"matmul_sgd_update", FusedMatMulSgdAttrs{MatMulAttrs{p.ta, p.tb, 0.5}, 0.25},
                         {{a, dtype}, {b, dtype}, {Shape{p.m, p.n}, dtype}, {Shape{1}, DType::kF32}}, {}});
      for (FusedActivation act : {FusedActivation::kNone, FusedActivation::kRelu}) {
        // alpha 1: the planner fuses only unscaled products (graph/fusion.cpp), and oneDNN scales the bias too.
        samples.push_back({"matmul_bias_act", FusedMatMulAttrs{MatMulAttrs{p.ta, p.tb, 1.0}, act},
                           {{a, dtype}, {b, dtype}, {Shape{p.n}, dtype}}, {{Shape{p.m, p.n}, dtype}}});
      }
    }
  }
  // Collectives of one piece (one device, one process): what a one-GPU process's collective actor
  // does when it combines nothing. Between processes they need a session's group (see above).
  for (const char* op : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "scatter"}) {
    for (DType dtype : kAllDTypes) {
      const bool reduces = std::string_view(op) == "all_reduce" || std::string_view(op) == "reduce_scatter";
      if (reduces && SizeOf(dtype) == 1) continue;  // no reduction of the one-byte types
      const Shape shape{3, 5};
      samples.push_back({op, CollectiveAttrs{.devices = 1}, {{shape, dtype}}, {{shape, dtype}}});
    }
  }
  // Collectives between several GPUs of one process: the planner has copied every piece onto the
  // collective's GPU, which combines them as the CPU's shared-memory communicator does.
  for (int k : {2, 3}) {
    const auto pieces = [k](const Shape& whole, int axis, DType dtype) {
      std::vector<TensorMeta> metas;
      for (int r = 0; r < k; ++r) metas.push_back({SplitShape(whole, axis, k, r), dtype});
      return metas;
    };
    const auto copies = [k](const Shape& shape, DType dtype) {
      return std::vector<TensorMeta>(static_cast<std::size_t>(k), TensorMeta{shape, dtype});
    };
    for (DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kI64, DType::kU8}) {
      const Shape whole{5, 7};
      if (dtype != DType::kU8) {
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
          for (const Shape& shape : {Shape{3, 5}, Shape{0, 3}, Shape{1000, 3}}) {
            samples.push_back({"all_reduce", CollectiveAttrs{.op = op, .devices = k}, copies(shape, dtype), {{shape, dtype}}});
          }
          // A fusion bucket: two tensors' pieces, tensor after tensor.
          std::vector<TensorMeta> bucket = copies(Shape{3, 5}, dtype);
          for (const TensorMeta& meta : copies(Shape{7}, dtype)) bucket.push_back(meta);
          samples.push_back({"all_reduce", CollectiveAttrs{.op = op, .devices = k, .tensors = 2}, bucket,
                             {{Shape{3, 5}, dtype}, {Shape{7}, dtype}}});
          for (int axis : {0, 1}) {
            samples.push_back({"reduce_scatter", CollectiveAttrs{.op = op, .devices = k, .axis = axis}, copies(whole, dtype),
                               pieces(whole, axis, dtype)});
          }
        }
      }
      for (int axis : {0, 1}) {
        samples.push_back({"all_gather", CollectiveAttrs{.devices = k, .axis = axis}, pieces(whole, axis, dtype), {{whole, dtype}}});
        samples.push_back({"scatter", CollectiveAttrs{.devices = k, .axis = axis}, {{whole, dtype}}, pieces(whole, axis, dtype)});
        samples.push_back({"all_to_all", CollectiveAttrs{.devices = k, .axis = axis, .out_axis = 1 - axis},
                           pieces(whole, axis, dtype), pieces(whole, 1 - axis, dtype)});
      }
    }
  }
  return samples;
}

}  // namespace

TEST_CASE("every op with a CPU kernel has a CUDA kernel") {
  if (!CudaBuilt()) {
    MESSAGE("skipped: this build has no CUDA backend");
    return;
  }
  std::set<std::string> cpu, cuda;
  for (const KernelKey& key : RegisteredKernels(Device::Kind::kCpu)) {
    // Ops that tests of this suite register for themselves (a CPU-only op the planner must refuse on a
    // GPU: tests/api/test_gpu_sessions.cpp) are named test_*.
    if (!key.op_type.starts_with("test_")) cpu.insert(key.op_type);
  }
  for (const KernelKey& key : RegisteredKernels(Device::Kind::kCuda)) cuda.insert(key.op_type);
  std::vector<std::string> missing;
  int on_cuda = 0;
  int host_only = 0;
  for (const std::string& op : cpu) {
    // The data pipeline's ops run on the host in every session (OpDef::host_only), as OneFlow's do.
    if (const OpDef* def = TryFindOp(op); def != nullptr && def->host_only) {
      ++host_only;
      continue;
    }
    if (cuda.count(op) == 0) missing.push_back(op);
    on_cuda += cuda.count(op) > 0 ? 1 : 0;
  }
  CHECK_MESSAGE(missing.empty(), fmt::format("ops with a CPU kernel and no CUDA kernel: {}", fmt::join(missing, ", ")));
  CHECK(on_cuda + host_only == static_cast<int>(cpu.size()));
  MESSAGE(fmt::format("{} of {} ops with CPU kernels have CUDA kernels; {} run on the host only", on_cuda, cpu.size(), host_only));
}

TEST_CASE("a fused matmul with a scaled product is refused on the CPU, whose oneDNN would scale the bias too") {
  // Regression: the GPU's cuBLASLt epilogue adds the bias after alpha, the CPU's oneDNN 2 before it.
  const Sample sample{"matmul_bias_act", FusedMatMulAttrs{MatMulAttrs{false, false, 0.5}, FusedActivation::kNone},
                      {{Shape{2, 3}, DType::kF32}, {Shape{3, 4}, DType::kF32}, {Shape{4}, DType::kF32}},
                      {{Shape{2, 4}, DType::kF32}}};
  std::mt19937 random(1);
  std::vector<Tensor> inputs;
  for (Tensor& input : RandomInputs(sample, random)) inputs.push_back(std::move(input));
  CHECK_THROWS_WITH_AS(RunOn(Device::Kind::kCpu, sample, inputs), doctest::Contains("alpha must be 1"), std::invalid_argument);
}

TEST_CASE("an empty product (k = 0) on the CPU: matmul_bias_act is act(bias) in each row, matmul_sgd_update adds nothing") {
  // Regression: the CPU kernel zeroed both outputs (the variable, for the update), as for a plain matmul.
  const Tensor a(Shape{2, 0}, DType::kF32), b(Shape{0, 3}, DType::kF32);
  const Tensor bias = Tensor::FromVector<float>(Shape{3}, {1.f, -2.f, 3.f});
  for (const FusedActivation act : {FusedActivation::kNone, FusedActivation::kRelu}) {
    const Sample fused{"matmul_bias_act", FusedMatMulAttrs{MatMulAttrs{false, false, 1.0}, act},
                       {{Shape{2, 0}, DType::kF32}, {Shape{0, 3}, DType::kF32}, {Shape{3}, DType::kF32}},
                       {{Shape{2, 3}, DType::kF32}}};
    const float second = act == FusedActivation::kRelu ? 0.f : -2.f;
    CHECK(RunOn(Device::Kind::kCpu, fused, {a, b, bias})[0].ToVector<float>() ==
          std::vector<float>{1.f, second, 3.f, 1.f, second, 3.f});
  }
  const Sample update{"matmul_sgd_update", FusedMatMulSgdAttrs{MatMulAttrs{false, false, 1.0}, 1.0},
                      {{Shape{2, 0}, DType::kF32}, {Shape{0, 3}, DType::kF32}, {Shape{2, 3}, DType::kF32}, {Shape{1}, DType::kF32}},
                      {}};
  const Tensor variable = Tensor::FromVector<float>(Shape{2, 3}, {1.f, 2.f, 3.f, 4.f, 5.f, 6.f});
  const std::vector<Tensor> after = RunOn(Device::Kind::kCpu, update, {a, b, variable, Tensor::FromVector<float>(Shape{1}, {0.5f})});
  CHECK(after[2].ToVector<float>() == variable.ToVector<float>());  // the inputs as the kernel left them
}

TEST_CASE("the core's CUDA kernels compute what the CPU kernels compute, on random inputs and odd and empty shapes") {
  CheckConformance(Samples(), 7);
}

TEST_CASE("convolutions through cuDNN's graph-API engines compute what the CPU kernels compute" *
          doctest::skip(CudaDeviceCount() == 0)) {
  // WEIR_CUDNN_GRAPH=1 makes each conv2d kernel run the graph API's fastest engine wherever cuDNN builds
  // one (by default it runs only where that engine is faster than every legacy algorithm).
  setenv("WEIR_CUDNN_GRAPH", "1", 1);
  std::mt19937 random(11);
  int compared = 0;
  for (const Sample& sample : Samples()) {
    if (!sample.op.starts_with("conv2d") || sample.inputs[0].dtype != DType::kF32) continue;
    CAPTURE(Describe(sample));
    std::vector<Tensor> inputs;
    for (Tensor& input : RandomInputs(sample, random)) inputs.push_back(std::move(input));
    const std::vector<Tensor> cpu = RunOn(Device::Kind::kCpu, sample, inputs);
    const std::vector<Tensor> gpu = RunOn(Device::Kind::kCuda, sample, inputs);
    CheckAgrees(cpu[0].ToVector<float>(), gpu[0].ToVector<float>(), {.relative = 1e-3, .absolute = 1e-5, .norm = 1e-3});
    ++compared;
  }
  unsetenv("WEIR_CUDNN_GRAPH");
  CHECK(compared > 0);
  MESSAGE(fmt::format("{} convolution samples compared on {}", compared, CudaDescribe()));
}

// Runs `half` (f16 inputs and result) on the GPU and `single`, the same op in f32, on the CPU, on the
// same values (random f16, widened), and checks the two agree within `tolerance`.
void CheckHalfAgainstSingle(const Sample& half, const Sample& single, std::mt19937& random, Tolerance tolerance) {
  std::vector<Tensor> halves, singles;
  for (const TensorMeta& meta : half.inputs) {
    halves.push_back(RandomTensor(meta, half, random));
    Tensor widened(meta.shape, DType::kF32);
    for (std::int64_t i = 0; i < widened.NumElements(); ++i) widened.Data<float>()[i] = halves.back().Data<float16>()[i];
    singles.push_back(widened);
  }
  const Tensor gpu = RunOn(Device::Kind::kCuda, half, halves)[0];
  const Tensor cpu = RunOn(Device::Kind::kCpu, single, singles)[0];
  std::vector<float> got;
  for (std::int64_t i = 0; i < gpu.NumElements(); ++i) got.push_back(gpu.Data<float16>()[i]);
  CheckAgrees(cpu.ToVector<float>(), got, tolerance);
}

TEST_CASE("the CUDA f16 matmul computes the CPU's f32 product of the same values, rounded to f16" *
          doctest::skip(CudaDeviceCount() == 0)) {
  std::mt19937 random(13);
  for (const auto& [ta, tb] : {std::pair{false, false}, std::pair{true, false}, std::pair{false, true}}) {
    const std::int64_t m = 33, k = 300, n = 17;
    const Shape a = ta ? Shape{k, m} : Shape{m, k};
    const Shape b = tb ? Shape{n, k} : Shape{k, n};
    const Sample half{"matmul", MatMulAttrs{ta, tb, 0.5}, {{a, DType::kF16}, {b, DType::kF16}}, {{Shape{m, n}, DType::kF16}}};
    const Sample single{"matmul", MatMulAttrs{ta, tb, 0.5}, {{a, DType::kF32}, {b, DType::kF32}}, {{Shape{m, n}, DType::kF32}}};
    CheckHalfAgainstSingle(half, single, random, {.relative = 2e-3, .absolute = 2e-3, .norm = 2e-3});
  }
}

TEST_CASE("the CUDA f16 convolutions compute the CPU's f32 convolution of the same values, rounded to f16" *
          doctest::skip(CudaDeviceCount() == 0)) {
  std::mt19937 random(17);
  int compared = 0;
  for (const Sample& single : Samples()) {
    const bool conv = single.op == "conv2d" || single.op == "conv2d_grad_data" || single.op == "conv2d_grad_filter";
    if (!conv || single.inputs[0].dtype != DType::kF32) continue;
    CAPTURE(Describe(single));
    Sample half = single;
    for (TensorMeta& meta : half.inputs) meta.dtype = DType::kF16;
    for (TensorMeta& meta : half.outputs) meta.dtype = DType::kF16;
    // Products of f16 values are exact in f32; the sums differ in order, then round to 11 bits.
    CheckHalfAgainstSingle(half, single, random, {.relative = 3e-3, .absolute = 3e-3, .norm = 3e-3});
    ++compared;
  }
  CHECK(compared > 0);
}

TEST_CASE("an update with a skip flag: 0 updates as without one, anything else (NaN too) writes nothing") {
  std::vector<Device::Kind> devices = {Device::Kind::kCpu};
  if (CudaDeviceCount() > 0) devices.push_back(Device::Kind::kCuda);
  std::mt19937 random(23);
  for (const UpdateCase& u : UpdateCases()) {
    const std::string op = u.op;
    CAPTURE(op);
    const Shape shape{5, 7};
    std::vector<TensorMeta> metas = {{shape, DType::kF32}, {shape, DType::kF32}, {Shape{1}, DType::kF32}};
    for (int k = 0; k < u.slots; ++k) metas.push_back({shape, DType::kF32});
    if (u.step) metas.push_back({Shape{1}, DType::kI64});
    const Sample plain{u.op, UpdateAttrs{u.optimizer, Regularizer{}, 0.5}, metas, {}, true};
    std::vector<TensorMeta> flagged_metas = metas;
    flagged_metas.push_back({Shape{1}, DType::kF32});
    const Sample flagged{u.op, UpdateAttrs{u.optimizer, Regularizer{}, 0.5, true}, flagged_metas, {}, true};
    std::vector<Tensor> inputs;
    for (const TensorMeta& meta : metas) inputs.push_back(RandomTensor(meta, plain, random));
    for (const Device::Kind device : devices) {
      CAPTURE(device == Device::Kind::kCuda);
      const std::vector<Tensor> updated = RunOn(device, plain, inputs);
      for (const float flag : {0.f, 1.f, std::nanf(""), -std::numeric_limits<float>::infinity()}) {
        CAPTURE(flag);
        std::vector<Tensor> with_flag = inputs;
        with_flag.push_back(Tensor::FromVector<float>(Shape{1}, {flag}));
        const std::vector<Tensor> after = RunOn(device, flagged, with_flag);
        const std::vector<Tensor>& expected = flag == 0.f ? updated : inputs;
        for (std::size_t i = 0; i < inputs.size(); ++i) {
          CAPTURE(i);
          // Bit for bit (a centered RMSProp's random slots can make NaNs, equal to themselves here).
          CHECK(std::memcmp(after[i].RawData(), expected[i].RawData(), expected[i].NumBytes()) == 0);
        }
      }
    }
  }
}

TEST_CASE("a label out of range fails on the GPU with the CPU's error" *
          doctest::skip(CudaDeviceCount() == 0)) {
  // Rows of 4 classes (a warp a row on the GPU) and of 2000 (a block a row).
  for (const std::int64_t classes : {std::int64_t{4}, std::int64_t{2000}}) {
    for (const char* op : {"sparse_softmax_cross_entropy", "sparse_softmax_cross_entropy_grad"}) {
      CAPTURE(op);
      CAPTURE(classes);
      const bool grad = std::string(op).ends_with("_grad");
      const TensorMeta labels{Shape{3}, DType::kI32}, logits{Shape{3, classes}, DType::kF32}, loss{Shape{3}, DType::kF32};
      const Sample sample{op, std::any(), grad ? std::vector<TensorMeta>{labels, logits, loss} : std::vector<TensorMeta>{labels, logits},
                          {grad ? logits : loss}, false, classes};
      std::mt19937 random(5);
      std::vector<Tensor> inputs;
      for (Tensor& input : RandomInputs(sample, random)) inputs.push_back(std::move(input));
      const auto bad = static_cast<std::int32_t>(classes + 5);
      inputs[0] = Tensor::FromVector<std::int32_t>(Shape{3}, {1, bad, -2});
      const std::string expected = fmt::format("[{}] label {} at row 1 is outside [0, {})", op, bad, classes);
      CHECK_THROWS_WITH_AS(RunOn(Device::Kind::kCpu, sample, inputs), expected.c_str(), KernelError);
      CHECK_THROWS_WITH_AS(RunOn(Device::Kind::kCuda, sample, inputs), expected.c_str(), KernelError);
      inputs[0] = Tensor::FromVector<std::int32_t>(Shape{3}, {1, static_cast<std::int32_t>(classes - 1), 0});
      CHECK_NOTHROW(RunOn(Device::Kind::kCuda, sample, inputs));
    }
  }
}

// categorical_ordinal_encode writes its table in place and numbers a call's new keys in the order its
// threads claim slots, so no conformance sample can compare it with the CPU's position order: here the
// GPU's numbering of keys with repeats must give each distinct key one ordinal, and 1 ... n to the n keys.
TEST_CASE("the CUDA categorical_ordinal_encode gives each distinct key one ordinal, 1 to n" *
          doctest::skip(CudaDeviceCount() == 0)) {
  std::mt19937 random(19);
  std::uniform_int_distribution<std::int64_t> pick(0, 999);
  std::vector<std::int64_t> keys(20000);
  for (std::int64_t& key : keys) key = pick(random) * 7919 - 3000000;  // 1000 distinct keys, negative ones too
  const std::int64_t capacity = 1500;
  const Sample sample{"categorical_ordinal_encode", std::any(),
                      {{Shape{2 * capacity}, DType::kI64}, {Shape{1}, DType::kI64}, {Shape{20000}, DType::kI64}},
                      {{Shape{20000}, DType::kI64}}};
  const std::vector<Tensor> out = RunOn(Device::Kind::kCuda, sample,
                                        {Tensor::FromVector<std::int64_t>(Shape{2 * capacity}, std::vector<std::int64_t>(2 * capacity)),
                                         Tensor::FromVector<std::int64_t>(Shape{1}, {0}),
                                         Tensor::FromVector<std::int64_t>(Shape{20000}, keys)});
  const std::vector<std::int64_t> ordinals = out[0].ToVector<std::int64_t>();
  std::map<std::int64_t, std::int64_t> ordinal_of;
  std::set<std::int64_t> given;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto [it, inserted] = ordinal_of.emplace(keys[i], ordinals[i]);
    CHECK(it->second == ordinals[i]);
    if (inserted) given.insert(ordinals[i]);
  }
  CHECK(given.size() == ordinal_of.size());
  CHECK(*given.begin() == 1);
  CHECK(*given.rbegin() == static_cast<std::int64_t>(ordinal_of.size()));
}
