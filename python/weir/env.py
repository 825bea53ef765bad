"""``flow.env``: the process environment (machines and ports). Weir runs on one machine for
now; the single-machine settings are accepted."""

from __future__ import annotations

__all__ = ["machine", "ctrl_port", "data_port", "log_dir", "logtostderr", "logbuflevel", "init",
           "grpc_use_no_signal", "current_resource"]

_env = {"machines": [{"addr": "127.0.0.1"}]}


def machine(*nodes):
    if len(nodes) == 1 and isinstance(nodes[0], (list, tuple)):
        nodes = tuple(nodes[0])
    if len(nodes) > 1:
        raise NotImplementedError("flow.env.machine: multi-machine runs come with Weir's multi-device work")
    _env["machines"] = [n if isinstance(n, dict) else {"addr": n} for n in nodes]


def ctrl_port(val):
    _env["ctrl_port"] = int(val)


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
    return {"machine_num": 1, "cpu_device_num": session.devices(), "gpu_device_num": 0}
