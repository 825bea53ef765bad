// The in-process collectives against plain reference loops, on 2 and 3 devices, with splits that
// do not divide evenly; and every re-distribution round-trips exactly.
#include <doctest/doctest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "kernels/collectives/communicator.hpp"

using namespace weir;
using namespace weir::internal;

namespace {

// Owned memory for one piece and the views the communicator takes.
struct Piece {
  TensorMeta meta;
  std::vector<double> data;
  explicit Piece(Shape shape) : meta{std::move(shape), DType::kF64}, data(static_cast<std::size_t>(meta.shape.NumElements())) {}
  ConstTensorView In() const { return {data.data(), &meta}; }
  TensorView Out() { return {data.data(), &meta}; }
};

std::vector<ConstTensorView> Ins(const std::vector<Piece>& pieces) {
  std::vector<ConstTensorView> views;
  for (const Piece& piece : pieces) views.push_back(piece.In());
  return views;
}
std::vector<TensorView> Outs(std::vector<Piece>& pieces) {
  std::vector<TensorView> views;
  for (Piece& piece : pieces) views.push_back(piece.Out());
  return views;
}

// Element (i, j) of a (rows, cols) logical tensor: distinct everywhere.
double Logical(std::int64_t i, std::int64_t j) { return static_cast<double>(i * 1000 + j) + 0.25; }

// Piece `rank` of the (rows, cols) logical tensor split along `axis`.
Piece SplitPiece(std::int64_t rows, std::int64_t cols, int axis, int ranks, int rank) {
  Piece piece(SplitShape(Shape{rows, cols}, axis, ranks, rank));
  const std::int64_t row0 = axis == 0 ? SplitBegin(rows, ranks, rank) : 0;
  const std::int64_t col0 = axis == 1 ? SplitBegin(cols, ranks, rank) : 0;
  for (std::int64_t i = 0; i < piece.meta.shape[0]; ++i) {
    for (std::int64_t j = 0; j < piece.meta.shape[1]; ++j) {
      piece.data[static_cast<std::size_t>(i * piece.meta.shape[1] + j)] = Logical(row0 + i, col0 + j);
    }
  }
  return piece;
}

std::vector<Piece> Split(std::int64_t rows, std::int64_t cols, int axis, int ranks) {
  std::vector<Piece> pieces;
  for (int r = 0; r < ranks; ++r) pieces.push_back(SplitPiece(rows, cols, axis, ranks, r));
  return pieces;
}

}  // namespace

TEST_CASE("balanced splits: the first extent % ranks pieces are one longer, and the pieces tile the extent") {
  CHECK(SplitBegin(100, 3, 0) == 0);
  CHECK(SplitBegin(100, 3, 1) == 34);
  CHECK(SplitBegin(100, 3, 2) == 67);
  CHECK(SplitBegin(100, 3, 3) == 100);
  CHECK(SplitShape(Shape{100, 7}, 0, 3, 0) == Shape{34, 7});
  CHECK(SplitShape(Shape{100, 7}, 1, 3, 2) == Shape{100, 2});
  CHECK(SplitShape(Shape{2, 7}, 0, 3, 2) == Shape{0, 7});
}

