#pragma once
// What conv2d's three CPU kernels share: the f64 reference kernels over the definition of the
// convolution (kernels/conv2d_geometry.hpp; also the reference the f32 oneDNN kernels are tested
// against), and the oneDNN plumbing that binds user-layout registers to a primitive's arguments.
#include <algorithm>
#include <array>
#include <optional>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include <dnnl.hpp>

#include "common/intra_op_pool.hpp"
#include "kernels/attrs/conv2d_attrs.hpp"
#include "kernels/conv2d_geometry.hpp"
#include "kernels/cpu/dnnl_engine.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::internal {

/// The plain loop kernel of any pass, layout, groups and dilation; oneDNN has no f64 convolution.
template <Conv2DPass kPass, typename T> class Conv2DReferenceCpu final : public Kernel {
 public:
  explicit Conv2DReferenceCpu(const KernelSetup& setup) : geometry_(MakeConv2DGeometry(kPass, setup)) {}

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    T* out = outputs[0].As<T>();
    std::fill_n(out, outputs[0].NumElements(), T{0});
    const T* a = inputs[0].As<T>();
    const T* b = inputs[1].As<T>();
    if constexpr (kPass == Conv2DPass::kForward) {  // a = x, b = weight
      ForEachConv2DTap(geometry_, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { out[yi] += a[xi] * b[wi]; });
    } else if constexpr (kPass == Conv2DPass::kBackwardData) {  // a = dy, b = weight
      ForEachConv2DTap(geometry_, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { out[xi] += a[yi] * b[wi]; });
    } else {  // a = dy, b = x
      ForEachConv2DTap(geometry_, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { out[wi] += a[yi] * b[xi]; });
    }
  }

 private:
  Conv2DGeometry geometry_;
};

/// The oneDNN descriptors of a convolution in the user's layouts (nchw/nhwc data; oihw, goihw or
/// ohwi weights) of element type `type` (f32, bf16), with oneDNN's dilation (d - 1) and pads; the
/// result of `pass` (y, dx or dweight) of type `out_type` (f32 for bf16 operands fused with their
/// cast to f32, graph/fusion.cpp; else `type`).
struct Conv2DDnnlDescs {
  dnnl::memory::desc x, weight, y;
  dnnl::memory::dims strides, dilations, pad_l, pad_r;
};

inline Conv2DDnnlDescs MakeConv2DDnnlDescs(const Conv2DGeometry& g, Conv2DPass pass, dnnl::memory::data_type type,
                                           dnnl::memory::data_type out_type) {
  using tag = dnnl::memory::format_tag;
  const auto of = [&](Conv2DPass result) { return pass == result ? out_type : type; };
  const tag data_tag = g.nhwc ? tag::nhwc : tag::nchw;
  Conv2DDnnlDescs d;
  d.x = dnnl::memory::desc({g.batch, g.channels, g.in_h, g.in_w}, of(Conv2DPass::kBackwardData), data_tag);
  d.y = dnnl::memory::desc({g.batch, g.filters, g.out_h, g.out_w}, of(Conv2DPass::kForward), data_tag);
  const auto weight_type = of(Conv2DPass::kBackwardFilter);
  if (g.groups == 1) {
    d.weight = dnnl::memory::desc({g.filters, g.channels, g.kernel_h, g.kernel_w}, weight_type, g.nhwc ? tag::ohwi : tag::oihw);
  } else {  // (out, C/groups, kh, kw) or, for NHWC, (out, kh, kw, C/groups): out runs over the groups
    d.weight = dnnl::memory::desc({g.groups, g.filters / g.groups, g.channels / g.groups, g.kernel_h, g.kernel_w},
                                  weight_type, g.nhwc ? tag::gohwi : tag::goihw);
  }
  d.strides = {g.strides[0], g.strides[1]};
  d.dilations = {g.dilations[0] - 1, g.dilations[1] - 1};
  d.pad_l = {g.pad_before[0], g.pad_before[1]};
  d.pad_r = {g.pad_after[0], g.pad_after[1]};
  return d;
}

/// The same descriptor with format_tag::any: the primitive picks its preferred (blocked) layout.
inline dnnl::memory::desc AnyLayout(const dnnl::memory::desc& desc) {
  return dnnl::memory::desc(desc.dims(), desc.data_type(), dnnl::memory::format_tag::any);
}

