#!/usr/bin/python3
"""Weir vs PyTorch on the CPU: the seeds' MNIST MLP, train steps and inference, side by side.

Runs bench/mlp_train_step (Weir) and bench/pytorch_mlp.py (PyTorch) alternately, each configuration
in its own process, --reps times, and prints the medians over those processes (each process reports
the median of its own --repeats runs), the peak RSS of each process, and the ratios Weir / PyTorch
(steps per second, so > 1 means Weir is faster). Last line: one JSON object.

  /usr/bin/python3 bench/compare_mlp_train.py --build build

Configurations:
  Weir:    defaults; --scheduler-threads 1; and --scheduler-threads 1 with OMP_NUM_THREADS=1
           (oneDNN's matmul runs on a GNU OpenMP pool, so the second still uses both cores for GEMMs;
           the third is Weir on one core).
  PyTorch: 1 thread (torch 1, OpenBLAS 1), and the 2-core candidates of
           shared/reference/pytorch_cpu_anchors.md 4.2 (torch threads + OpenBLAS threads [+ PASSIVE]);
           "PyTorch best" is the configuration with the best median, chosen separately for train and
           for inference, among all of them. torch 2 + OpenBLAS 2 with spinning pools (4.5x slower
           there) is left out unless --torch-configs names it (t2b2).
Thread variables inherited from the shell (OMP_*, OPENBLAS_NUM_THREADS, ...) are removed first, so
every process sees only its configuration's settings.

Per process the driver also records its CPU use (cores = CPU time / wall time) and the CPU that other
processes used meanwhile ("foreign" cores, from /proc/stat). This machine is shared, so, as in
pytorch_cpu_anchors.md, the driver waits for a quiet machine before each process and re-runs a
process whose foreign load exceeded --max-foreign (keeping the quietest try), within --quiet-budget
seconds in all; the table shows the largest foreign load among the kept runs.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY",
                    "GOMP_SPINCOUNT", "OMP_PROC_BIND", "OMP_PLACES", "DNNL_MAX_CPU_ISA")

# name -> (torch threads, OpenBLAS threads, OMP_WAIT_POLICY or None)
TORCH_CONFIGS = {
    "t1b1": (1, 1, None),
    "t1b2": (1, 2, None),
    "t1b2p": (1, 2, "PASSIVE"),
    "t2b1": (2, 1, None),
    "t2b2p": (2, 2, "PASSIVE"),
    "t2b2": (2, 2, None),
}
DEFAULT_TORCH_CONFIGS = "t1b1,t1b2,t1b2p,t2b1,t2b2p"
QUIET_WAIT_MAX_S = 60  # the longest wait for a quiet machine before one process


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build", help="Meson build folder with bench/mlp_train_step")
    parser.add_argument("--reps", type=int, default=5, help="processes per configuration")
    parser.add_argument("--steps", type=int, default=200, help="timed steps per run inside a process")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs inside a process")
    parser.add_argument("--python", default="/usr/bin/python3", help="the Python with torch")
    parser.add_argument("--torch-configs", default=DEFAULT_TORCH_CONFIGS,
                        help=f"comma-separated subset of {','.join(TORCH_CONFIGS)}; must include t1b1")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per process")
    parser.add_argument("--max-foreign", type=float, default=0.15,
                        help="re-run a process when other processes used more cores than this meanwhile")
    parser.add_argument("--retries", type=int, default=2, help="re-runs per process at most")
    parser.add_argument("--quiet-budget", type=float, default=600,
                        help="seconds in all to wait for a quiet machine and to re-run; then runs are kept as they are")
    args = parser.parse_args()
    names = [name for name in args.torch_configs.split(",") if name]
    unknown = [name for name in names if name not in TORCH_CONFIGS]
    if unknown or "t1b1" not in names:
        parser.error(f"--torch-configs: expected names from {','.join(TORCH_CONFIGS)} including t1b1, "
                     f"got {args.torch_configs!r}")
    args.torch_configs = names
    if args.reps < 1 or args.steps < 1 or args.repeats < 1 or args.retries < 0:
        parser.error("--reps, --steps and --repeats must be >= 1, --retries >= 0")
    return args


def torch_label(name):
    threads, blas, policy = TORCH_CONFIGS[name]
    if name == "t1b1":
        return "pytorch 1 thread"
    return f"pytorch torch {threads} + BLAS {blas}" + (", PASSIVE" if policy else "")


def configurations(args):
    """(key, label, kind, argv, extra environment) for every configuration."""
    binary = os.path.join(args.build, "bench", "mlp_train_step")
    if not os.access(binary, os.X_OK):
        sys.exit(f"compare_mlp_train: {binary} not found; build it with `ninja -C {args.build} bench/mlp_train_step`")
    common = ["--steps", str(args.steps), "--repeats", str(args.repeats)]
    configs = [
        ("weir", "weir defaults", "weir", [binary] + common, {}),
        ("weir_sched1", "weir --scheduler-threads 1", "weir", [binary] + common + ["--scheduler-threads", "1"], {}),
        ("weir_1core", "weir sched 1, OMP_NUM_THREADS=1", "weir",
         [binary] + common + ["--scheduler-threads", "1"], {"OMP_NUM_THREADS": "1"}),
    ]
    script = os.path.join(ROOT, "bench", "pytorch_mlp.py")
    for name in args.torch_configs:
        threads, blas, policy = TORCH_CONFIGS[name]
        argv = [args.python, script] + common + ["--torch-threads", str(threads), "--blas-threads", str(blas)]
        if policy:
            argv += ["--omp-wait-policy", policy]
        configs.append((f"torch_{name}", torch_label(name), "torch", argv, {}))
    return configs


def busy_seconds():
    """CPU time all processes used so far (from /proc/stat), in seconds, or None."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(value) for value in stat.readline().split()[1:]]
    except OSError:
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    guest = sum(fields[8:10]) if len(fields) > 9 else 0  # already counted in user and nice
    return (sum(fields) - idle - guest) / os.sysconf("SC_CLK_TCK")