TEST_CASE("all_reduce sums or averages every device's piece, into separate or shared outputs") {
  for (int ranks : {2, 3}) {
    CAPTURE(ranks);
    auto comm = MakeInProcessCommunicator(ranks);
    CHECK(comm->Backend() == "in_process");
    CHECK(comm->Size() == ranks);
    const std::int64_t n = 70001;  // several chunks, uneven
    std::vector<Piece> inputs;
    for (int r = 0; r < ranks; ++r) {
      inputs.emplace_back(Shape{n});
      for (std::int64_t i = 0; i < n; ++i) inputs.back().data[static_cast<std::size_t>(i)] = static_cast<double>(i % 97) * (r + 1);
    }
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
      std::vector<Piece> outputs(static_cast<std::size_t>(ranks), Piece(Shape{n}));
      comm->AllReduce(Ins(inputs), Outs(outputs), op);
      const double factor = ranks * (ranks + 1) / 2.0 / (op == ReduceOp::kMean ? ranks : 1);
      for (const Piece& out : outputs) {
        for (std::int64_t i = 0; i < n; i += 997) CHECK(out.data[static_cast<std::size_t>(i)] == doctest::Approx(static_cast<double>(i % 97) * factor));
      }
      // One shared output (devices sharing memory), which is also rank 0's input: in place.
      std::vector<Piece> in_place = inputs;
      std::vector<TensorView> shared(static_cast<std::size_t>(ranks), in_place[0].Out());
      comm->AllReduce(Ins(in_place), shared, op);
      CHECK(in_place[0].data == outputs[0].data);
    }
  }
}

TEST_CASE("all_gather, reduce_scatter, all_to_all, broadcast and send_recv match the logical tensor") {
  for (int ranks : {2, 3}) {
    for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{7, 5}, {6, 9}, {2, 4}}) {
      CAPTURE(ranks);
      CAPTURE(rows);
      CAPTURE(cols);
      auto comm = MakeInProcessCommunicator(ranks);
      const Piece whole = SplitPiece(rows, cols, 0, 1, 0);
      for (int axis : {0, 1}) {
        CAPTURE(axis);
        // S(axis) -> B
        std::vector<Piece> gathered(static_cast<std::size_t>(ranks), Piece(Shape{rows, cols}));
        comm->AllGather(Ins(Split(rows, cols, axis, ranks)), Outs(gathered), axis);
        for (const Piece& out : gathered) CHECK(out.data == whole.data);
        // B -> S(axis) through a reduce-scatter of one addend per device (P -> S).
        std::vector<Piece> addends(static_cast<std::size_t>(ranks), whole);
        for (double& v : addends[0].data) v *= 2;  // addends sum to (ranks + 1) x whole
        std::vector<Piece> scattered;
        for (int r = 0; r < ranks; ++r) scattered.emplace_back(SplitShape(Shape{rows, cols}, axis, ranks, r));
        comm->ReduceScatter(Ins(addends), Outs(scattered), axis, ReduceOp::kSum);
        const std::vector<Piece> expected = Split(rows, cols, axis, ranks);
        for (int r = 0; r < ranks; ++r) {
          for (std::size_t i = 0; i < expected[static_cast<std::size_t>(r)].data.size(); ++i) {
            CHECK(scattered[static_cast<std::size_t>(r)].data[i] == doctest::Approx(expected[static_cast<std::size_t>(r)].data[i] * (ranks + 1)));
          }
        }
        // S(axis) -> S(other) -> S(axis) round-trips exactly; S(axis) -> S(axis) is the identity.
        for (int to : {0, 1}) {
          std::vector<Piece> moved;
          for (int r = 0; r < ranks; ++r) moved.emplace_back(SplitShape(Shape{rows, cols}, to, ranks, r));
          comm->AllToAll(Ins(Split(rows, cols, axis, ranks)), Outs(moved), axis, to);
          const std::vector<Piece> want = Split(rows, cols, to, ranks);
          for (int r = 0; r < ranks; ++r) CHECK(moved[static_cast<std::size_t>(r)].data == want[static_cast<std::size_t>(r)].data);
          std::vector<Piece> back;
          for (int r = 0; r < ranks; ++r) back.emplace_back(SplitShape(Shape{rows, cols}, axis, ranks, r));
          comm->AllToAll(Ins(moved), Outs(back), to, axis);
          const std::vector<Piece> original = Split(rows, cols, axis, ranks);
          for (int r = 0; r < ranks; ++r) CHECK(back[static_cast<std::size_t>(r)].data == original[static_cast<std::size_t>(r)].data);
        }
      }
      // One device -> B, and point to point.
      std::vector<Piece> sources(static_cast<std::size_t>(ranks), Piece(Shape{rows, cols}));
      sources[static_cast<std::size_t>(ranks - 1)] = whole;
      std::vector<Piece> copies(static_cast<std::size_t>(ranks), Piece(Shape{rows, cols}));
      comm->Broadcast(Ins(sources), Outs(copies), ranks - 1);
      for (const Piece& out : copies) CHECK(out.data == whole.data);
      Piece received(Shape{rows, cols});
      comm->SendRecv(whole.In(), 0, received.Out(), ranks - 1);
      CHECK(received.data == whole.data);
    }
  }
}

