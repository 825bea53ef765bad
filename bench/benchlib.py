"""Shared by the benchmark drivers (compare_pytorch.py, async_pipeline.py, data_parallel.py): run a
benchmark program as its own process on this shared, noisy machine and collect what it reports.

Per process: its last JSON line, plus wall time, CPU use (cores = CPU time / wall time), peak RSS,
the CPU that other processes used meanwhile ("foreign" cores, from /proc/stat), and the OpenBLAS
core type when the process loaded OpenBLAS with OPENBLAS_VERBOSE=2 ("Core: <name>"). A process
starts only after a quiet spell (the machine is shared: another tenant's load moves figures) and is re-run
when the foreign load exceeded the threshold (the quietest try is kept), within a time budget. A
process can be pinned to chosen cores (CPU affinity, set before it starts any thread) and can run
with variables removed from its environment (the OpenBLAS hints, see OPENBLAS_HINTS).

Also the workers that the drivers run as processes of their own, with Debian's /usr/bin/python3
(numpy; torch for torch-check):

  /usr/bin/python3 bench/benchlib.py sgemm --threads 1|2 [--keep-openblas-hints]
      The hardware limit: numpy -> OpenBLAS float32 sgemm 2048^3, checked against float64, then 5
      blocks of >= 0.5 s; reports the median and best GFLOP/s.
  /usr/bin/python3 bench/benchlib.py torch-check --threads 1|2 [--keep-openblas-hints]
      PyTorch's float32 results on the benchmarks' shapes (the MLP's and LeNet's matmuls against a
      float64 reference computed without BLAS, and both models' forward and backward against the
      same models in float64); reports the largest relative error.
Both run with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed unless --keep-openblas-hints, and with
OPENBLAS_VERBOSE=2 so that the core type OpenBLAS picked shows in their output. Last line: JSON.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Removed from every child's environment, so each sees only its configuration's settings.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY",
                    "GOMP_SPINCOUNT", "OMP_PROC_BIND", "OMP_PLACES", "DNNL_MAX_CPU_ISA")
QUIET_WAIT_MAX_S = 60  # the longest wait for a quiet machine before one process
# Set by this workplace for older OpenBLAS builds; they hold OpenBLAS to older kernels (e.g. Haswell's
# on an AVX-512 CPU). The peers' processes run without them once their results are checked.
OPENBLAS_HINTS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
SGEMM_SIZE = 2048
MAX_REL_ERR = 1e-4  # float32 against float64 on the benchmarks' shapes
CORE_LINE = re.compile(r"^Core: (\S+)", re.MULTILINE)  # OpenBLAS at load, with OPENBLAS_VERBOSE=2


class ProcessFailed(Exception):
    """A benchmark process exited with an error, was killed, or printed no JSON line."""


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


def one_core():
    """The set of one core to pin the 1-core configurations to: the first this process may use."""
    return {min(os.sched_getaffinity(0))}


def run_process(argv, extra_env=None, timeout=600, need_json=True, unset=(), cpus=None):
    """Runs one process; returns its last JSON line's figures plus wall_s, cores, peak_rss_mb,
    foreign_cores, and openblas_core when its output has OpenBLAS's "Core: <name>" line. Raises
    ProcessFailed with the output's tail when it fails.

    `unset`: variables removed from the child's environment (after THREAD_VARIABLES, before
    `extra_env`). `cpus`: a set of cores the child (and every thread it starts) is pinned to.
    The child is reaped with os.wait4, as /usr/bin/time does, so its CPU time and peak RSS are its
    own (RUSAGE_CHILDREN's ru_maxrss is only the largest child so far).
    """
    env = {key: value for key, value in os.environ.items() if key not in THREAD_VARIABLES and key not in unset}
    env.update(extra_env or {})
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    busy_before = busy_seconds()
    start = time.monotonic()
    try:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=ROOT,
                                   preexec_fn=pin)
    except OSError as error:
        raise ProcessFailed(f"cannot start {' '.join(argv)}: {error}") from error
    killer = threading.Timer(timeout, process.kill)
    killer.start()
    try:
        output = process.stdout.read()  # stderr is merged into it: one pipe, no deadlock
        _, status, usage = os.wait4(process.pid, 0)
    finally:
        killer.cancel()
        process.stdout.close()
    returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - start
    busy_after = busy_seconds()
    text = output.decode(errors="replace")
    command = " ".join(argv)
    if returncode != 0:
        why = f"was killed after {timeout} s" if wall >= timeout else f"exited with {returncode}"
        raise ProcessFailed(f"{command} {why}:\n{text[-3000:]}")
    lines = [line for line in text.splitlines() if line.startswith("{")]
    if need_json and not lines:
        raise ProcessFailed(f"no JSON line from {command}:\n{text[-3000:]}")
    figures = json.loads(lines[-1]) if lines else {}
    cores = list(dict.fromkeys(CORE_LINE.findall(text)))  # one per OpenBLAS loaded, in order
    if cores:
        figures.setdefault("openblas_core", ",".join(cores))
    cpu = usage.ru_utime + usage.ru_stime
    figures["wall_s"] = wall
    figures["cores"] = cpu / wall
    figures["peak_rss_mb"] = usage.ru_maxrss / 1024.0  # KiB on Linux
    if busy_before is not None and busy_after is not None:
        figures["foreign_cores"] = max(0.0, (busy_after - busy_before - cpu) / wall)
    return figures


def run_ranks(command, ranks, who, timeout=600):
    """Runs `command` as `ranks` ranks of a distributed job on this machine (weir-launch's environment,
    rank r pinned to core r with one intra-op thread) and prints rank 0's output, so that a runner reads
    its JSON line; exits naming `who` when a rank fails."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    cores = sorted(os.sched_getaffinity(0))
    processes = []
    for rank in range(ranks):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(ranks), LOCAL_RANK=str(rank),
                   LOCAL_WORLD_SIZE=str(ranks), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        core = cores[rank % len(cores)]
        processes.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                          preexec_fn=lambda core=core: os.sched_setaffinity(0, {core})))
    outputs = [process.communicate(timeout=timeout)[0] for process in processes]
    if any(process.returncode != 0 for process in processes):
        sys.exit(f"{who}: a rank failed:\n" + "\n".join(output[-2000:] for output in outputs))
    sys.stdout.write(outputs[0])


