#pragma once
/// \file Sessions run compiled jobs. A job is compiled on its first call in a session; every op
/// becomes an actor exchanging registers, so consecutive calls pipeline.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "weir/checkpoint.hpp"
#include "weir/job.hpp"
#include "weir/profile.hpp"
#include "weir/tensor.hpp"

namespace weir {

namespace internal {
class SessionImpl;
}

/// The outputs of one call, in the order the job declared them; also addressable by name.
class Outputs {
 public:
  Outputs() = default;
  Outputs(std::vector<std::string> names, std::vector<Tensor> tensors);
  /// Shares the name list (one per compiled job) instead of copying it per call.
  Outputs(std::shared_ptr<const std::vector<std::string>> names, std::vector<Tensor> tensors);
  std::size_t Size() const { return tensors_.size(); }
  const Tensor& operator[](std::size_t index) const;
  /// Throws std::out_of_range naming the missing output and the ones that exist.
  const Tensor& operator[](std::string_view name) const;
  const std::vector<Tensor>& Tensors() const { return tensors_; }
  const std::vector<std::string>& Names() const;
  /// The pieces of an output, one per device for a mirrored output (then operator[] holds them
  /// concatenated along axis 0, as OneFlow 0.4 returns them); one piece otherwise. The pieces
  /// share the output's storage.
  std::vector<Tensor> Pieces(std::size_t index) const;
  std::vector<Tensor> Pieces(std::string_view name) const;

  /// How many pieces each output has and the shape of one; set by the session.
  struct PieceLayout {
    std::vector<int> pieces;
    std::vector<Shape> piece_shapes;
  };
  Outputs(std::shared_ptr<const std::vector<std::string>> names, std::vector<Tensor> tensors,
          std::shared_ptr<const PieceLayout> layout);

 private:
  std::size_t IndexOf(std::string_view name) const;

  std::shared_ptr<const std::vector<std::string>> names_;
  std::vector<Tensor> tensors_;
  std::shared_ptr<const PieceLayout> layout_;  // null: one piece each
};

/// What an async callback receives: the outputs, or the error that failed the call.
struct CallResult {
  Outputs outputs;
  std::exception_ptr error;

  bool Ok() const { return error == nullptr; }
  /// Rethrows the call's error, if any.
  void ThrowIfError() const {
    if (error) std::rethrow_exception(error);
  }
};

/// How jobs map onto CAF actors (see docs/runtime.md). The default is what bench/actor_overhead
/// found fastest.
enum class ActorHosting : std::uint8_t { kActorPerStream, kActorPerOp };

/// A session spanning several processes (on one or several machines), each running the same program
/// (SPMD, as OneFlow's docs describe): every process defines and compiles the same jobs. Rank 0 hosts
/// the control plane at master_addr:master_port; every rank connects to it, and each job whose calls
/// need the other processes gets a Gloo group (docs/distributed.md). A mirrored job is data parallel
/// across the processes: each passes its own devices' inputs and gets its own devices' results, and the
/// gradients are averaged over every device of every process. A consistent job runs whole in each
/// process (same inputs, same results, same updates). weir-launch sets the environment variables that
/// FromEnvironment() reads.
struct DistributedOptions {
  int rank = 0;
  /// Processes; 1 is a one-process session (no control plane, nothing below is used).
  int world_size = 1;
  /// This process's index among the processes of its machine (LOCAL_RANK). A GPU session of several
  /// processes runs each on one GPU: the one of this index.
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  /// The secret every rank of the job shares: a connection to the control plane that cannot prove it knows
  /// it is refused (docs/distributed.md, "Threat model"). Empty: the WEIR_JOB_TOKEN environment variable;
  /// if that is empty too, allowed only when master_addr is a loopback address.
  std::string job_token;
  /// How long the ranks wait for each other: at start, and for a job that another rank has not compiled.
  std::chrono::milliseconds rendezvous_timeout{300000};
  /// Bounds every collective between processes; past it the call fails naming the collective.
  std::chrono::milliseconds collective_timeout{180000};
  /// This process's address for the data plane (Gloo); empty: the address of the interface that
  /// reaches the master.
  std::string address;
  /// The data plane between processes: "auto" (shared memory when every rank is on this machine, else
  /// Gloo over TCP), "shm" or "gloo". WEIR_COLLECTIVES sets it.
  std::string collectives = "auto";
  /// A mirrored job's gradients are averaged across the processes in buckets, one collective per
  /// bucket rather than one per gradient: gradients join the open bucket in the order the backward
  /// pass makes them until it holds this many bytes (the first bucket of a call 1 MiB, so that it
  /// starts early), as PyTorch DDP's buckets do. OneFlow's collective_boxing.nccl_fusion_threshold_mb,
  /// default 16 MiB; 0 turns fusion off.
  std::size_t fusion_threshold_bytes = std::size_t{16} << 20;

