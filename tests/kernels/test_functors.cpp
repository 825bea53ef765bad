// The index helpers that CUDA device code runs (kernels/functors/), checked on the host against a
// plain numpy-style computation: the broadcast plan's offsets, and the reduction plan's; and the image
// shift by which the CUDA convolutions run unequal pads (checked against the convolution's definition).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "kernels/conv2d_geometry.hpp"
#include "kernels/functors/binary.hpp"
#include "kernels/functors/philox.hpp"
#include "kernels/functors/reduce.hpp"

using namespace weir::internal;

namespace {

using Dims = std::vector<std::int64_t>;

std::int64_t Count(const Dims& dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  return n;
}

// Row-major coordinates of `index` in `dims`.
Dims Coordinates(std::int64_t index, const Dims& dims) {
  Dims c(dims.size());
  for (std::size_t i = dims.size(); i-- > 0;) {
    c[i] = index % dims[i];
    index /= dims[i];
  }
  return c;
}

// Where output coordinate `c` reads an operand of `dims` (left-padded with 1s, broadcast where 1).
std::int64_t BroadcastOffset(const Dims& c, const Dims& dims) {
  const std::size_t pad = c.size() - dims.size();
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < dims.size(); ++i) offset = offset * dims[i] + (dims[i] == 1 ? 0 : c[pad + i]);
  return offset;
}

}  // namespace

TEST_CASE("the broadcast plan reads each operand where numpy broadcasting does") {
  struct Layout {
    Dims a, b, out;
  };
  for (const Layout& l : {Layout{{7, 13}, {7, 13}, {7, 13}}, Layout{{1}, {7, 13}, {7, 13}}, Layout{{7, 13}, {13}, {7, 13}},
                          Layout{{7, 1}, {7, 13}, {7, 13}}, Layout{{3, 1, 5}, {1, 4, 5}, {3, 4, 5}},
                          Layout{{2, 1, 3, 1}, {5, 1, 4}, {2, 5, 3, 4}}, Layout{{1, 1, 6}, {2, 3, 1}, {2, 3, 6}},
                          Layout{{4, 1, 1, 2}, {1, 3, 5, 1}, {4, 3, 5, 2}}}) {
    CAPTURE(l.out.size());
    BroadcastPlan plan;
    REQUIRE(PlanBroadcast(l.a, l.b, l.out, plan));
    CHECK(plan.rank <= static_cast<int>(l.out.size()));
    for (std::int64_t i = 0; i < Count(l.out); ++i) {
      std::int64_t a = 0, b = 0;
      plan.Offsets(i, a, b);
      const Dims c = Coordinates(i, l.out);
      CHECK(a == BroadcastOffset(c, l.a));
      CHECK(b == BroadcastOffset(c, l.b));
    }
  }
  BroadcastPlan plan;  // a row over a matrix merges to two axes; equal shapes to one
  REQUIRE(PlanBroadcast({6, 5, 4}, {4}, {6, 5, 4}, plan));
  CHECK(plan.rank == 2);
  REQUIRE(PlanBroadcast({6, 5, 4}, {6, 5, 4}, {6, 5, 4}, plan));
  CHECK(plan.rank == 1);
}

