"""``flow.config``: the session's resources, set before the session starts (its first job call
or checkpoint call). ``cpu_device_num(n)`` gives the session n CPU devices, each with its share of
the cores; without CUDA kernels, ``gpu_device_num(n)`` gives n CPU devices (one notice says so)."""

from __future__ import annotations

import sys

from weir import _session

__all__ = [
    "gpu_device_num", "cpu_device_num", "machine_num", "compute_thread_pool_size", "enable_debug_mode",
    "enable_legacy_model_io", "legacy_model_io_enabled", "load_library", "load_library_now", "watchdog_timeout", "collective_timeout",
    "collective_boxing", "enable_tensor_float_32_compute",
]


def _config(what: str):
    session = _session.default_session()
    if session.started:
        print(f"weir: flow.config.{what} ignored: the session is already running "
              "(call it before the first job call, or after flow.clear_default_session())", file=sys.stderr)
        return None
    return session.config


def _count(value, what):
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"flow.config.{what}: expected an int >= 0, got {value!r}")
    return value


def gpu_device_num(val):
    """GPUs per process. n run the session's jobs on GPUs 0..n-1 when the build has CUDA and they are
    visible (``weir.visible_gpus()``): data parallel, consistent and pipelined jobs place their ops on
    them as on CPU devices, with copies between the GPUs. Under weir-launch each process uses GPUs
    LOCAL_RANK * n onwards, with NCCL between the processes. Otherwise the session gets that many CPU
    devices instead, with one notice saying why."""
    config = _config("gpu_device_num")
    if config is not None:
        config.gpu_device_num = _count(val, "gpu_device_num")


def cpu_device_num(val):
    count = _count(val, "cpu_device_num")
    if count < 1:
        raise ValueError(f"flow.config.cpu_device_num: expected an int >= 1 (a session runs on at least one CPU "
                         f"device), got {val!r}")
    config = _config("cpu_device_num")
    if config is not None:
        config.cpu_device_num = count


def machine_num(val):
    """The machines the session spans, as OneFlow checks it: when the session starts, it must be the
    number it runs on (``flow.env.machine``'s list, or weir-launch's ``--nnodes``)."""
    if isinstance(val, bool) or not isinstance(val, int) or val < 1:
        raise ValueError(f"flow.config.machine_num: expected an int >= 1, got {val!r}")
    config = _config("machine_num")
    if config is not None:
        config.machine_num = val


def compute_thread_pool_size(val):
    """Threads of the actor scheduler (0 or unset: Weir decides from the core count)."""
    config = _config("compute_thread_pool_size")
    if config is not None:
        config.compute_thread_pool_size = _count(val, "compute_thread_pool_size")


def watchdog_timeout(seconds):
    """Weir's own: when calls are in flight and no actor has fired for this many seconds, the
    watchdog prints what every job waits for (``weir.describe_state()``), once per stall; 0 turns it
    off. Default 300."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
        raise ValueError(f"flow.config.watchdog_timeout: expected a number of seconds >= 0, got {seconds!r}")
    config = _config("watchdog_timeout")
    if config is not None:
        config.watchdog_timeout = float(seconds)


def collective_timeout(seconds):
    """Weir's own: in a session of several processes, a collective between them that does not complete
    within this many seconds (a rank that hangs) fails the call, naming the collective. Default 180."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
        raise ValueError(f"flow.config.collective_timeout: expected a number of seconds > 0, got {seconds!r}")
    config = _config("collective_timeout")
    if config is not None:
        config.collective_timeout = float(seconds)


def stream_graphs(val=True):
    """Weir's own: on a GPU, the kernels of a job run as one CUDA graph, captured once and replayed
    per call (and as one actor on any device stream). On by default; off runs an actor per kernel,
    each launched on its own."""
    if not isinstance(val, bool):
        raise ValueError(f"flow.config.stream_graphs: expected True or False, got {val!r}")
    config = _config("stream_graphs")
    if config is not None:
        config.stream_graphs = val


def commit_before_writes(val=True):
    """Weir's own: a train call that fails (a label or an index out of range) writes no variable, the
    train step included, so a retried batch trains once and learning-rate schedules do not drift. The
    optimizer's updates wait for a commit that the rest of the call reaches first. On a GPU the failure
    is found by the device, so the commit costs one hand-off to the host before each step's updates (the
    step's CUDA graph becomes two). On by default; off saves that hand-off, and a failed call on a GPU
    may then have applied its updates."""
    if not isinstance(val, bool):
        raise ValueError(f"flow.config.commit_before_writes: expected True or False, got {val!r}")
    config = _config("commit_before_writes")
    if config is not None:
        config.commit_before_writes = val