def wait_for_quiet(max_foreign, deadline):
    """Waits until 2 s pass with less than `max_foreign` cores busy, or until `deadline`."""
    while time.monotonic() < deadline:
        before = busy_seconds()
        time.sleep(2)
        after = busy_seconds()
        if before is None or after is None or (after - before) / 2 < max_foreign:
            return


def run_one(argv, extra_env, timeout):
    """Runs one process; returns its JSON figures plus wall time, CPU use, peak RSS and foreign load.

    The child is reaped with os.wait4, as /usr/bin/time does, so its CPU time and peak RSS are its
    own (RUSAGE_CHILDREN's ru_maxrss is only the largest child so far).
    """
    env = {key: value for key, value in os.environ.items() if key not in THREAD_VARIABLES}
    env.update(extra_env)
    busy_before = busy_seconds()
    start = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    killer = threading.Timer(timeout, process.kill)
    killer.start()
    try:
        output = process.stdout.read()  # stderr is merged into it: one pipe, no deadlock
        _, status, usage = os.wait4(process.pid, 0)
    finally:
        killer.cancel()
        process.stdout.close()
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - start
    busy_after = busy_seconds()
    text = output.decode(errors="replace")
    command = " ".join(argv)
    if process.returncode != 0:
        why = f"was killed after {timeout} s" if wall >= timeout else f"exited with {process.returncode}"
        sys.exit(f"compare_mlp_train: {command} {why}:\n{text[-3000:]}")
    lines = [line for line in text.splitlines() if line.startswith("{")]
    if not lines:
        sys.exit(f"compare_mlp_train: no JSON line from {command}:\n{text[-3000:]}")
    figures = json.loads(lines[-1])
    cpu = usage.ru_utime + usage.ru_stime
    figures["wall_s"] = wall
    figures["cores"] = cpu / wall
    figures["peak_rss_mb"] = usage.ru_maxrss / 1024.0  # KiB on Linux
    if busy_before is not None and busy_after is not None:
        figures["foreign_cores"] = max(0.0, (busy_after - busy_before - cpu) / wall)
    return figures


