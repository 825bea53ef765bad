#pragma once
// Intra-op parallelism owned by Weir. One process-wide pool of (cores - 1) workers splits large
// kernels (GEMMs, convolutions) into chunks that run on the calling actor thread and the workers.
//
// Why not oneDNN's OpenMP team: GNU OpenMP workers spin for a long while after each parallel
// region, so on a small machine they fight the actor threads, the callback thread and the Python
// caller for the cores (PyTorch's 4.5x collapse at 2 threads is that trap). Weir's workers spin
// only a few microseconds, then sleep on a futex; kernels themselves run single-threaded inside
// oneDNN (SingleThreadedMath).
#include <cstdint>
#include <functional>

namespace weir::internal {

/// The cores this process may use: its CPU affinity (taskset, cgroups' cpusets), capped by
/// OMP_NUM_THREADS when that is set (as PyTorch honours it; weir-launch sets it to each rank's share
/// when several ranks share a machine). At least 1.
int UsableCores();

/// Threads that run a ParallelFor: the caller plus the pool's workers (1 on a one-core machine),
/// at most this thread's limit (SetIntraOpThreadLimit).
int IntraOpThreads();

/// Caps the threads that ParallelFor calls made on this thread may use: a device's share of the
/// cores when several devices split the machine. 1 runs every chunk on the calling thread; 0 (the
/// default) lets a loop use the whole pool. The pool is shared: a loop that finds it busy runs
/// alone, so devices never oversubscribe the cores.
void SetIntraOpThreadLimit(int threads);

/// Runs fn(0) .. fn(n - 1), spread over the calling thread and the pool's workers, and returns when
/// all have run. If the pool is busy with another caller's loop, the caller runs every chunk itself
/// (no queueing behind another kernel, no oversubscription). fn must not throw across threads: an
/// exception from any chunk is rethrown here after every chunk has finished.
void ParallelFor(int n, const std::function<void(int)>& fn);

/// Runs `loops` loops of `chunks` chunks on a private pool of `workers` threads, then destroys it:
/// the pool's start-up and shutdown, for tests (ParallelFor's pool lives until the process exits).
void RunPrivatePool(int workers, int loops, int chunks, const std::function<void(int)>& fn);

/// Makes math libraries called on this thread (oneDNN's OpenMP runtime, OpenBLAS) single-threaded.
/// Cheap after the first call on a thread; kernels call it before running primitives.
void SingleThreadedMath();

/// While alive, OpenMP code planned on this thread plans for one thread; the caller's setting comes
/// back afterwards. Kernels are created inside one: oneDNN bakes the OpenMP thread count into
/// a primitive when it is created (not when it runs), so a primitive created on a thread with the
/// default setting later started its own OpenMP team on every run, beside Weir's pool (LeNet's train
/// step took 43-47 ms instead of 37-39).
class SingleThreadedMathScope {
 public:
  SingleThreadedMathScope();
  ~SingleThreadedMathScope();
  SingleThreadedMathScope(const SingleThreadedMathScope&) = delete;
  SingleThreadedMathScope& operator=(const SingleThreadedMathScope&) = delete;

 private:
  int saved_threads_;
};

/// How to split `total` units into `chunks` contiguous ranges: [ChunkBegin(i), ChunkBegin(i + 1)).
inline std::int64_t ChunkBegin(std::int64_t total, int chunks, int i) { return total * i / chunks; }

}  // namespace weir::internal
