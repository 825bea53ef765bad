"""Shared by the benchmark drivers (compare_pytorch.py, async_pipeline.py): run a benchmark
program as its own process on this shared, noisy machine and collect what it reports.

Per process: its last JSON line, plus wall time, CPU use (cores = CPU time / wall time), peak RSS,
and the CPU that other processes used meanwhile ("foreign" cores, from /proc/stat). As in
shared/reference/pytorch_cpu_anchors.md, a process starts only after a quiet spell and is re-run
when the foreign load exceeded the threshold (the quietest try is kept), within a time budget.
"""
import json
import os
import statistics
import subprocess
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Removed from every child's environment, so each sees only its configuration's settings.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY",
                    "GOMP_SPINCOUNT", "OMP_PROC_BIND", "OMP_PLACES", "DNNL_MAX_CPU_ISA")
QUIET_WAIT_MAX_S = 60  # the longest wait for a quiet machine before one process


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


def run_process(argv, extra_env=None, timeout=600, need_json=True):
    """Runs one process; returns its last JSON line's figures plus wall_s, cores, peak_rss_mb,
    foreign_cores. Raises ProcessFailed with the output's tail when it fails.

    The child is reaped with os.wait4, as /usr/bin/time does, so its CPU time and peak RSS are its
    own (RUSAGE_CHILDREN's ru_maxrss is only the largest child so far).
    """
    env = {key: value for key, value in os.environ.items() if key not in THREAD_VARIABLES}
    env.update(extra_env or {})
    busy_before = busy_seconds()
    start = time.monotonic()
    try:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
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
    cpu = usage.ru_utime + usage.ru_stime
    figures["wall_s"] = wall
    figures["cores"] = cpu / wall
    figures["peak_rss_mb"] = usage.ru_maxrss / 1024.0  # KiB on Linux
    if busy_before is not None and busy_after is not None:
        figures["foreign_cores"] = max(0.0, (busy_after - busy_before - cpu) / wall)
    return figures


class QuietRunner:
    """Runs processes only on a quiet machine, re-running those that other processes disturbed."""

    def __init__(self, max_foreign, retries, quiet_budget, timeout):
        self.max_foreign = max_foreign
        self.retries = retries
        self.timeout = timeout
        self.deadline = time.monotonic() + quiet_budget
        self.retried = 0
        self.max_kept_foreign = 0.0

    def run(self, argv, extra_env=None, need_json=True):
        figures = None
        for _ in range(self.retries + 1):
            wait_for_quiet(self.max_foreign, min(self.deadline, time.monotonic() + QUIET_WAIT_MAX_S))
            tried = run_process(argv, extra_env, self.timeout, need_json)
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


def rounded(result, digits=4):
    return {key: round(value, digits) if isinstance(value, float) else value for key, value in result.items()}