def add_training_run_args(parser, timeout):
    """The options of the benchmarks that train the seeds' MLP and LeNet in rounds of processes
    (data_parallel.py, multi_process.py); resolve_training_run_args fills in their defaults."""
    parser.add_argument("--models", default="mlp,lenet", help="comma-separated subset of mlp,lenet")
    parser.add_argument("--reps", type=int, default=None, help="processes per configuration (default 3, quick 2)")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs inside a process (default 3, quick 2)")
    parser.add_argument("--steps-mlp", type=int, default=None, help="timed MLP steps per run (default 300, quick 150)")
    parser.add_argument("--steps-lenet", type=int, default=None, help="timed LeNet steps per run (default 15, quick 8)")
    parser.add_argument("--python", default="/usr/bin/python3", help="the Python with torch")
    parser.add_argument("--weir-python", default=os.path.join(ROOT, ".venv", "bin", "python"),
                        help="the Python with weir (make venv)")
    parser.add_argument("--timeout", type=float, default=timeout, help="seconds per process")
    parser.add_argument("--max-foreign", type=float, default=0.15,
                        help="re-run a process when other processes used more cores than this meanwhile")
    parser.add_argument("--retries", type=int, default=None, help="re-runs per process at most (default 2, quick 1)")
    parser.add_argument("--quiet-budget", type=float, default=None,
                        help="seconds in all to wait for a quiet machine and to re-run (default 300, quick 90)")


def resolve_training_run_args(parser, args, models):
    """Checks --models against `models` and fills the defaults that depend on --quick."""
    args.models = [name for name in args.models.split(",") if name]
    if not args.models or any(name not in models for name in args.models):
        parser.error(f"--models: expected a subset of {','.join(models)}, got {','.join(args.models)!r}")
    quick = args.quick
    args.reps = args.reps or (2 if quick else 3)
    args.repeats = args.repeats or (2 if quick else 3)
    args.steps_mlp = args.steps_mlp or (150 if quick else 300)
    args.steps_lenet = args.steps_lenet or (8 if quick else 15)
    args.retries = args.retries if args.retries is not None else (1 if quick else 2)
    args.quiet_budget = args.quiet_budget if args.quiet_budget is not None else (90 if quick else 300)
    if min(args.reps, args.repeats, args.steps_mlp, args.steps_lenet) < 1 or args.retries < 0:
        parser.error("--reps, --repeats and --steps-* must be >= 1, --retries >= 0")