/// Executes `primitive` through oneDNN's C API, whose argument array (unlike the C++ wrapper's map)
/// is built once, so that a call allocates nothing on our side.
inline void ExecuteDnnl(const dnnl::primitive& primitive, const dnnl::stream& stream,
                        const std::vector<dnnl_exec_arg_t>& args) {
  dnnl::error::wrap_c_api(
      dnnl_primitive_execute(primitive.get(), stream.get(), static_cast<int>(args.size()), args.data()),
      "could not execute a conv2d primitive");
}

/// A register in the user's layout bound to one primitive argument. When the primitive chose
/// another layout, the operand owns a buffer in that layout and a reorder, both made once.
class DnnlOperand {
 public:
  DnnlOperand() = default;
  DnnlOperand(const dnnl::memory::desc& user, const dnnl::memory::desc& chosen, bool is_output)
      : user_(user, CpuEngine(), DNNL_MEMORY_NONE) {
    if (user == chosen) {
      primitive_ = user_;  // the same memory object: binding the register binds the argument
      return;
    }
    primitive_ = dnnl::memory(chosen, CpuEngine());
    const dnnl::memory& from = is_output ? primitive_ : user_;
    const dnnl::memory& to = is_output ? user_ : primitive_;
    reorder_ = dnnl::reorder(from, to);
    reorder_args_ = {{DNNL_ARG_FROM, from.get()}, {DNNL_ARG_TO, to.get()}};
    is_output_ = is_output;
  }

  /// Points the operand at this call's register.
  void Bind(const void* data) { user_.set_data_handle(const_cast<void*>(data)); }
  /// Inputs: copies the register into the primitive's layout, if it differs.
  void Import(const dnnl::stream& stream) {
    if (!reorder_args_.empty() && !is_output_) ExecuteDnnl(reorder_, stream, reorder_args_);
  }
  /// Outputs: copies the primitive's result into the register, if the layouts differ.
  void Export(const dnnl::stream& stream) {
    if (!reorder_args_.empty() && is_output_) ExecuteDnnl(reorder_, stream, reorder_args_);
  }
  const dnnl::memory& Memory() const { return primitive_; }

 private:
  dnnl::memory user_, primitive_;
  dnnl::reorder reorder_;
  std::vector<dnnl_exec_arg_t> reorder_args_;  // empty when no reorder is needed
  bool is_output_ = false;
};

/// Primitive attributes with a user-managed scratchpad, so that the kernel owns its scratch memory
/// (allocated once) instead of oneDNN allocating per execution.
inline dnnl::primitive_attr UserScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

/// The forward primitive descriptor of `d`: what the forward kernel runs and what the backward
/// kernels pass oneDNN as their hint (descriptors of one data type: a bf16 backward pass writing f32
/// hints with its bf16 forward). `blocked_data`: x and y in the layout oneDNN prefers.
/// `bias`: a fused bias (conv2d_bias_act), else none.
inline dnnl::convolution_forward::primitive_desc MakeConv2DForwardDesc(const Conv2DDnnlDescs& d, bool blocked_data,
                                                                       const dnnl::primitive_attr& attr = {},
                                                                       const dnnl::memory::desc* bias = nullptr) {
  const auto x = blocked_data ? AnyLayout(d.x) : d.x;
  const auto y = blocked_data ? AnyLayout(d.y) : d.y;
  const auto kind = dnnl::prop_kind::forward_training;
  const auto algorithm = dnnl::algorithm::convolution_direct;
  const dnnl::convolution_forward::desc desc =
      bias != nullptr ? dnnl::convolution_forward::desc(kind, algorithm, x, AnyLayout(d.weight), *bias, y, d.strides,
                                                        d.dilations, d.pad_l, d.pad_r)
                      : dnnl::convolution_forward::desc(kind, algorithm, x, AnyLayout(d.weight), y, d.strides,
                                                        d.dilations, d.pad_l, d.pad_r);
  return {desc, attr, CpuEngine()};
}