TEST_CASE("collectives refuse a wrong number of pieces or ranks, naming the collective") {
  auto comm = MakeInProcessCommunicator(2);
  std::vector<Piece> one(1, Piece(Shape{3}));
  CHECK_THROWS_WITH_AS(comm->AllReduce(Ins(one), Outs(one), ReduceOp::kSum),
                       "[all_reduce] expects one input and one output per device (2), got 1 and 1", std::invalid_argument);
  std::vector<Piece> two(2, Piece(Shape{3}));
  CHECK_THROWS_AS(comm->Broadcast(Ins(two), Outs(two), 2), std::invalid_argument);
  CHECK_THROWS_AS(comm->SendRecv(two[0].In(), 0, two[1].Out(), 5), std::invalid_argument);
  CHECK_THROWS_AS(MakeInProcessCommunicator(0), std::invalid_argument);
}

TEST_CASE("PieceRowsOf cuts the pieces that CopyPieceOut cuts, and puts them where CopyPieceIn does") {
  // The CUDA collectives cut and place pieces with 2-D copies of this geometry; here a host 2-D copy
  // of it must give the CPU's pieces, for every axis, odd extents and empty pieces.
  for (const Shape& shape : {Shape{7}, Shape{5, 3}, Shape{2, 7, 3}, Shape{3, 2, 5, 1}}) {
    for (int axis = 0; axis < shape.Rank(); ++axis) {
      for (int ranks : {1, 2, 3}) {
        CAPTURE(shape.ToString());
        CAPTURE(axis);
        CAPTURE(ranks);
        const TensorMeta whole_meta{shape, DType::kF32};
        std::vector<float> whole(static_cast<std::size_t>(shape.NumElements()));
        std::iota(whole.begin(), whole.end(), 1.0f);
        std::vector<float> rebuilt(whole.size(), 0.0f);
        for (int rank = 0; rank < ranks; ++rank) {
          const TensorMeta piece_meta{SplitShape(shape, axis, ranks, rank), DType::kF32};
          std::vector<float> expected(static_cast<std::size_t>(piece_meta.shape.NumElements()));
          CopyPieceOut({whole.data(), &whole_meta}, axis, ranks, rank, {expected.data(), &piece_meta});
          const PieceRows rows = PieceRowsOf(shape, axis, ranks, rank, sizeof(float));
          CHECK(rows.rows * rows.piece_row == piece_meta.NumBytes());
          std::vector<float> cut(expected.size());
          for (std::size_t r = 0; r < rows.rows && rows.piece_row > 0; ++r) {  // an empty piece copies nothing
            std::memcpy(reinterpret_cast<std::byte*>(cut.data()) + r * rows.piece_row,
                        reinterpret_cast<const std::byte*>(whole.data()) + rows.offset + r * rows.whole_row, rows.piece_row);
            std::memcpy(reinterpret_cast<std::byte*>(rebuilt.data()) + rows.offset + r * rows.whole_row,
                        reinterpret_cast<const std::byte*>(cut.data()) + r * rows.piece_row, rows.piece_row);
          }
          CHECK(cut == expected);
        }
        CHECK(rebuilt == whole);  // the pieces put back tile the whole
      }
    }
  }
}