TEST_CASE("the reduction plan sums exactly the elements of each output") {
  struct Case {
    Dims dims;
    std::vector<bool> reduced;
  };
  for (const Case& c : {Case{{7, 13}, {false, true}}, Case{{7, 13}, {true, false}}, Case{{7, 13}, {true, true}},
                        Case{{3, 4, 5}, {true, false, true}}, Case{{2, 3, 4, 5}, {false, true, true, false}},
                        Case{{1, 6, 1, 4}, {true, false, true, true}}, Case{{5}, {false}}, Case{{1, 1}, {true, true}},
                        Case{{4, 0, 3}, {false, true, false}}}) {
    CAPTURE(c.dims.size());
    ReductionPlan plan;
    REQUIRE(PlanReduction(c.dims, c.reduced, plan));
    // Naively: each x element belongs to the output of its kept coordinates.
    std::map<std::int64_t, std::vector<std::int64_t>> expected;
    Dims kept_dims;
    for (std::size_t i = 0; i < c.dims.size(); ++i) {
      if (!c.reduced[i]) kept_dims.push_back(c.dims[i]);
    }
    std::int64_t reduced_count = 1;
    for (std::size_t i = 0; i < c.dims.size(); ++i) reduced_count *= c.reduced[i] ? c.dims[i] : 1;
    for (std::int64_t x = 0; x < Count(c.dims); ++x) {
      const Dims coords = Coordinates(x, c.dims);
      std::int64_t out = 0;
      for (std::size_t i = 0, k = 0; i < c.dims.size(); ++i) {
        if (!c.reduced[i]) out = out * kept_dims[k++] + coords[i];
      }
      expected[out].push_back(x);
    }
    CHECK(plan.reduced_count == reduced_count);
    for (std::int64_t out = 0; out < Count(kept_dims); ++out) {
      std::vector<std::int64_t> got;
      for (std::int64_t r = 0; r < plan.reduced_count; ++r) got.push_back(plan.Offset(out, r));
      std::sort(got.begin(), got.end());
      CHECK(got == expected[out]);
    }
  }
}

TEST_CASE("a split reduction's parts cover each output's elements once, and few long sums are split") {
  for (const auto& [outputs, reduced] : {std::pair<std::int64_t, std::int64_t>{32, 78400}, {64, 19600}, {3, 37925},
                                         {1, 4096 * 5 + 1}, {2000, 100000}, {10, 4095}, {0, 10}, {1, 0}}) {
    CAPTURE(outputs);
    CAPTURE(reduced);
    const ReduceSplit split = ReduceSplit::For(outputs, reduced);
    CHECK(split.parts >= 1);
    CHECK(split.parts * split.chunk >= reduced);
    CHECK((split.parts - 1) * split.chunk < std::max<std::int64_t>(reduced, 1));  // no part starts past the end
    if (split.parts > 1) CHECK(split.chunk >= ReduceSplit::kMinPerPart);
    // One block per output where there are many outputs or short sums; else the blocks fill the GPU.
    if (outputs >= ReduceSplit::kBlocksWanted || reduced < 2 * ReduceSplit::kMinPerPart) CHECK(split.parts == 1);
    if (outputs == 32 && reduced == 78400) CHECK(split.parts == 19);  // LeNet's first bias gradient
  }
}

TEST_CASE("the gather plan of a transpose reads each output element from its permuted place") {
  struct Case {
    Dims in;
    std::vector<int> perm;
  };
  for (const Case& c : {Case{{3, 4}, {1, 0}}, Case{{2, 3, 4}, {0, 2, 1}}, Case{{2, 3, 4, 5}, {0, 2, 3, 1}},
                        Case{{1, 3, 1, 4}, {3, 2, 1, 0}}, Case{{2, 3, 4}, {0, 1, 2}}}) {
    CAPTURE(c.in.size());
    Dims in_strides(c.in.size(), 1);
    for (std::size_t i = c.in.size() - 1; i-- > 0;) in_strides[i] = in_strides[i + 1] * c.in[i + 1];
    Dims out, strides;
    for (int axis : c.perm) {
      out.push_back(c.in[static_cast<std::size_t>(axis)]);
      strides.push_back(in_strides[static_cast<std::size_t>(axis)]);
    }
    BroadcastPlan plan;
    REQUIRE(PlanGather(out, strides, plan));
    for (std::int64_t i = 0; i < Count(out); ++i) {
      const Dims coords = Coordinates(i, out);  // output coordinate k is input axis perm[k]'s
      std::int64_t expected = 0;
      for (std::size_t k = 0; k < coords.size(); ++k) expected += coords[k] * strides[k];
      std::int64_t a = i, unused = 0;
      if (plan.rank > 0) plan.Offsets(i, a, unused);
      CHECK(a == expected);
    }
  }
}

