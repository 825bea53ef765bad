#include "common/intra_op_pool.hpp"

#include <sched.h>

#include <cstdlib>

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define WEIR_CPU_RELAX() _mm_pause()
#else
#define WEIR_CPU_RELAX() std::this_thread::yield()
#endif

extern "C" void openblas_set_num_threads(int num_threads);  // OpenBLAS's own pool (f64 GEMMs)

namespace weir::internal {

namespace {

// About 2-5 µs of polling before a worker sleeps: enough to catch back-to-back chunks of one step,
// short enough that an idle pool leaves the cores to the actor, callback and caller threads.
constexpr int kSpinIterations = 2000;

class Pool {
 public:
  explicit Pool(int workers) {
    // Workers start from wake_'s initial value, not from whatever it holds when their thread gets
    // going: a loop or the shutdown may come first, and a worker that took a later value as "seen"
    // slept through the shutdown (join() hung at exit when a process used the pool only briefly).
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { WorkerLoop(0); });
  }

  ~Pool() {
    stopping_.store(true);
    wake_.fetch_add(1);
    wake_.notify_all();
    for (std::thread& thread : threads_) thread.join();
  }

  int Threads() const { return static_cast<int>(threads_.size()) + 1; }

  void Run(int n, const std::function<void(int)>& fn) {
    std::unique_lock<std::mutex> owner(run_mutex_, std::try_to_lock);
    if (n <= 1 || threads_.empty() || !owner.owns_lock()) {
      for (int i = 0; i < n; ++i) fn(i);
      return;
    }
    const std::uint64_t generation = ++generation_count_;
    fn_ = &fn;
    error_ = nullptr;
    pending_.store(n);
    // A claim needs the loop's generation in both words, so a late worker can never take a chunk
    // of this loop with the previous loop's size, nor a chunk of the previous loop with this fn_.
    job_.store(generation << 32 | static_cast<std::uint32_t>(n));
    next_.store(generation << 32);
    wake_.fetch_add(1);
    wake_.notify_all();
    Work();
    WaitZero(pending_);  // the caller's last chunk usually ends with the workers'
    if (error_) std::rethrow_exception(error_);
  }

 private:
  // Spins briefly, then sleeps until `counter` is 0.
  static void WaitZero(std::atomic<int>& counter) {
    for (int spin = 0;; ++spin) {
      const int value = counter.load();
      if (value == 0) return;
      if (spin < kSpinIterations) {
        WEIR_CPU_RELAX();
      } else {
        counter.wait(value);
      }
    }
  }

  // Claims chunks of the current loop until none is left; whoever finishes the last wakes the caller.
  // A successful claim keeps the loop (and fn_) alive: its caller waits for every chunk.
  void Work() {
    for (;;) {
      std::uint64_t next = next_.load();
      const std::uint64_t job = job_.load();
      if ((next >> 32) != (job >> 32) || (next & 0xffffffffU) >= (job & 0xffffffffU)) return;
      if (!next_.compare_exchange_weak(next, next + 1)) continue;
      try {
        (*fn_)(static_cast<int>(next & 0xffffffffU));
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
      }
      if (pending_.fetch_sub(1) == 1) pending_.notify_all();
    }
  }

  void WorkerLoop(std::uint32_t seen) {
    SingleThreadedMath();
    for (;;) {
      std::uint32_t now = seen;
      for (int spin = 0; spin < kSpinIterations && now == seen; ++spin) {
        WEIR_CPU_RELAX();
        now = wake_.load();
      }
      if (now == seen) {
        wake_.wait(seen);
        now = wake_.load();
      }
      seen = now;
      if (stopping_.load()) return;
      Work();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex run_mutex_;  // one loop at a time; a second caller runs its chunks itself
  std::uint64_t generation_count_ = 0;  // under run_mutex_
  const std::function<void(int)>* fn_ = nullptr;
  std::atomic<std::uint64_t> job_{0};   // generation << 32 | chunk count
  std::atomic<std::uint64_t> next_{0};  // generation << 32 | next unclaimed chunk
  std::atomic<int> pending_{0};         // chunks not finished yet
  // Bumped to wake the workers; starts at 0 (see the constructor). 32 bits, as pending_: libstdc++
  // waits on a 4-byte atomic with a futex on the atomic itself, on wider ones through a proxy.
  std::atomic<std::uint32_t> wake_{0};
  std::atomic<bool> stopping_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

Pool& GetPool() {
  static Pool pool(UsableCores() - 1);
  return pool;
}

}  // namespace

int UsableCores() {
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cores = CPU_COUNT(&set);
  if (const char* text = std::getenv("OMP_NUM_THREADS"); text != nullptr) {
    char* end = nullptr;
    const long limit = std::strtol(text, &end, 10);
    if (end != text && *end == '\0' && limit >= 1) cores = std::min<long>(cores, limit);
  }
  return std::max(cores, 1);
}

namespace {
thread_local int intra_op_thread_limit = 0;
}  // namespace

void SetIntraOpThreadLimit(int threads) { intra_op_thread_limit = threads; }

int IntraOpThreads() {
  const int pool = GetPool().Threads();
  return intra_op_thread_limit > 0 ? std::min(pool, intra_op_thread_limit) : pool;
}

void ParallelFor(int n, const std::function<void(int)>& fn) {
  if (intra_op_thread_limit == 1) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  GetPool().Run(n, fn);
}

void RunPrivatePool(int workers, int loops, int chunks, const std::function<void(int)>& fn) {
  Pool pool(workers);
  for (int i = 0; i < loops; ++i) pool.Run(chunks, fn);
}

void SingleThreadedMath() {
  thread_local bool done = false;
  if (done) return;
  omp_set_num_threads(1);
  openblas_set_num_threads(1);
  done = true;
}

SingleThreadedMathScope::SingleThreadedMathScope() : saved_threads_(omp_get_max_threads()) {
  omp_set_num_threads(1);  // OpenBLAS reads its thread count when called, not when set up
}

SingleThreadedMathScope::~SingleThreadedMathScope() { omp_set_num_threads(saved_threads_); }

}  // namespace weir::internal
