#include "conformance.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/cuda_backend.hpp"
#include "common/cuda_runtime.hpp"
#include "common/device_stream.hpp"
#include "coverage.hpp"
#include "kernels/kernel.hpp"
#include "weir/op_attrs.hpp"

namespace weir::testing {

using namespace weir::internal;

DType KeyDType(const Sample& sample) { return sample.inputs.empty() ? sample.outputs[0].dtype : sample.inputs[0].dtype; }

std::string Describe(const Sample& sample) {
  std::vector<std::string> inputs;
  for (const TensorMeta& meta : sample.inputs) inputs.push_back(meta.ToString());
  std::string kind;
  if (const auto* unary = std::any_cast<UnaryAttrs>(&sample.attrs)) kind = fmt::format(" kind {}", static_cast<int>(unary->kind));
  return fmt::format("{}{} ({})", sample.op, kind, fmt::join(inputs, ", "));
}

Tensor RandomTensor(const TensorMeta& meta, const Sample& sample, std::mt19937& random, bool distinct) {
  Tensor t(meta.shape, meta.dtype);
  if (distinct) {
    std::vector<std::int64_t> labels(static_cast<std::size_t>(sample.classes));
    std::iota(labels.begin(), labels.end(), 0);
    std::shuffle(labels.begin(), labels.end(), random);
    REQUIRE(t.NumElements() <= sample.classes);
    for (std::int64_t i = 0; i < t.NumElements(); ++i) {
      if (meta.dtype == DType::kI32) t.Data<std::int32_t>()[i] = static_cast<std::int32_t>(labels[static_cast<std::size_t>(i)]);
      else t.Data<std::int64_t>()[i] = labels[static_cast<std::size_t>(i)];
    }
    return t;
  }
  std::uniform_real_distribution<double> real(sample.positive ? 0.1 : sample.low, sample.positive ? 2.0 : sample.high);
  std::uniform_int_distribution<std::int64_t> integer(sample.classes > 0 ? 0 : sample.positive ? 1 : -1000,
                                                      sample.classes > 0 ? sample.classes - 1 : 1000);
  for (std::int64_t i = 0; i < t.NumElements(); ++i) {
    switch (meta.dtype) {
      case DType::kF32: t.Data<float>()[i] = static_cast<float>(sample.ties ? random() % 3 : real(random)); break;
      case DType::kF64: t.Data<double>()[i] = sample.ties ? random() % 3 : real(random); break;
      case DType::kI32: t.Data<std::int32_t>()[i] = static_cast<std::int32_t>(integer(random)); break;
      case DType::kI64: t.Data<std::int64_t>()[i] = integer(random); break;
      case DType::kU8: t.Data<std::uint8_t>()[i] = static_cast<std::uint8_t>(integer(random)); break;
      case DType::kI8: t.Data<std::int8_t>()[i] = static_cast<std::int8_t>(integer(random)); break;
      case DType::kBool: t.Data<bool>()[i] = integer(random) % 2 == 0; break;
      case DType::kF16: t.Data<float16>()[i] = float16(static_cast<float>(sample.ties ? random() % 3 : real(random))); break;
      case DType::kBF16: t.Data<bfloat16>()[i] = bfloat16(static_cast<float>(sample.ties ? random() % 3 : real(random))); break;
      case DType::kTensorBuffer: FAIL("no CUDA kernel reads tensor_buffers"); break;
    }
  }
  return t;
}

std::vector<Tensor> RandomInputs(const Sample& sample, std::mt19937& random) {
  std::vector<Tensor> inputs;
  for (std::size_t i = 0; i < sample.inputs.size(); ++i) {
    inputs.push_back(RandomTensor(sample.inputs[i], sample, random, static_cast<int>(i) == sample.distinct));
  }
  return inputs;
}

void CudaOrHostCopy(Tensor& dst, const Tensor& src) {
  const bool dst_cuda = dst.GetDevice().kind == Device::Kind::kCuda;
  const bool src_cuda = src.GetDevice().kind == Device::Kind::kCuda;
  if (dst.NumBytes() == 0) return;
  if (dst_cuda || src_cuda) {
    CudaCopy(dst.RawData(), dst_cuda, src.RawData(), src_cuda, dst.NumBytes());
  } else {
    std::memcpy(dst.RawData(), src.RawData(), dst.NumBytes());
  }
}

// Runs the (op, device) kernel of `sample` on host inputs; CUDA runs on a device stream. Returns the
// outputs and then the inputs, copied to the host.
std::vector<Tensor> RunOn(Device::Kind device, const Sample& sample, const std::vector<Tensor>& inputs) {
  const KernelFactory factory = FindKernel({sample.op, device, KeyDType(sample)});
  const bool found = factory != nullptr;
  REQUIRE(found);
  std::unique_ptr<DeviceStream> stream;
  if (device == Device::Kind::kCuda) stream = MakeCudaDeviceStream(0, "cuda:0 compute");
  const Device where = device == Device::Kind::kCuda ? Device::Cuda(0) : Device::Cpu();
  const KernelSetup setup{sample.op, "conformance", &sample.attrs, sample.inputs, sample.outputs, where, nullptr, stream.get()};
  std::unique_ptr<Kernel> kernel = factory(setup);
  std::vector<Tensor> ins, outs;
  std::vector<ConstTensorView> in_views;
  std::vector<TensorView> out_views;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    Tensor t(sample.inputs[i].shape, sample.inputs[i].dtype, where);
    CudaOrHostCopy(t, inputs[i]);
    ins.push_back(t);
    in_views.push_back({t.RawData(), &sample.inputs[i]});
  }
  for (const TensorMeta& meta : sample.outputs) {
    outs.emplace_back(meta.shape, meta.dtype, where);
    out_views.push_back({outs.back().RawData(), &meta});
  }
  if (stream) {
    stream->Submit([&] { kernel->Run(in_views, out_views); });
    REQUIRE(stream->Record()->WaitFor(std::chrono::seconds(30)));
    kernel->AfterCompletion();  // as the runtime does: what the device found wrong throws here
  } else {
    kernel->Run(in_views, out_views);
  }
  // The outputs, then the inputs as the kernel left them (updates write theirs in place).
  std::vector<Tensor> host;
  for (const std::vector<Tensor>* tensors : {&outs, &ins}) {
    for (const Tensor& t : *tensors) {
      Tensor h(t.GetShape(), t.GetDType());
      CudaOrHostCopy(h, t);
      host.push_back(h);
    }
  }
  return host;
}