TEST_CASE("Philox4x32-10 gives the Random123 known answers") {
  struct Kat {
    Philox4x32 counter;
    std::uint32_t key0, key1;
    Philox4x32 expected;
  };
  for (const Kat& kat : {Kat{{{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
                         Kat{{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}}, 0xffffffff, 0xffffffff,
                             {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
                         Kat{{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}}, 0xa4093822, 0x299f31d0,
                             {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}}}) {
    const Philox4x32 out = Philox(kat.counter, kat.key0, kat.key1);
    for (int i = 0; i < 4; ++i) CHECK(out.v[i] == kat.expected.v[i]);
  }
  // dropout's keep rate follows the threshold
  int kept = 0;
  for (std::uint64_t i = 0; i < 100000; ++i) kept += DropoutKeeps(7, 3, i, static_cast<std::uint64_t>(0.3 * 18446744073709551615.0));
  CHECK(kept == doctest::Approx(70000).epsilon(0.01));
}

namespace {

// dst[i] = src[shift.SourceOf(i)], or 0.
std::vector<double> Shift(const ImageShift& shift, const std::vector<double>& src) {
  std::vector<double> dst(static_cast<std::size_t>(shift.DstCount()));
  for (std::int64_t i = 0; i < shift.DstCount(); ++i) {
    const std::int64_t from = shift.SourceOf(i);
    dst[static_cast<std::size_t>(i)] = from < 0 ? 0.0 : src[static_cast<std::size_t>(from)];
  }
  return dst;
}

}  // namespace

TEST_CASE("a convolution with unequal pads is the unpadded one over its padded input, as the CUDA kernels run it") {
  std::mt19937 random(5);
  std::uniform_real_distribution<double> value(-1, 1);
  auto values = [&](std::int64_t count) {
    std::vector<double> v(static_cast<std::size_t>(count));
    for (double& e : v) e = value(random);
    return v;
  };
  for (const bool nhwc : {false, true}) {
    CAPTURE(nhwc);
    Conv2DGeometry g;
    g.nhwc = nhwc;
    g.batch = 2, g.channels = 3, g.in_h = 6, g.in_w = 5, g.filters = 4, g.kernel_h = 3, g.kernel_w = 2;
    g.strides = {2, 1}, g.dilations = {1, 2}, g.pad_before = {0, 1}, g.pad_after = {1, 2};
    g.out_h = (g.in_h + 1 - 3) / 2 + 1, g.out_w = (g.in_w + 3 - 3) / 1 + 1;
    const Conv2DGeometry padded = Prepadded(g);
    CHECK(padded.SymmetricPads());
    const ImageShift pad = PadShift(g, false), crop = PadShift(g, true);
    CHECK(pad.DstCount() == padded.XCount());
    CHECK(crop.DstCount() == g.XCount());
    const std::vector<double> x = values(g.XCount()), w = values(g.WeightCount()), dy = values(g.YCount());
    const std::vector<double> x_padded = Shift(pad, x);
    CHECK(Shift(crop, x_padded) == x);  // cropping undoes padding
    // The padded image holds x once and zeros elsewhere.
    CHECK(std::count(x_padded.begin(), x_padded.end(), 0.0) == padded.XCount() - g.XCount());

    std::vector<double> y(static_cast<std::size_t>(g.YCount())), y_padded = y;
    ForEachConv2DTap(g, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { y[yi] += x[xi] * w[wi]; });
    ForEachConv2DTap(padded, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { y_padded[yi] += x_padded[xi] * w[wi]; });
    for (std::size_t i = 0; i < y.size(); ++i) CHECK(y_padded[i] == doctest::Approx(y[i]).epsilon(1e-14));

    std::vector<double> dx(static_cast<std::size_t>(g.XCount())), dx_padded(static_cast<std::size_t>(padded.XCount()));
    ForEachConv2DTap(g, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { dx[xi] += dy[yi] * w[wi]; });
    ForEachConv2DTap(padded, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { dx_padded[xi] += dy[yi] * w[wi]; });
    const std::vector<double> dx_cropped = Shift(crop, dx_padded);
    for (std::size_t i = 0; i < dx.size(); ++i) CHECK(dx_cropped[i] == doctest::Approx(dx[i]).epsilon(1e-14));

    std::vector<double> dw(static_cast<std::size_t>(g.WeightCount())), dw_padded = dw;
    ForEachConv2DTap(g, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { dw[wi] += dy[yi] * x[xi]; });
    ForEachConv2DTap(padded, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { dw_padded[wi] += dy[yi] * x_padded[xi]; });
    for (std::size_t i = 0; i < dw.size(); ++i) CHECK(dw_padded[i] == doctest::Approx(dw[i]).epsilon(1e-14));
  }
}

namespace {

// dst[i] = src[transpose.SourceOf(i)].
std::vector<double> Transposed(const BatchedTranspose& transpose, const std::vector<double>& src) {
  std::vector<double> dst(src.size());
  for (std::int64_t i = 0; i < transpose.Count(); ++i) {
    dst[static_cast<std::size_t>(i)] = src[static_cast<std::size_t>(transpose.SourceOf(i))];
  }
  return dst;
}

}  // namespace

TEST_CASE("an NHWC convolution is the NCHW one over transposed images and filters, as cuDNN's NCHW fallback runs it") {
  std::mt19937 random(9);
  std::uniform_real_distribution<double> value(-1, 1);
  for (const std::int64_t groups : {1, 2}) {
    CAPTURE(groups);
    Conv2DGeometry nhwc;
    nhwc.nhwc = true;
    nhwc.batch = 2, nhwc.channels = 4, nhwc.in_h = 5, nhwc.in_w = 6, nhwc.filters = 6, nhwc.kernel_h = 3, nhwc.kernel_w = 2;
    nhwc.groups = groups, nhwc.strides = {1, 2}, nhwc.dilations = {1, 1}, nhwc.pad_before = {1, 0}, nhwc.pad_after = {1, 0};
    nhwc.out_h = 5, nhwc.out_w = 3;
    Conv2DGeometry nchw = nhwc;
    nchw.nhwc = false;
    const BatchedTranspose x_to_nchw{nhwc.batch, nhwc.in_h * nhwc.in_w, nhwc.channels};
    const BatchedTranspose y_to_nchw{nhwc.batch, nhwc.out_h * nhwc.out_w, nhwc.filters};
    const BatchedTranspose w_to_nchw{nhwc.filters, nhwc.kernel_h * nhwc.kernel_w, nhwc.channels / groups};
    std::vector<double> x(static_cast<std::size_t>(nhwc.XCount())), w(static_cast<std::size_t>(nhwc.WeightCount()));
    for (double& e : x) e = value(random);
    for (double& e : w) e = value(random);
    CHECK(Transposed(x_to_nchw.Inverse(), Transposed(x_to_nchw, x)) == x);  // Inverse() undoes the move
    // The gather plans the CUDA kernel copies with read what SourceOf says.
    for (const BatchedTranspose& move : {x_to_nchw, x_to_nchw.Inverse(), y_to_nchw, w_to_nchw.Inverse()}) {
      const BroadcastPlan plan = move.Gather();
      for (std::int64_t i = 0; i < move.Count(); ++i) {
        std::int64_t from = 0, unused = 0;
        plan.Offsets(i, from, unused);
        REQUIRE(from == move.SourceOf(i));
      }
    }
    // Element (n, h, w, c) of x is element (n, c, h, w) of its NCHW copy.
    const std::vector<double> x_nchw = Transposed(x_to_nchw, x);
    CHECK(x_nchw[((1 * 4 + 3) * 5 + 2) * 6 + 4] == x[((1 * 5 + 2) * 6 + 4) * 4 + 3]);

    std::vector<double> y(static_cast<std::size_t>(nhwc.YCount())), y_nchw = y;
    ForEachConv2DTap(nhwc, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { y[yi] += x[xi] * w[wi]; });
    const std::vector<double> w_nchw = Transposed(w_to_nchw, w);
    ForEachConv2DTap(nchw, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { y_nchw[yi] += x_nchw[xi] * w_nchw[wi]; });
    const std::vector<double> y_back = Transposed(y_to_nchw.Inverse(), y_nchw);
    for (std::size_t i = 0; i < y.size(); ++i) CHECK(y_back[i] == doctest::Approx(y[i]).epsilon(1e-14));
  }
}
