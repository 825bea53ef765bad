#pragma once
// Kernels: the code that runs one op on one device for one dtype. A kernel object is created once
// per compiled task, when a job is instantiated (so expensive set-up such as oneDNN primitive
// creation never happens on the hot path), and Run is then called once per call of the job.
#include <any>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/tensor_meta.hpp"
#include "weir/tensor.hpp"

namespace weir::internal {

class DeviceStream;
class ProcessGroup;

/// A kernel failed on the data of one call (e.g. a label out of range). It fails that call only.
class KernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What a kernel factory gets: the op's typed attributes and the compile-time metas.
struct KernelSetup {
  std::string_view op_type;
  std::string_view op_name;
  const std::any* attrs = nullptr;
  std::span<const TensorMeta> inputs;
  std::span<const TensorMeta> outputs;
  Device device;
  /// The processes of a distributed session that this job's cross-process collectives run over
  /// (kernels/collectives/process_group.hpp); null in a one-process session.
  ProcessGroup* processes = nullptr;
  /// The device stream the kernel's work is submitted to (common/device_stream.hpp): a CUDA kernel
  /// launches on its NativeHandle(). Null on the synchronous path.
  DeviceStream* stream = nullptr;
  /// f32 products (matmuls, convolutions) may round their operands to TF32 on tensor cores
  /// (SessionOptions::tensor_float_32); CUDA kernels only.
  bool tensor_float_32 = false;
  /// Which of `shards` parallel copies of the op this kernel is, over every device of every process
  /// (the part of the data a reader reads; a random op's stream): its device's piece of a split
  /// output, or its device among the mirrored view's replicas.
  int shard = 0;
  int shards = 1;

  template <typename Attrs> const Attrs& Get() const { return std::any_cast<const Attrs&>(*attrs); }
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  /// Computes outputs from inputs. Throws KernelError for bad data; the runtime turns it into a
  /// failed call.
  virtual void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) = 0;
  /// On the asynchronous device path, once the device has finished the work of a Run (called in Run
  /// order, on the actor's executor): a device kernel that found bad data (a label out of range),
  /// which it cannot throw from the device, throws KernelError here, failing that Run's call.
  virtual void AfterCompletion() {}
  /// Whether Run may be captured into a CUDA graph and replayed (kernels/stream_graph.hpp): each replay
  /// must then do what a Run does. Not so for a kernel whose launches depend on host state that changes
  /// from one Run to the next; Weir's CUDA kernels keep such state on the device (dropout's call count,
  /// the reports' ring) and are all capturable.
  virtual bool Capturable() const { return true; }
  /// Whether the kernel exchanges with other processes (a collective across processes): it then acts
  /// in every call, one that failed before it included, so that every process's collectives stay
  /// paired call for call; for a call that already failed here the runtime calls RunFailedCall
  /// instead of Run (the inputs then hold nothing meaningful), which tells the other processes.
  virtual bool JoinsPeersInFailedCalls() const { return false; }
  virtual void RunFailedCall(std::span<const ConstTensorView> /*inputs*/, std::span<const TensorView> /*outputs*/) {}
};

using KernelFactory = std::unique_ptr<Kernel> (*)(const KernelSetup& setup);

/// Kernels are keyed by (op type, device kind, dtype); the dtype is the dtype of the op's first
/// input, or of its first output for ops without inputs.
struct KernelKey {
  std::string op_type;
  Device::Kind device = Device::Kind::kCpu;
  DType dtype = DType::kF32;
  friend bool operator==(const KernelKey&, const KernelKey&) = default;
};

/// Adds a kernel; called from static registrars (WEIR_REGISTER_KERNEL).
void RegisterKernel(KernelKey key, KernelFactory factory);
/// The factory for `key`, or nullptr.
KernelFactory FindKernel(const KernelKey& key);
/// "f32, f64" — the dtypes registered for (op, device); for error messages.
std::string RegisteredDTypes(std::string_view op_type, Device::Kind device);
/// Every (op, dtype) with a kernel on `device`, sorted by op then dtype.
std::vector<KernelKey> RegisteredKernels(Device::Kind device);

/// A factory that constructs `KernelClass(setup)`.
template <typename KernelClass> std::unique_ptr<Kernel> MakeKernel(const KernelSetup& setup) {
  return std::make_unique<KernelClass>(setup);
}

/// Calls `fn` at static-initialisation time: as its shared library loads, so every registrar runs.
struct KernelRegistrar {
  template <typename Fn> explicit KernelRegistrar(Fn fn) { fn(); }
};

}  // namespace weir::internal

#define WEIR_KERNEL_CONCAT_INNER(a, b) a##b
#define WEIR_KERNEL_CONCAT(a, b) WEIR_KERNEL_CONCAT_INNER(a, b)
/// Registers kernels in a block: WEIR_REGISTER_KERNELS { RegisterKernel({...}, &MakeKernel<K>); }
#define WEIR_REGISTER_KERNELS                                                                         \
  static void WEIR_KERNEL_CONCAT(WeirRegisterKernels, __LINE__)();                                    \
  static const ::weir::internal::KernelRegistrar WEIR_KERNEL_CONCAT(weir_kernel_registrar_, __LINE__)( \
      &WEIR_KERNEL_CONCAT(WeirRegisterKernels, __LINE__));                                            \
  static void WEIR_KERNEL_CONCAT(WeirRegisterKernels, __LINE__)()