namespace {

template <typename T> void CheckValuesAgree(const std::vector<T>& cpu, const std::vector<T>& gpu, const Tolerance& tolerance) {
  REQUIRE(cpu.size() == gpu.size());
  double largest = 1, difference_squares = 0, cpu_squares = 0;
  for (const T value : cpu) {
    if (std::isfinite(value)) largest = std::max(largest, std::abs(static_cast<double>(value)));
  }
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    const double x = cpu[i], y = gpu[i];
    if (!std::isfinite(x)) {
      CHECK_MESSAGE((x == y || (std::isnan(x) && std::isnan(y))), fmt::format("element {}: the CPU's {}, the GPU's {}", i, x, y));
      continue;
    }
    CHECK_MESSAGE(std::abs(y - x) <= tolerance.relative * std::abs(x) + tolerance.absolute * largest,
                  fmt::format("element {}: the CPU's {}, the GPU's {}", i, x, y));
    difference_squares += (y - x) * (y - x);
    cpu_squares += x * x;
  }
  CHECK(std::sqrt(difference_squares) <= tolerance.norm * std::sqrt(cpu_squares) + tolerance.absolute * largest);
}

}  // namespace

// The two differ by ulps (nvcc contracts a * b + c into FMAs, GCC does not; CUDA's expf and tanhf are
// not glibc's), and cancellation magnifies that relative to small elements: centered RMSProp's
// ms - mg^2, a parameter update close to the parameter.
void CheckAgrees(const std::vector<float>& cpu, const std::vector<float>& gpu, const Tolerance& tolerance) {
  CheckValuesAgree(cpu, gpu, tolerance);
}

void CheckAgrees(const std::vector<double>& cpu, const std::vector<double>& gpu, const Tolerance& tolerance) {
  CheckValuesAgree(cpu, gpu, tolerance);
}

void CheckResultsAgree(const std::vector<Tensor>& cpu, const std::vector<Tensor>& gpu) {
  REQUIRE(cpu.size() == gpu.size());
  for (std::size_t j = 0; j < cpu.size(); ++j) {
    switch (cpu[j].GetDType()) {
      case DType::kF32:
        CheckAgrees(cpu[j].ToVector<float>(), gpu[j].ToVector<float>(), {.relative = 1e-3, .absolute = 1e-5, .norm = 1e-3});
        break;
      case DType::kF64:
        CheckAgrees(cpu[j].ToVector<double>(), gpu[j].ToVector<double>(), {.relative = 1e-9, .absolute = 1e-12, .norm = 1e-9});
        break;
      case DType::kF16:
      case DType::kBF16: {
        // oneDNN and cuBLAS sum in different orders, then round to 8 (bf16) or 11 (f16) bits.
        const auto widened = [](const Tensor& t) {
          std::vector<float> values;
          for (std::int64_t i = 0; i < t.NumElements(); ++i) {
            values.push_back(t.GetDType() == DType::kF16 ? float(t.Data<float16>()[i]) : float(t.Data<bfloat16>()[i]));
          }
          return values;
        };
        CheckAgrees(widened(cpu[j]), widened(gpu[j]), {.relative = 1e-2, .absolute = 1e-2, .norm = 1e-2});
        break;
      }
      default:  // integers, u8 and bool: the same bytes
        CHECK(std::memcmp(cpu[j].RawData(), gpu[j].RawData(), cpu[j].NumBytes()) == 0);
    }
  }
}

int CheckConformance(const std::vector<Sample>& samples, std::uint32_t seed) {
  // The CUDA kernels register themselves as the CUDA backend loads, as for a program asking for a GPU;
  // without a GPU the registry still says which 16-bit samples have a CUDA kernel to meet.
  if (CudaBuilt()) LoadCudaBackend();
  const bool gpu = CudaBuilt() && CudaDeviceCount() > 0;
  std::mt19937 random(seed);
  int compared = 0;
  for (const Sample& sample : samples) {
    // The 16-bit types have kernels for mixed precision's ops only: samples a list draws for every
    // dtype run where both devices have the kernel.
    const DType key = KeyDType(sample);
    if ((key == DType::kF16 || key == DType::kBF16) &&
        (FindKernel({sample.op, Device::Kind::kCpu, key}) == nullptr || FindKernel({sample.op, Device::Kind::kCuda, key}) == nullptr)) {
      continue;
    }
    CAPTURE(Describe(sample));
    Coverage::Add("samples", fmt::format("{} {}", sample.op, KeyDType(sample)));
    const std::vector<Tensor> inputs = RandomInputs(sample, random);
    const std::vector<Tensor> cpu = RunOn(Device::Kind::kCpu, sample, inputs);
    if (!gpu) continue;
    CheckResultsAgree(cpu, RunOn(Device::Kind::kCuda, sample, inputs));
    ++compared;
  }
  if (gpu) MESSAGE(fmt::format("{} samples compared on {}", compared, CudaDescribe()));
  return compared;
}

}  // namespace weir::testing
