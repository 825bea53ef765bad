"""``flow.env``: the process environment (machines and ports). ``flow.env.machine([...])`` with
several machines makes the session span them, one process per machine, as OneFlow does: the same
script started on every machine, machine 0 the master at ``flow.env.ctrl_port(p)`` (default 29500).
A machine finds its rank from WEIR_NODE_RANK, or else from which listed address is its own.
weir-launch's environment (WORLD_SIZE, ...) takes precedence when set (docs/distributed.md)."""

from __future__ import annotations

from weir import _C, _session
from weir._machines import _env, control_port, ctrl_port, machine, machines, node_rank  # noqa: F401

__all__ = ["machine", "ctrl_port", "data_port", "log_dir", "logtostderr", "logbuflevel", "init",
           "grpc_use_no_signal", "current_resource"]

def data_port(val):
    _env["data_port"] = int(val)


def log_dir(val):
    _env["log_dir"] = str(val)


def logtostderr(val):
    _env["logtostderr"] = int(val)


def logbuflevel(val):
    _env["logbuflevel"] = int(val)


def grpc_use_no_signal(val=True):
    pass  # deprecated no-op in OneFlow too


def init():
    return True


def visible_gpus() -> int:
    """The GPUs a session could use: CUDA devices visible to this process (0 in a build without
    CUDA). ``flow.config.gpu_device_num(1)`` runs jobs on one of them; otherwise on the CPU."""
    return _C.visible_gpus()


def supported_ops(device: str = "cpu") -> dict:
    """The ops with a kernel for ``device`` ("cpu" or "gpu") in this build, each with its dtypes
    (``{"matmul": ["f32", "f64"], ...}``). "gpu" lists the CUDA kernels built in, whether or not a
    GPU is visible; an op missing there cannot run on a GPU yet. The data pipeline's ops (readers,
    decoders, image ops) are listed for "gpu" too: a GPU job runs them on the host."""
    if device not in ("cpu", "gpu"):
        raise ValueError(f"weir.supported_ops: device must be 'cpu' or 'gpu', got {device!r}")
    return _C.supported_ops(device)


def current_resource():
    """What the default session has (or will have when it starts): machines, devices and threads."""
    return _session.current_resource()