def enable_tensor_float_32_compute(val=True):
    """As OneFlow's: on a GPU with TF32 tensor cores (Ampere and later), float32 matmuls and
    convolutions may round their operands to TF32 (10 bits of mantissa) and accumulate in float32:
    several times faster, results within about 1e-3 relative of float32's. Weir leaves it off unless
    asked (OneFlow turns it on), so that results agree with the CPU's to rounding."""
    if not isinstance(val, bool):
        raise ValueError(f"flow.config.enable_tensor_float_32_compute: expected True or False, got {val!r}")
    config = _config("enable_tensor_float_32_compute")
    if config is not None:
        config.tensor_float_32 = val


def copy_stream_threshold_mb(mb=1.0):
    """Weir's own: on a GPU, a call input or result of at most this many MiB moves on the GPU's compute
    stream, in the job's CUDA graph; a larger one on copy streams of its own, so that the next call's
    copy overlaps this call's kernels. 0 puts every copy on the copy streams. Default 1."""
    if isinstance(mb, bool) or not isinstance(mb, (int, float)) or not 0 <= mb <= 1 << 20:
        raise ValueError(f"flow.config.copy_stream_threshold_mb: expected a number of MiB in [0, 1048576], got {mb!r}")
    config = _config("copy_stream_threshold_mb")
    if config is not None:
        config.copy_stream_threshold_mb = float(mb)


class _CollectiveBoxing:
    """``flow.config.collective_boxing``: how collectives between processes are batched. A mirrored
    job's gradients are averaged across the processes in buckets (OneFlow's fusion), one collective
    per bucket: a bucket closes once it holds ``nccl_fusion_threshold_mb`` MiB (default 16; the first
    bucket of a call at 1 MiB, so that it starts early in the backward pass), as PyTorch DDP's do. The
    threshold applies to every backend (shared memory, Gloo, NCCL). OneFlow's other knobs here are
    accepted and recorded."""

    def enable_fusion(self, val=True):
        """Buckets on (the default) or off (one collective per gradient)."""
        if not isinstance(val, bool):
            raise ValueError(f"flow.config.collective_boxing.enable_fusion: expected True or False, got {val!r}")
        config = _config("collective_boxing.enable_fusion")
        if config is not None:
            config.enable_fusion = val

    def nccl_fusion_threshold_mb(self, val):
        """The bytes at which a bucket closes, in MiB; 0 turns fusion off."""
        if isinstance(val, bool) or not isinstance(val, (int, float)) or not 0 <= val <= 1 << 20:
            raise ValueError("flow.config.collective_boxing.nccl_fusion_threshold_mb: expected a number of MiB in "
                             f"[0, 1048576], got {val!r}")
        config = _config("collective_boxing.nccl_fusion_threshold_mb")
        if config is not None:
            config.fusion_threshold_mb = float(val)

    def __getattr__(self, name):
        return _recorder(f"collective_boxing.{name}")


collective_boxing = _CollectiveBoxing()


def enable_debug_mode(val=True):
    config = _config("enable_debug_mode")
    if config is not None:
        config.options["enable_debug_mode"] = bool(val)


_legacy_model_io = [False]


def enable_legacy_model_io(val=True):
    """Accepted for OneFlow 0.3 programs; both checkpoint APIs work either way."""
    _legacy_model_io[0] = bool(val)


def legacy_model_io_enabled() -> bool:
    return _legacy_model_io[0]


def load_library(val):
    raise NotImplementedError(
        f"flow.config.load_library({val!r}): custom op libraries are OneFlow binaries; "
        "Weir ops are C++ registered in src/graph/ops"
    )


load_library_now = load_library


def _recorder(name):
    """A setter for a documented knob Weir has no use for: accepted and recorded."""
    if name.rsplit(".", 1)[-1].startswith("__"):
        raise AttributeError(name)

    def setter(val=True):
        config = _config(name)
        if config is not None:
            config.options[name] = val

    return setter


def __getattr__(name):
    # Every other documented knob (rdma, ...) is accepted and recorded.
    return _recorder(name)