class QuietRunner:
    """Runs processes only on a quiet machine, re-running those that other processes disturbed."""

    def __init__(self, max_foreign, retries, quiet_budget, timeout):
        self.max_foreign = max_foreign
        self.retries = retries
        self.timeout = timeout
        self.deadline = time.monotonic() + quiet_budget
        self.retried = 0
        self.max_kept_foreign = 0.0

    def run(self, argv, extra_env=None, need_json=True, unset=(), cpus=None):
        figures = None
        for _ in range(self.retries + 1):
            wait_for_quiet(self.max_foreign, min(self.deadline, time.monotonic() + QUIET_WAIT_MAX_S))
            tried = run_process(argv, extra_env, self.timeout, need_json, unset, cpus)
            if figures is None or tried.get("foreign_cores", 0) < figures.get("foreign_cores", 0):
                figures = tried
            if figures.get("foreign_cores", 0) <= self.max_foreign or time.monotonic() >= self.deadline:
                break
            self.retried += 1
        self.max_kept_foreign = max(self.max_kept_foreign, figures.get("foreign_cores", 0.0))
        return figures

    def noise_note(self):
        if self.max_kept_foreign > self.max_foreign:
            return (f"note: other processes used up to {self.max_kept_foreign:.2f} cores during kept runs "
                    f"(re-runs: {self.retried}); the figures are noisy")
        return None


def median_of(samples, field):
    """The median of `field` over a list of figure dicts, or None when none has it."""
    values = [figures[field] for figures in samples if figures.get(field) is not None]
    return statistics.median(values) if values else None


def peak_of(samples):
    """The sgemm peak of a set of sgemm processes: the best of their medians, since other load can
    only lower a process's figure (a median over processes let two disturbed ones halve the peak)."""
    values = [figures["gflops_median"] for figures in samples if figures.get("gflops_median") is not None]
    return max(values) if values else None


def rounded(result, digits=4):
    return {key: round(value, digits) if isinstance(value, float) else value for key, value in result.items()}


# --- Workers, each run as a process of its own (see the module's docstring) ---------------------------

def sgemm_argv(python, threads, keep_hints=False):
    """The command that measures the sgemm peak on `threads` threads (a `sgemm` figures line)."""
    return ([python, os.path.abspath(__file__), "sgemm", "--threads", str(threads)]
            + (["--keep-openblas-hints"] if keep_hints else []))


def torch_check_argv(python, threads, keep_hints=False):
    """The command that checks PyTorch's float32 results against float64 (a `torch_check` figures line)."""
    return ([python, os.path.abspath(__file__), "torch-check", "--threads", str(threads)]
            + (["--keep-openblas-hints"] if keep_hints else []))


def worker_environment(threads, keep_hints):
    """Before numpy or torch load OpenBLAS: its threads, the hints removed (or kept), and the core
    type printed at load. Returns the hints the worker runs with."""
    if not keep_hints:
        for name in OPENBLAS_HINTS:
            os.environ.pop(name, None)
    os.environ["OPENBLAS_NUM_THREADS"] = str(threads)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["OPENBLAS_VERBOSE"] = "2"
    return {name: os.environ[name] for name in OPENBLAS_HINTS if name in os.environ}


def sgemm_worker(threads, keep_hints=False):
    """float32 SGEMM GFLOP/s through numpy (OpenBLAS), `threads` threads: checked against float64,
    then 5 blocks of >= 0.5 s."""
    hints = worker_environment(threads, keep_hints)
    import numpy as np  # after the environment is set

    random = np.random.default_rng(3)
    a = random.random((SGEMM_SIZE, SGEMM_SIZE), dtype=np.float32) - 0.5
    b = random.random((SGEMM_SIZE, SGEMM_SIZE), dtype=np.float32) - 0.5
    c = np.empty_like(a)
    np.matmul(a, b, out=c)
    error = float(np.abs(c[:64].astype(np.float64) - a[:64].astype(np.float64) @ b.astype(np.float64)).max()
                  / np.abs(c[:64]).max())
    if error > MAX_REL_ERR:
        sys.exit(f"sgemm: float32 sgemm is off by {error:.2e} (relative) against float64 "
                 f"(OpenBLAS hints {hints or 'unset'})")
    flop = 2.0 * SGEMM_SIZE ** 3
    rates = []
    for _ in range(5):
        calls, start = 0, time.perf_counter()
        while True:
            np.matmul(a, b, out=c)
            calls += 1
            seconds = time.perf_counter() - start
            if seconds >= 0.5:
                break
        rates.append(calls * flop / seconds / 1e9)
    print(f"sgemm {SGEMM_SIZE}^3, OpenBLAS {threads} thread(s), hints {hints or 'unset'}: median "
          f"{statistics.median(rates):.1f}, best {max(rates):.1f} GFLOP/s (5 blocks); max relative error "
          f"{error:.1e} against float64")
    print(json.dumps({"bench": "sgemm", "threads": threads, "size": SGEMM_SIZE,
                      "gflops_median": round(statistics.median(rates), 2), "gflops_best": round(max(rates), 2),
                      "max_rel_err": error, "openblas_hints": hints}))