  /// RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, WEIR_RDZV_TIMEOUT (seconds), WEIR_COLLECTIVES and
  /// WEIR_JOB_TOKEN, as weir-launch and torchrun set them; a one-process session when WORLD_SIZE is unset. Throws std::invalid_argument
  /// naming the variable for a value that is not a number in range.
  static DistributedOptions FromEnvironment();
};

struct SessionOptions {
  /// CAF scheduler threads (actor work and the kernels they run); 0 means one per four cores, at
  /// least one. Large kernels also use every core through Weir's intra-op pool.
  int scheduler_threads = 0;
  /// CPU devices (OneFlow's flow.config.cpu_device_num). Each device has its own actor executors and
  /// an equal share of the cores for its kernels (2 devices on 2 cores: one core each).
  int cpu_devices = 1;
  /// GPU devices requested (flow.config.gpu_device_num). n GPUs, in a build with CUDA where n are
  /// visible, run the session's jobs (all but those placed on the CPU), placed on them as on n CPU
  /// devices (docs/cuda.md: copies between the GPUs); in a session of several processes each runs on
  /// n GPUs from local rank * n, with NCCL between the processes. Otherwise they become CPU devices
  /// (max of both counts), with one notice on stderr saying why.
  int gpu_devices = 0;
  /// CPU compute streams of each device that op-actors are spread over.
  int cpu_compute_streams = 1;
  ActorHosting hosting = ActorHosting::kActorPerStream;
  /// Runs CPU kernels the way GPU kernels run: submitted to a stream (a thread per compute stream)
  /// and completed through its poller, the actors moving on meanwhile. Results are the same; it exists
  /// so that the asynchronous device path is tested (and can be profiled) on machines without a GPU.
  bool async_cpu_streams = false;
  /// On device streams (a GPU's, or the CPU's with async_cpu_streams) the kernels of a stream run as
  /// one actor, which on a GPU launches them as one CUDA graph (captured once per set of register
  /// addresses, replayed per call), instead of an actor per kernel.
  bool stream_graphs = true;
  /// Where no actor of a job waits for anything (every kernel on a device stream, no collective: a
  /// one-GPU job, or CPU jobs with async_cpu_streams), its executors run on the threads that hand them
  /// work: the caller's thread launches a call's first kernels itself, and the poller that saw a device
  /// finish passes the results on, instead of waking an actor thread for each (tens of µs each). Off:
  /// every executor is an actor of the runtime's threads.
  bool lend_executors = true;
  /// A failed call writes no variable: the in-place writers (optimizer updates, the train step's
  /// increment, moving averages) wait for a commit that every other kernel of the call reaches first,
  /// and skip their kernels when the call failed, so a retried batch trains once. On device streams (a
  /// GPU's, or the CPU's with async_cpu_streams) a kernel's failure (an index out of range, found by
  /// the device) is known only once the stream has run it: the commit is then one hand-off back to the
  /// host before each step's updates, which on a GPU also splits the step's CUDA graph in two. Off
  /// saves that hand-off, and a failed call may then have applied its updates. Calls of a GPU job
  /// across processes (NCCL) have no commit yet.
  bool commit_before_writes = true;
  /// On a GPU, a call input or result of at most this many bytes moves on the GPU's compute stream, in
  /// order with the kernels (in their CUDA graph); a larger one on copy streams of its own, so that the
  /// copy for the next call overlaps this call's kernels. A hand-off between streams costs a host round
  /// trip (tens of µs), more than overlapping a small copy saves. 0: every copy on the copy streams.
  std::size_t copy_stream_bytes = std::size_t{1} << 20;
  /// On a GPU with tensor cores for it (Ampere and later), f32 matmuls and convolutions may round their
  /// operands to TF32 (10 bits of mantissa) and accumulate in f32 (OneFlow's
  /// flow.config.enable_tensor_float_32_compute): several times the FP32 throughput, results within
  /// about 1e-3 relative of FP32's. Off by default, so that f32 results agree with the CPU's to rounding.
  bool tensor_float_32 = false;
  /// Calls admitted but not yet completed; further calls block until one completes.
  int max_calls_in_flight = 128;
  /// How long shutdown waits for calls in flight before failing them.
  std::chrono::milliseconds shutdown_timeout{30000};
  /// Mixed into every variable's initializer seed (with a hash of its name).
  std::uint64_t seed = 0;
  /// When calls are in flight and no actor has fired for this long, the watchdog reports what every
  /// job waits for (DescribeState()) on stderr, once per stall. 0 turns it off. The default is
  /// generous, so that only a real stall (a kernel or collective that never returns) reports.
  std::chrono::milliseconds watchdog_timeout{300000};
  /// Receives the watchdog's report instead of stderr (tests, logging).
  std::function<void(const std::string&)> watchdog_handler;
  /// Several processes; the default is one.
  DistributedOptions distributed;
};

/// What a session really has (OneFlow's flow.current_resource()).
struct Resource {
  int machines = 1;
  int cpu_devices = 1;
  int gpu_devices = 0;
  /// Intra-op threads each device's kernels use.
  int threads_per_device = 1;
  /// Actor scheduler threads.
  int scheduler_threads = 1;
  /// Processes of a distributed session and this one's rank.
  int processes = 1;
  int rank = 0;
  /// The data plane between the processes: "shm", "gloo", "nccl" (a session on GPUs), or "" in a
  /// one-process session.
  std::string collectives;
};

/// The ops with a kernel for `device` ("cpu" or "gpu") in this build, each with its dtypes (the kernel's
/// key: the first input's dtype, the output's for ops without inputs). "gpu" lists the CUDA kernels
/// this build has, whether or not a GPU is visible (asking for them loads the CUDA backend; a
/// std::runtime_error says why it could not be loaded), and the data pipeline's ops, which a GPU job
/// runs on the host. Throws std::invalid_argument for another device.
std::map<std::string, std::vector<DType>> SupportedOps(std::string_view device);

/// GPUs a session could use: the CUDA devices visible to this process, 0 in a build without CUDA.
int VisibleGpus();

/// Sets (or, given an empty function, clears) a hook that a thread blocked in a long wait of Weir's
/// (Session::Call, Session::Sync, a session's rendezvous with its peers, a request to the master) runs
/// about every 50 ms. The hook may throw to give the wait up: the wait then ends with that exception
/// and what it waited for goes on (a call still completes, or fails at shutdown). Embeddings use it
/// to answer a signal (the Python module raises KeyboardInterrupt on Ctrl-C there). One per process.
void SetWaitInterrupter(std::function<void()> hook);

/// Runs jobs. Thread-safe: several threads may call one session. Destroying a session completes
/// the calls in flight (and their callbacks) and shuts its actors down.
class Session {
 public:
  using Callback = std::function<void(CallResult)>;

