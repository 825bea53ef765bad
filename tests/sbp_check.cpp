#include "sbp_check.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "coverage.hpp"
#include "graph/job_graph.hpp"
#include "graph/op_registry.hpp"
#include "graph/sbp.hpp"
#include "kernels/collectives/communicator.hpp"
#include "kernels/kernel.hpp"
#include "op_test_util.hpp"

namespace weir::testing {

using namespace weir::internal;

namespace {


// Random inputs of the op's input metas: floats in [0.5, 1.5] (safe for log, sqrt and division),
// i32 in [0, 3) (valid labels and indices: every case has at least 3 classes), i64 in [1, 3] (train
// steps: bias corrections divide by 1 - beta^step).
std::vector<Tensor> RandomInputs(const std::vector<TensorMeta>& metas, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<Tensor> tensors;
  for (const TensorMeta& meta : metas) {
    Tensor t(meta.shape, meta.dtype);
    for (std::int64_t i = 0; i < t.NumElements(); ++i) {
      switch (meta.dtype) {
        case DType::kF32: t.Data<float>()[i] = std::uniform_real_distribution<float>(0.5f, 1.5f)(gen); break;
        case DType::kF64: t.Data<double>()[i] = std::uniform_real_distribution<double>(0.5, 1.5)(gen); break;
        case DType::kI32: t.Data<std::int32_t>()[i] = static_cast<std::int32_t>(gen() % 3); break;
        case DType::kI64: t.Data<std::int64_t>()[i] = 1 + static_cast<std::int64_t>(gen() % 3); break;  // steps >= 1
        case DType::kU8: t.Data<std::uint8_t>()[i] = static_cast<std::uint8_t>(gen() % 2); break;
        default: break;
      }
    }
    tensors.push_back(std::move(t));
  }
  return tensors;
}

// Device `rank`'s piece of `whole` under `sbp`: a slice, the whole, or (partial sum) the whole on
// rank 0 and zeros elsewhere.
Tensor PieceOf(const Tensor& whole, const TensorMeta& piece_meta, const Sbp& sbp, int devices, int rank) {
  Tensor piece(piece_meta.shape, piece_meta.dtype);
  if (sbp.IsPartialSum() && rank > 0) return piece;  // zeros
  if (!sbp.IsSplit()) {
    std::memcpy(piece.RawData(), whole.RawData(), piece_meta.NumBytes());
    return piece;
  }
  const TensorMeta whole_meta{whole.GetShape(), whole.GetDType()};
  std::vector<TensorView> outputs;
  std::vector<Tensor> others;
  std::vector<TensorMeta> metas;
  for (int r = 0; r < devices; ++r) metas.push_back({SplitShape(whole.GetShape(), sbp.axis, devices, r), whole.GetDType()});
  for (int r = 0; r < devices; ++r) {
    if (r == rank) {
      outputs.push_back({piece.RawData(), &metas[static_cast<std::size_t>(r)]});
    } else {
      others.emplace_back(metas[static_cast<std::size_t>(r)].shape, whole.GetDType());
      outputs.push_back({others.back().RawData(), &metas[static_cast<std::size_t>(r)]});
    }
  }
  MakeInProcessCommunicator(devices)->Scatter({whole.RawData(), &whole_meta}, outputs, sbp.axis);
  return piece;
}

// The logical result from each device's output piece.
Tensor Assemble(const std::vector<Tensor>& pieces, const TensorMeta& logical, const Sbp& sbp) {
  Tensor out(logical.shape, logical.dtype);
  const int devices = static_cast<int>(pieces.size());
  std::vector<TensorMeta> metas;
  std::vector<ConstTensorView> inputs;
  for (const Tensor& piece : pieces) metas.push_back({piece.GetShape(), piece.GetDType()});
  for (int r = 0; r < devices; ++r) inputs.push_back({pieces[static_cast<std::size_t>(r)].RawData(), &metas[static_cast<std::size_t>(r)]});
  std::vector<TensorView> outputs(static_cast<std::size_t>(devices), TensorView{out.RawData(), &logical});
  auto communicator = MakeInProcessCommunicator(devices);
  if (sbp.IsSplit()) communicator->AllGather(inputs, outputs, sbp.axis);
  else if (sbp.IsPartialSum()) communicator->AllReduce(inputs, outputs, ReduceOp::kSum);
  else {
    for (int r = 1; r < devices; ++r) CHECK(pieces[static_cast<std::size_t>(r)].ToVector<float>() == pieces[0].ToVector<float>());
    std::memcpy(out.RawData(), pieces[0].RawData(), logical.NumBytes());
  }
  return out;
}

void CheckClose(const Tensor& got, const Tensor& want) {
  REQUIRE(got.GetShape() == want.GetShape());
  if (want.GetDType() == DType::kF32) {
    const std::vector<float> a = got.ToVector<float>();
    const std::vector<float> b = want.ToVector<float>();
    for (std::size_t i = 0; i < a.size(); ++i) {
      // A NaN of the one-device result (an input outside the op's domain) is a NaN of the pieces too,
      // and an infinity (a log probability of nothing) the same infinity.
      if (std::isnan(b[i])) CHECK(std::isnan(a[i]));
      else if (std::isinf(b[i])) CHECK(a[i] == b[i]);
      else CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-4).scale(1e-4));
    }
  } else if (want.GetDType() == DType::kF64) {  // partial sums add in another order
    REQUIRE(got.GetDType() == DType::kF64);
    const std::vector<double> a = got.ToVector<double>();
    const std::vector<double> b = want.ToVector<double>();
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (std::isnan(b[i])) CHECK(std::isnan(a[i]));
      else if (std::isinf(b[i])) CHECK(a[i] == b[i]);
      else CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-12).scale(1e-12));
    }
  } else {  // integers exactly
    REQUIRE(got.GetDType() == want.GetDType());
    CHECK(std::memcmp(got.RawData(), want.RawData(), static_cast<std::size_t>(want.NumBytes())) == 0);
  }
}

}  // namespace