def main():
    args = parse_args()
    configs = configurations(args)
    samples = {key: [] for key, *_ in configs}
    print(f"mlp train/inference, batch 100: {len(configs)} configurations x {args.reps} processes, "
          f"{args.steps} steps x {args.repeats} runs per process, in alternating order", flush=True)
    quiet_deadline = time.monotonic() + args.quiet_budget
    retried = 0
    for rep in range(args.reps):
        # Rotate the order each round so that slow drifts of the machine hit every configuration.
        order = configs[rep % len(configs):] + configs[:rep % len(configs)]
        for key, label, _, argv, extra_env in order:
            figures = None
            for _ in range(args.retries + 1):
                wait_for_quiet(args.max_foreign, min(quiet_deadline, time.monotonic() + QUIET_WAIT_MAX_S))
                tried = run_one(argv, extra_env, args.timeout)
                if figures is None or tried.get("foreign_cores", 0) < figures.get("foreign_cores", 0):
                    figures = tried
                if figures.get("foreign_cores", 0) <= args.max_foreign or time.monotonic() >= quiet_deadline:
                    break
                retried += 1
            samples[key].append(figures)
            print(f"  round {rep + 1}/{args.reps}  {label:<34} train {figures['train_steps_per_s']:8.1f}/s  "
                  f"infer {figures['infer_calls_per_s']:8.1f}/s  foreign {figures.get('foreign_cores', 0):.2f} cores",
                  flush=True)

    def median(key, field):
        values = [figures[field] for figures in samples[key] if field in figures]
        return statistics.median(values) if values else None

    print()
    header = (f"{'configuration':<36} {'train/s':>9} {'ms/step':>8} {'async/s':>9} {'ms/step':>8} "
              f"{'infer/s':>9} {'ms/call':>8} {'RSS MB':>7} {'cores':>6} {'foreign':>8}")
    print(header)
    print("-" * len(header))

    def cell(value, width, digits):
        return f"{value:>{width}.{digits}f}" if value is not None else f"{'-':>{width}}"

    columns = [("train_steps_per_s", 9, 1), ("train_ms_per_step", 8, 3), ("train_async_steps_per_s", 9, 1),
               ("train_async_ms_per_step", 8, 3), ("infer_calls_per_s", 9, 1), ("infer_ms_per_call", 8, 3),
               ("peak_rss_mb", 7, 0), ("cores", 6, 2), ("foreign_cores", 8, 2)]
    for key, label, *_ in configs:
        print(f"{label:<36} " + " ".join(cell(median(key, field), width, digits) for field, width, digits in columns))

    torch_keys = [key for key, _, kind, *_ in configs if kind == "torch"]
    labels = {key: label for key, label, *_ in configs}
    best_train = max(torch_keys, key=lambda key: median(key, "train_steps_per_s"))
    best_infer = max(torch_keys, key=lambda key: median(key, "infer_calls_per_s"))

    def ratio(weir_key, torch_key, field):
        return median(weir_key, field) / median(torch_key, field)

    result = {
        "mlp_train_ratio": ratio("weir", best_train, "train_steps_per_s"),
        "mlp_infer_ratio": ratio("weir", best_infer, "infer_calls_per_s"),
        "mlp_train_ratio_1thread": ratio("weir_1core", "torch_t1b1", "train_steps_per_s"),
        "mlp_infer_ratio_1thread": ratio("weir_1core", "torch_t1b1", "infer_calls_per_s"),
        "mlp_train_async_ratio": median("weir", "train_async_steps_per_s") / median(best_train, "train_steps_per_s"),
        "mlp_train_ratio_sched1": ratio("weir_sched1", best_train, "train_steps_per_s"),
        "weir_train_steps_per_s": median("weir", "train_steps_per_s"),
        "weir_train_async_steps_per_s": median("weir", "train_async_steps_per_s"),
        "weir_infer_calls_per_s": median("weir", "infer_calls_per_s"),
        "weir_sched1_train_steps_per_s": median("weir_sched1", "train_steps_per_s"),
        "weir_1core_train_steps_per_s": median("weir_1core", "train_steps_per_s"),
        "weir_1core_infer_calls_per_s": median("weir_1core", "infer_calls_per_s"),
        "torch_best_train_steps_per_s": median(best_train, "train_steps_per_s"),
        "torch_best_train_config": labels[best_train],
        "torch_best_infer_calls_per_s": median(best_infer, "infer_calls_per_s"),
        "torch_best_infer_config": labels[best_infer],
        "torch_1thread_train_steps_per_s": median("torch_t1b1", "train_steps_per_s"),
        "torch_1thread_infer_calls_per_s": median("torch_t1b1", "infer_calls_per_s"),
        "weir_peak_rss_mb": median("weir", "peak_rss_mb"),
        "torch_best_peak_rss_mb": median(best_train, "peak_rss_mb"),
        "max_foreign_cores": max((f.get("foreign_cores", 0.0) for s in samples.values() for f in s), default=0.0),
        "retried_processes": retried,
        "reps": args.reps, "steps": args.steps, "repeats": args.repeats,
    }
    print()
    print(f"PyTorch best: train {labels[best_train]}, inference {labels[best_infer]}")
    print(f"Weir / PyTorch best (steps/s; > 1 = Weir faster): train {result['mlp_train_ratio']:.3f} "
          f"(async {result['mlp_train_async_ratio']:.3f}, "
          f"--scheduler-threads 1 {result['mlp_train_ratio_sched1']:.3f}), inference {result['mlp_infer_ratio']:.3f}")
    print(f"Weir 1 core / PyTorch 1 thread: train {result['mlp_train_ratio_1thread']:.3f}, "
          f"inference {result['mlp_infer_ratio_1thread']:.3f}")
    if result["max_foreign_cores"] > args.max_foreign:
        print(f"note: other processes used up to {result['max_foreign_cores']:.2f} cores during kept runs "
              f"(re-runs: {retried}); the figures are noisy")
    print(json.dumps({key: round(value, 4) if isinstance(value, float) else value for key, value in result.items()}))


if __name__ == "__main__":
    main()