  explicit Session(SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// Runs `job` on `inputs` (one per placeholder, in order; for a mirrored job, one per device of
  /// each placeholder, placeholder after placeholder) and blocks until its final actor has
  /// produced the outputs. Throws std::invalid_argument for a wrong input count, shape or dtype
  /// (nothing runs), and rethrows a kernel's error if the call failed.
  Outputs Call(const Job& job, std::vector<Tensor> inputs);
  Outputs Call(const Job& job, std::initializer_list<Tensor> inputs) { return Call(job, std::vector<Tensor>(inputs)); }
  /// As Call, with inputs by placeholder name.
  Outputs Call(const Job& job, const std::map<std::string, Tensor>& inputs);

  /// Launches `job` and returns at once. `callback` runs later on the session's callback thread,
  /// in call order with every other call of this session. Bad inputs throw here, as for Call.
  /// The call shares the inputs' storage (no copy here): do not modify them until it completes.
  void CallAsync(const Job& job, std::vector<Tensor> inputs, Callback callback);
  void CallAsync(const Job& job, std::initializer_list<Tensor> inputs, Callback callback) {
    CallAsync(job, std::vector<Tensor>(inputs), std::move(callback));
  }
  void CallAsync(const Job& job, const std::map<std::string, Tensor>& inputs, Callback callback);

  /// Waits for every call made before it and for its callback; rethrows the first exception a
  /// callback threw since the last Sync.
  void Sync();

  /// The devices and threads this session runs on.
  Resource GetResource() const;

  /// Compiles `job` if needed and returns its plan as Graphviz dot (actors with their devices,
  /// registers, register_num; collective actors named by their collective).
  std::string PlanDot(const Job& job);

  /// What every job with calls in flight waits for: its calls in flight and the oldest one's age,
  /// the kernel each busy executor is inside, and for each actor that holds something and cannot
  /// fire, its inputs without a readable piece (and their producers) and its outputs without a free
  /// slot (and who holds them). The watchdog prints the same. Waits at most about 1 s a job.
  std::string DescribeState();
  /// Compiles `job` now rather than at its first call; creates and initialises its variables.
  void Compile(const Job& job);
  /// Drops `job`'s compiled form (its actors and registers; a later call compiles it again), for
  /// programs that make many short-lived jobs (Python's eager mode runs each op as one). Its variables
  /// stay. Throws std::logic_error while a call of the job is in flight; nothing for a job not compiled.
  void Release(const Job& job);

  /// Variables live in the session, shared by name across its jobs. The accessors below wait until
  /// no call is in flight, so they see (and change) values between calls, never during one.
  /// A copy of the variable `name`; throws std::invalid_argument if there is none.
  Tensor GetVariable(const std::string& name);
  /// Copies of every variable of the jobs compiled so far.
  std::map<std::string, Tensor> GetVariables();
  /// Assigns values to variables by name (OneFlow's load_variables). Unknown names are ignored
  /// unless `ignore_unknown` is false (then std::invalid_argument, and nothing is assigned).
  void SetVariables(const std::map<std::string, Tensor>& values, bool ignore_unknown = true);
  /// Writes every variable (or those in `names`) as a checkpoint in OneFlow's layout, atomically. In a
  /// distributed session rank 0 writes it (every process holds the same variables) and every rank
  /// returns once it is written, so that a load that follows, on a shared file system, finds it.
  void SaveCheckpoint(const std::string& path, SaveOptions options = {}, const std::vector<std::string>& names = {});
  /// Loads the checkpoint at `path` into the variables of the jobs compiled so far (or only those
  /// in `names`). Variables it lacks keep their values (a warning names them); names it has that no
  /// variable matches are reported as unexpected.
  LoadReport LoadCheckpoint(const std::string& path, const std::vector<std::string>& names = {});

  /// Starts timing every actor of every job (those compiled later too) from zero. Costs two clock
  /// reads per actor firing while on; nothing while off.
  void StartProfiling();
  /// Stops timing and returns what was gathered since StartProfiling (calls still in flight count
  /// their actors' firings so far, but not their latency). Throws std::logic_error if profiling is
  /// not on.
  Profile StopProfiling();

  /// Starts recording a timeline: every actor firing of every job (those compiled later too) and
  /// every call from launch to completion. Waits for the calls in flight first. Costs two clock
  /// reads and one append per firing while on; nothing while off. Throws std::logic_error if a
  /// trace is already being recorded.
  void StartTrace();
  /// Waits for the calls in flight, stops recording and writes the timeline to `path` in the Chrome
  /// trace event format (open it in https://ui.perfetto.dev or chrome://tracing): a process per
  /// device with a track per executor, a slice per actor firing, the calls as spans. Throws
  /// std::logic_error if no trace is being recorded, std::runtime_error if `path` cannot be written.
  void StopTrace(const std::string& path);

 private:
  std::unique_ptr<internal::SessionImpl> impl_;
};

}  // namespace weir