std::set<std::string> CheckSbpSignatures(const Job& job, const DrawInputs& draw) {
  std::set<std::string> checked;
  const JobGraph& graph = *job.Graph();
  for (const OpNode& node : graph.nodes) {
    if (node.type == kPlaceholderOp || node.type == kVariableOp || node.type == "constant") continue;
    const OpDef& def = FindOp(node.type);
    if (!def.sbp) continue;
    std::vector<TensorMeta> in_metas, out_metas;
    for (int v : node.inputs) in_metas.push_back(graph.values[static_cast<std::size_t>(v)].meta);
    for (int v : node.outputs) out_metas.push_back(graph.values[static_cast<std::size_t>(v)].meta);
    const std::vector<Tensor> inputs = draw ? draw(in_metas) : RandomInputs(in_metas, 7);
    // Updates write inputs in place: the one-device run works on copies, whose final values are
    // expected of the pieces too.
    std::vector<Tensor> whole_inputs;
    for (const Tensor& input : inputs) whole_inputs.push_back(input.Clone());
    const std::vector<Tensor> expected = RunCpuKernel(node.type, node.name, node.attrs, whole_inputs, in_metas, out_metas);
    const std::vector<SbpSignature> signatures = def.sbp({node.type, &node.attrs, in_metas, out_metas});
    if (signatures.empty()) continue;  // none for these shapes (a reshape that moves axis 0)
    for (int devices : {2, 3}) {
      for (const SbpSignature& signature : signatures) {
        CAPTURE(node.type);
        CAPTURE(node.name);
        CAPTURE(devices);
        CAPTURE(signature.ToString());
        bool fits = true;
        auto check_fit = [&](const std::vector<Sbp>& sbps, const std::vector<TensorMeta>& metas) {
          for (std::size_t i = 0; i < sbps.size(); ++i) {
            if (sbps[i].IsSplit() && metas[i].shape[sbps[i].axis] < devices) fits = false;
          }
        };
        check_fit(signature.inputs, in_metas);
        check_fit(signature.outputs, out_metas);
        if (!fits) continue;
        std::vector<std::vector<Tensor>> outputs_by_rank;
        for (int r = 0; r < devices; ++r) {
          std::vector<TensorMeta> piece_in, piece_out;
          std::vector<Tensor> piece_inputs;
          for (std::size_t i = 0; i < inputs.size(); ++i) {
            piece_in.push_back({PieceShape(in_metas[i].shape, signature.inputs[i], devices, r), in_metas[i].dtype});
            piece_inputs.push_back(PieceOf(inputs[i], piece_in.back(), signature.inputs[i], devices, r));
          }
          for (std::size_t j = 0; j < out_metas.size(); ++j) {
            piece_out.push_back({PieceShape(out_metas[j].shape, signature.outputs[j], devices, r), out_metas[j].dtype});
          }
          outputs_by_rank.push_back(
              RunCpuKernel(node.type, node.name, node.attrs, piece_inputs, piece_in, piece_out, r, devices));
          for (int m : def.mutates_inputs) {  // the written pieces come back as extra "outputs"
            if (m < static_cast<int>(piece_inputs.size())) outputs_by_rank.back().push_back(piece_inputs[static_cast<std::size_t>(m)]);
          }
        }
        std::size_t extra = out_metas.size();
        for (int m : def.mutates_inputs) {
          if (m >= static_cast<int>(inputs.size())) continue;
          std::vector<Tensor> pieces;
          for (const auto& outputs : outputs_by_rank) pieces.push_back(outputs[extra]);
          CheckClose(Assemble(pieces, in_metas[static_cast<std::size_t>(m)], signature.inputs[static_cast<std::size_t>(m)]),
                     whole_inputs[static_cast<std::size_t>(m)]);
          ++extra;
        }
        for (std::size_t j = 0; j < out_metas.size(); ++j) {
          std::vector<Tensor> pieces;
          for (const auto& outputs : outputs_by_rank) pieces.push_back(outputs[j]);
          CheckClose(Assemble(pieces, out_metas[j], signature.outputs[j]), expected[j]);
        }
      }
    }
    checked.insert(node.type);
    Coverage::Add("sbp", node.type);
  }
  return checked;
}

}  // namespace weir::testing