/// One primitive of a pass, from a kernel file: the primitive, its scratchpad, and its operands
/// (inputs a and b, then the output) with their oneDNN argument ids.
struct Conv2DPrimitive {
  dnnl::primitive primitive;
  dnnl::memory::desc scratchpad;
  std::array<std::pair<int, DnnlOperand>, 3> operands;
  /// A fused bias (third input, the same for every chunk): DNNL_ARG_BIAS and its operand.
  std::optional<DnnlOperand> bias = std::nullopt;
  /// A fused residual (fourth input, this chunk's images in y's layout): the first post-op's operand.
  std::optional<dnnl::memory> residual = std::nullopt;
};

// Convolutions of at least this many FLOPs split their batch over the intra-op pool (the runtime
// runs oneDNN single-threaded; below this the hand-off costs more than it saves).
inline constexpr double kConv2DParallelFlops = 4e6;

/// A oneDNN convolution of any pass, its batch split into one chunk per intra-op thread when it is
/// large: each chunk is its own primitive over a slice of the images, with its own reorders and
/// scratchpad. The filter gradient sums the chunks' partial gradients. Constructors call Init.
class Conv2DDnnlKernel : public Kernel {
 public:
  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    if (chunks_.empty()) {  // an empty batch: y and dx are empty, dweight is an empty sum
      std::fill_n(static_cast<char*>(outputs[0].data), outputs[0].meta->NumBytes(), 0);
      return;
    }
    const auto bytes = [](const void* data) { return static_cast<std::byte*>(const_cast<void*>(data)); };
    const Registers registers{bytes(inputs[0].data), bytes(inputs[1].data),
                              inputs.size() > 2 ? bytes(inputs[2].data) : nullptr,
                              inputs.size() > 3 ? bytes(inputs[3].data) : nullptr, bytes(outputs[0].data)};
    ParallelFor(static_cast<int>(chunks_.size()), [this, &registers](int i) { RunChunk(i, registers); });
    // Chunks past the first left partial filter gradients in their own buffers.
    for (std::size_t i = 1; i < chunks_.size(); ++i) {
      if (out_dtype_ == DType::kBF16) {
        AddPartial(outputs[0].As<bfloat16>(), reinterpret_cast<const bfloat16*>(chunks_[i].partial.data()));
      } else {
        AddPartial(outputs[0].As<float>(), reinterpret_cast<const float*>(chunks_[i].partial.data()));
      }
    }
  }

 protected:
  /// Splits `g`'s batch into chunks and builds each chunk's primitive with `build`; `setup`'s dtypes:
  /// the inputs' (f32 or bf16) and the output's (the same, or f32 for bf16 inputs).
  template <typename BuildFn> void Init(Conv2DPass pass, const KernelSetup& setup, const Conv2DGeometry& g, BuildFn&& build) {
    element_size_ = SizeOf(setup.inputs[0].dtype);
    out_dtype_ = setup.outputs[0].dtype;
    out_element_size_ = SizeOf(out_dtype_);
    if (g.batch == 0) return;
    const double flops = 2.0 * static_cast<double>(g.batch * g.filters * g.out_h * g.out_w) *
                         static_cast<double>(g.channels / g.groups * g.kernel_h * g.kernel_w);
    const int count = flops >= kConv2DParallelFlops
                          ? static_cast<int>(std::min<std::int64_t>(IntraOpThreads(), g.batch))
                          : 1;
    const std::int64_t x_image = g.channels * g.in_h * g.in_w;
    const std::int64_t y_image = g.filters * g.out_h * g.out_w;
    const std::int64_t weight_size = g.filters * (g.channels / g.groups) * g.kernel_h * g.kernel_w;
    chunks_.resize(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
      Chunk& chunk = chunks_[static_cast<std::size_t>(i)];
      const std::int64_t begin = ChunkBegin(g.batch, count, i);
      Conv2DGeometry slice = g;
      slice.batch = ChunkBegin(g.batch, count, i + 1) - begin;
      Conv2DPrimitive made = build(slice);
      chunk.primitive = std::move(made.primitive);
      chunk.scratchpad = dnnl::memory(made.scratchpad, CpuEngine());
      for (std::size_t k = 0; k < 3; ++k) chunk.operands[k] = std::move(made.operands[k].second);
      chunk.args = {{made.operands[0].first, chunk.operands[0].Memory().get()},
                    {made.operands[1].first, chunk.operands[1].Memory().get()},
                    {made.operands[2].first, chunk.operands[2].Memory().get()},
                    {DNNL_ARG_SCRATCHPAD, chunk.scratchpad.get()}};
      if (made.bias) {
        chunk.bias = std::move(*made.bias);
        chunk.args.push_back({DNNL_ARG_BIAS, chunk.bias->Memory().get()});
      }
      if (made.residual) {
        chunk.residual = std::move(*made.residual);
        chunk.args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, chunk.residual->get()});
      }
      switch (pass) {
        case Conv2DPass::kForward:  // (x, weight) -> y
          chunk.offsets = {begin * x_image, 0, begin * y_image};
          break;
        case Conv2DPass::kBackwardData:  // (dy, weight) -> dx
          chunk.offsets = {begin * y_image, 0, begin * x_image};
          break;
        case Conv2DPass::kBackwardFilter:  // (dy, x) -> dweight, a partial sum past the first chunk
          chunk.offsets = {begin * y_image, begin * x_image, 0};
          if (i > 0) chunk.partial.resize(static_cast<std::size_t>(weight_size) * out_element_size_);
          break;
      }
    }
  }

 private:
  struct Registers {
    std::byte* a;
    std::byte* b;
    std::byte* bias;      // fused kernels only
    std::byte* residual;  // fused kernels with a residual sum only
    std::byte* out;
  };
  struct Chunk {
    dnnl::primitive primitive;
    dnnl::stream stream{CpuEngine()};
    dnnl::memory scratchpad;
    std::array<DnnlOperand, 3> operands;
    std::optional<DnnlOperand> bias;
    std::optional<dnnl::memory> residual;
    std::vector<dnnl_exec_arg_t> args;
    std::array<std::int64_t, 3> offsets{};  // in elements, into a, b and out
    std::vector<std::byte> partial;         // the filter gradient of chunks past the first
  };

  void RunChunk(int i, const Registers& registers) {
    Chunk& chunk = chunks_[static_cast<std::size_t>(i)];
    const auto at = [this](std::byte* base, std::int64_t offset) { return base + offset * static_cast<std::int64_t>(element_size_); };
    chunk.operands[0].Bind(at(registers.a, chunk.offsets[0]));
    chunk.operands[1].Bind(at(registers.b, chunk.offsets[1]));
    chunk.operands[2].Bind(chunk.partial.empty() ? registers.out + chunk.offsets[2] * static_cast<std::int64_t>(out_element_size_)
                                                 : chunk.partial.data());
    chunk.operands[0].Import(chunk.stream);
    chunk.operands[1].Import(chunk.stream);
    if (chunk.bias) {
      chunk.bias->Bind(registers.bias);
      chunk.bias->Import(chunk.stream);
    }
    // The residual has y's shape and dtype: this chunk's images start where its y does.
    if (chunk.residual) chunk.residual->set_data_handle(registers.residual + chunk.offsets[2] * static_cast<std::int64_t>(out_element_size_));
    ExecuteDnnl(chunk.primitive, chunk.stream, chunk.args);
    chunk.operands[2].Export(chunk.stream);
    chunk.stream.wait();
  }

  // out += partial over the filter gradient (in float; bfloat16 rounds once per element).
  template <typename T> void AddPartial(T* out, const T* partial) const {
    const std::size_t count = chunks_.back().partial.size() / sizeof(T);
    for (std::size_t e = 0; e < count; ++e) out[e] = T(static_cast<float>(out[e]) + static_cast<float>(partial[e]));
  }

  std::vector<Chunk> chunks_;
  DType out_dtype_ = DType::kF32;
  std::size_t element_size_ = 4, out_element_size_ = 4;  // the inputs', the output's
};

/// Whether x and y (or their gradients) go through the layout oneDNN prefers (nChw16c here) rather
/// than the register's. Measured on the docs' LeNet convolutions (batch 100, 1 thread, fwd + bwd):
/// oneDNN 2.6 runs plain nchw through im2col + gemm, 2x slower than its blocked jit kernels even with
/// the reorders (95 vs 49 ms); plain nhwc has direct jit kernels, as fast as blocked without them.
inline bool UseBlockedData(const Conv2DGeometry& g) { return !g.nhwc; }

}  // namespace weir::internal
