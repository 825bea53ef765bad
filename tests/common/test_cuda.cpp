// The CUDA translation unit compiles, links and (on a machine with a GPU) runs a kernel. Without a
// GPU or a CUDA build the device tests skip and CUDA tensors fail with a clear error.
#include <doctest/doctest.h>
#include <dlfcn.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include "common/cuda_backend.hpp"
#include "common/cuda_runtime.hpp"
#include "weir/weir.hpp"

using namespace weir;

namespace {

// The CUDA libraries this process has mapped, as their file names joined by spaces.
std::string MappedCudaLibraries() {
  std::ifstream maps("/proc/self/maps");
  std::string line, found;
  while (std::getline(maps, line)) {
    for (const char* library : {"libweir_cuda", "libcudart", "libcublas", "libcudnn", "libnccl"}) {
      if (line.find(library) != std::string::npos && found.find(library) == std::string::npos) {
        found += std::string(library) + " ";
      }
    }
  }
  return found;
}

}  // namespace

// A CPU program keeps its memory free of CUDA: cudart, cuBLAS, cuDNN and NCCL alone map ~160 MB.
TEST_CASE("a CPU session loads no CUDA library; asking for GPU devices without a driver loads none either") {
  const bool loaded_before = internal::CudaBackendLoaded();  // a test before this one may have asked for a GPU
  JobBuilder builder("cpu_only");
  Blob x = builder.Placeholder("x", Shape{2, 2});
  builder.Output("y", Relu(MatMul(x, x)));
  const Job job = builder.Build();
  Session session;
  CHECK(session.Call(job, {Tensor::FromVector<float>({2, 2}, {1, -1, 0, 1})})[0].ToVector<float>() ==
        std::vector<float>{1, 0, 0, 1});
  CHECK(internal::CudaBackendLoaded() == loaded_before);
  if (!loaded_before) CHECK(MappedCudaLibraries().empty());
  const bool driver = std::ifstream("/dev/nvidiactl").good() || std::ifstream("/proc/driver/nvidia/version").good() ||
                      dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL) != nullptr;
  if (!driver && !loaded_before) {
    // The session falls back to the CPU, saying why, and still maps nothing of CUDA.
    Session asks_for_gpu(SessionOptions{.gpu_devices = 1});
    CHECK(asks_for_gpu.Call(job, {Tensor::FromVector<float>({2, 2}, {1, -1, 0, 1})})[0].ToVector<float>() ==
          std::vector<float>{1, 0, 0, 1});
    CHECK(VisibleGpus() == 0);
    CHECK(MappedCudaLibraries().empty());
  }
}

TEST_CASE("asking for the GPU kernels loads the CUDA backend, which registers them" *
          doctest::skip(!internal::CudaBuilt())) {
  const auto gpu_ops = SupportedOps("gpu");
  CHECK(internal::CudaBackendLoaded());
  std::vector<std::string> cpu_names, gpu_names;
  for (const auto& [op, dtypes] : SupportedOps("cpu")) cpu_names.push_back(op);
  for (const auto& [op, dtypes] : gpu_ops) gpu_names.push_back(op);
  CHECK(gpu_names == cpu_names);  // every op has its CUDA kernel (tests/kernels/test_cuda_kernels.cpp)
  const std::string mapped = MappedCudaLibraries();
  CHECK(mapped.find("libweir_cuda") != std::string::npos);
  CHECK(mapped.find("libcudart") != std::string::npos);
}

TEST_CASE("in a build without CUDA, asking for the backend says the build has none" *
          doctest::skip(internal::CudaBuilt())) {
  CHECK_THROWS_WITH_AS(internal::LoadCudaBackend(), doctest::Contains("has no CUDA backend"), std::runtime_error);
  CHECK(SupportedOps("gpu").empty());
  CHECK(internal::CudaDescribe() == "built without CUDA");
}

TEST_CASE("CUDA devices are reported, and their absence is handled") {
  const int devices = internal::CudaDeviceCount();
  MESSAGE("CUDA built: " << internal::CudaBuilt() << ", devices: " << devices << " - " << internal::CudaDescribe());
  if (devices == 0) {
    CHECK_THROWS_AS(Tensor(Shape{4}, DType::kF32, Device::Cuda(0)), std::runtime_error);
  }
}

TEST_CASE("a CUDA kernel fills device memory that is copied back to the host" * doctest::skip(internal::CudaDeviceCount() == 0)) {
  Tensor device(Shape{1000}, DType::kF32, Device::Cuda(0));
  internal::CudaFillForTest(0, static_cast<float*>(device.RawData()), 1000, 2.5f);
  Tensor host(Shape{1000}, DType::kF32);
  internal::CudaCopy(host.RawData(), false, device.RawData(), true, host.NumBytes());
  CHECK(host.ToVector<float>() == std::vector<float>(1000, 2.5f));
  Tensor clone = device.Clone();
  CHECK(clone.GetDevice() == Device::Cuda(0));
  CHECK_THROWS_AS(device.Data<float>(), std::invalid_argument);
}

TEST_CASE("a CUDA device stream's event completes after the kernel queued before it" *
          doctest::skip(internal::CudaDeviceCount() == 0)) {
  auto stream = internal::MakeCudaDeviceStream(0, "cuda:0 compute");
  REQUIRE(stream->NativeHandle() != nullptr);
  Tensor device(Shape{1 << 20}, DType::kF32, Device::Cuda(0));
  stream->Submit([&] {
    internal::CudaFillAsyncForTest(stream->NativeHandle(), static_cast<float*>(device.RawData()), 1 << 20, 7.0f);
  });
  REQUIRE(stream->Record()->WaitFor(std::chrono::seconds(10)));
  Tensor host(Shape{1 << 20}, DType::kF32);
  internal::CudaCopy(host.RawData(), false, device.RawData(), true, host.NumBytes());
  CHECK(host.ToVector<float>() == std::vector<float>(1 << 20, 7.0f));
}

TEST_CASE("a CUDA device stream on a device that is not there is a clear error") {
  const int devices = internal::CudaDeviceCount();
  CHECK_THROWS_WITH_AS(internal::MakeCudaDeviceStream(devices, "missing"),
                       doctest::Contains(internal::CudaBuilt() ? "is not available" : "has no CUDA backend"),
                       std::runtime_error);
}