def torch_check_worker(threads, keep_hints=False):
    """Max relative error of PyTorch's float32 results on the benchmarks' shapes against float64.

    The matmuls of the MLP (784-512-10) and of LeNet's dense layers (3136-512-10) at batch 100, with
    the operand layouts nn.Linear uses (weights transposed), forward and both gradients, against
    numpy.einsum in float64 (its own loops, not BLAS); then both models' logits and parameter
    gradients (LeNet NCHW and channels_last) against the same models in float64.
    """
    hints = worker_environment(threads, keep_hints)
    import copy

    import numpy as np
    import torch
    from torch import nn

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from pytorch_models import BATCH, build_model

    torch.set_num_threads(threads)
    torch.manual_seed(11)
    checks = {}

    def relative(result, exact):
        result, exact = np.asarray(result, dtype=np.float64), np.asarray(exact, dtype=np.float64)
        return float(np.abs(result - exact).max() / np.abs(exact).max())

    # (name, A's shape as stored, A used transposed, B's shape as stored, B used transposed)
    matmuls = []
    for tag, (inputs, hidden, outputs) in (("mlp", (784, 512, 10)), ("lenet fc", (3136, 512, 10))):
        matmuls += [
            (f"{tag} fwd1 {BATCH}x{inputs}x{hidden}", (BATCH, inputs), False, (hidden, inputs), True),
            (f"{tag} fwd2 {BATCH}x{hidden}x{outputs}", (BATCH, hidden), False, (outputs, hidden), True),
            (f"{tag} dX2 {BATCH}x{outputs}x{hidden}", (BATCH, outputs), False, (outputs, hidden), False),
            (f"{tag} dW2 {outputs}x{BATCH}x{hidden}", (BATCH, outputs), True, (BATCH, hidden), False),
            (f"{tag} dW1 {hidden}x{BATCH}x{inputs}", (BATCH, hidden), True, (BATCH, inputs), False),
        ]
        if tag != "mlp":
            matmuls.append((f"{tag} dX1 {BATCH}x{hidden}x{inputs}", (BATCH, hidden), False, (hidden, inputs), False))
    for name, a_shape, a_t, b_shape, b_t in matmuls:
        a = torch.rand(a_shape) - 0.5
        b = torch.rand(b_shape) - 0.5
        a, b = (a.t() if a_t else a), (b.t() if b_t else b)
        exact = np.einsum("ik,kj->ij", a.double().numpy(), b.double().numpy())
        checks[f"matmul {name}"] = relative((a @ b).numpy(), exact)

    for model_name, channels_last in (("mlp", False), ("lenet", False), ("lenet", True)):
        model = build_model(model_name, nn)
        exact_model = copy.deepcopy(model).double()
        images = torch.rand(BATCH, 1, 28, 28)
        labels = torch.randint(0, 10, (BATCH,))
        if channels_last:
            model = model.to(memory_format=torch.channels_last)
            images32 = images.contiguous(memory_format=torch.channels_last)
        else:
            images32 = images
        results = []
        for net, x in ((model, images32), (exact_model, images.double())):
            logits = net(x)
            nn.CrossEntropyLoss()(logits, labels).backward()
            results.append([logits.detach()] + [p.grad for p in net.parameters()])
        tag = model_name + (" channels_last" if channels_last else "")
        names = ["logits"] + [name for name, _ in model.named_parameters()]
        for name, result, exact in zip(names, *results):
            checks[f"{tag} {name}{'' if name == 'logits' else ' grad'}"] = relative(result.numpy(), exact.numpy())

    worst = max(checks, key=checks.get)
    print(f"torch {torch.__version__}, OpenBLAS {threads} thread(s), hints {hints or 'unset'}: "
          f"{len(checks)} checks against float64, max relative error {checks[worst]:.1e} ({worst})")
    print(json.dumps({"bench": "torch_check", "threads": threads, "max_rel_err": checks[worst], "worst": worst,
                      "openblas_hints": hints, "checks": {name: float(f"{value:.3g}") for name, value in checks.items()}}))


def main():
    parser = argparse.ArgumentParser(description="benchmark workers (see bench/benchlib.py's docstring)")
    parser.add_argument("worker", choices=["sgemm", "torch-check"])
    parser.add_argument("--threads", type=int, default=1, help="OpenBLAS (and torch) threads")
    parser.add_argument("--keep-openblas-hints", action="store_true",
                        help=f"keep {' and '.join(OPENBLAS_HINTS)} from the environment (default: remove them)")
    args = parser.parse_args()
    if args.threads < 1:
        parser.error("--threads must be >= 1")
    if args.worker == "sgemm":
        sgemm_worker(args.threads, args.keep_openblas_hints)
    else:
        torch_check_worker(args.threads, args.keep_openblas_hints)


if __name__ == "__main__":
    main()
