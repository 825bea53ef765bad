// The CUDA translation unit compiles, links and (on a machine with a GPU) runs a kernel. Without a
// GPU or a CUDA build the device tests skip and CUDA tensors fail with a clear error.
#include <doctest/doctest.h>

#include <chrono>

#include "common/cuda_runtime.hpp"
#include "weir/tensor.hpp"

using namespace weir;

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
