"""``flow.env``: the process environment (machines and ports). ``flow.env.machine([...])`` with
several machines makes the session span them, one process per machine, as OneFlow does: the same
script started on every machine, machine 0 the master at ``flow.env.ctrl_port(p)`` (default 29500).
A machine finds its rank from WEIR_NODE_RANK, or else from which listed address is its own.
weir-launch's environment (WORLD_SIZE, ...) takes precedence when set (docs/distributed.md)."""

from __future__ import annotations

import os
import socket

__all__ = ["machine", "ctrl_port", "data_port", "log_dir", "logtostderr", "logbuflevel", "init",
           "grpc_use_no_signal", "current_resource"]

_env = {"machines": [{"addr": "127.0.0.1"}]}


def machine(*nodes):
    """The machines of the job: addresses, or OneFlow's ``{"addr": ...}`` dicts, in rank order."""
    if len(nodes) == 1 and isinstance(nodes[0], (list, tuple)):
        nodes = tuple(nodes[0])
    if not nodes:
        raise ValueError("flow.env.machine: expected at least one machine address, got none")
    machines = []
    for i, node in enumerate(nodes):
        addr = node.get("addr") if isinstance(node, dict) else node
        if not isinstance(addr, str) or not addr:
            raise ValueError(f"flow.env.machine: machine {i}: expected an address string or {{'addr': ...}}, got {node!r}")
        machines.append({"addr": addr})
    _env["machines"] = machines


def ctrl_port(val):
    if isinstance(val, bool) or not isinstance(val, int) or not 1 <= val <= 65535:
        raise ValueError(f"flow.env.ctrl_port: expected a port in 1..65535, got {val!r}")
    _env["ctrl_port"] = val


def machines() -> list:
    """The addresses flow.env.machine set (one: this machine alone)."""
    return [m["addr"] for m in _env["machines"]]


def control_port() -> int:
    return _env.get("ctrl_port", 29500)


def _is_own_address(addr: str) -> bool:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind((socket.gethostbyname(addr), 0))  # only an address of this machine binds
        return True
    except OSError:
        return False


def node_rank() -> int:
    """This machine's rank among flow.env.machine's: WEIR_NODE_RANK, or the one listed address that is
    this machine's own. Raises ValueError when neither decides."""
    listed = machines()
    text = os.environ.get("WEIR_NODE_RANK", "")
    if text != "":
        if not text.isdigit() or int(text) >= len(listed):
            raise ValueError(f"environment variable WEIR_NODE_RANK: expected an integer in [0, {len(listed) - 1}], "
                             f"got {text!r}")
        return int(text)
    own = [i for i, addr in enumerate(listed) if _is_own_address(addr)]
    if len(own) != 1:
        raise ValueError(
            f"flow.env.machine({listed}): cannot tell this machine's rank: "
            + ("none of the addresses is this machine's" if not own else
               f"addresses {[listed[i] for i in own]} are all this machine's")
            + "; set WEIR_NODE_RANK")
    return own[0]


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


def current_resource():
    """What the default session has (or will have when it starts): machines, devices and threads."""
    from weir import _session

    session = _session.default_session()
    if session.started:
        return session.c_session().resource()
    return {"machine_num": _session.machines_spanned(), "cpu_device_num": session.devices(), "gpu_device_num": 0}


def visible_gpus() -> int:
    """The GPUs a session could use: CUDA devices visible to this process (0 in a build without
    CUDA). ``flow.config.gpu_device_num(1)`` runs jobs on one of them; otherwise on the CPU."""
    from weir import _C

    return _C.visible_gpus()


def supported_ops(device: str = "cpu") -> dict:
    """The ops with a kernel for ``device`` ("cpu" or "gpu") in this build, each with its dtypes
    (``{"matmul": ["f32", "f64"], ...}``). "gpu" lists the CUDA kernels built in, whether or not a
    GPU is visible; an op missing there cannot run on a GPU yet."""
    from weir import _C

    if device not in ("cpu", "gpu"):
        raise ValueError(f"weir.supported_ops: device must be 'cpu' or 'gpu', got {device!r}")
    return _C.supported_ops(device)
