"""The machines a session spans, as ``flow.env.machine`` and ``flow.env.ctrl_port`` set them, and this
machine's rank among them (flow.env re-exports these; the session reads them)."""

from __future__ import annotations

import os
import socket

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
