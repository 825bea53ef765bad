"""``flow.scope``: placement, logical views and name spaces. Ops created inside
``flow.scope.placement(tag, "0:0-1")`` run on those devices of the session (checked when the job
compiles). In a session with a GPU (``flow.config.gpu_device_num(1)``, a CUDA build, a GPU visible)
jobs run on it, except those placed on the CPU only; without one, "gpu" placements run on CPU
devices (as OneFlow's CPU-only builds do), so programs written for GPUs run unchanged."""

from __future__ import annotations

import re
import threading
import types
from contextlib import contextmanager

from weir import _context

__all__ = [
    "placement", "mirrored_view", "consistent_view", "mirrored_view_enabled", "consistent_view_enabled",
    "namespace", "current_scope",
]

_ID = re.compile(r"^\d+:\d+(-\d+)?$")
_local = threading.local()


class PlacementScope:
    """Where the ops created inside it run: a device tag and "machine:device[-last]" ids."""

    def __init__(self, device_tag: str, machine_device_ids):
        if device_tag not in ("cpu", "gpu"):
            raise ValueError(f"flow.scope.placement: device_tag must be 'cpu' or 'gpu', got {device_tag!r}")
        ids = [machine_device_ids] if isinstance(machine_device_ids, str) else list(machine_device_ids)
        for item in ids:
            if not isinstance(item, str) or not _ID.match(item):
                raise ValueError(
                    f"flow.scope.placement: machine_device_ids entries look like '0:0' or '0:0-3', got {item!r}"
                )
        self.requested_device_tag = device_tag
        self.machine_device_ids = ids

    @property
    def default_device_tag(self) -> str:
        """The device tag the placement asks for ("gpu" runs on CPU devices in a session without GPUs)."""
        return self.requested_device_tag

    def devices_on(self, machine: int) -> int:
        """How many of its devices are on `machine` (ids "machine:first[-last]")."""
        return len(self.device_ids_on(machine))

    def device_ids_on(self, machine: int) -> list:
        """The device ids it names on `machine`."""
        ids = []
        for item in self.machine_device_ids:
            on, devices = item.split(":")
            if int(on) == machine:
                first, _, last = devices.partition("-")
                ids.extend(range(int(first), int(last or first) + 1))
        return ids

    @property
    def device_parallel_desc_symbol(self):
        """OneFlow's parallel description of the placement (``flow.current_scope().device_parallel_desc_symbol``):
        ``device_tag``, ``parallel_num`` (how many devices) and ``machine_id2device_id_list``."""
        machines = sorted({int(item.split(":")[0]) for item in self.machine_device_ids})
        devices = {machine: self.device_ids_on(machine) for machine in machines}
        return types.SimpleNamespace(device_tag=self.requested_device_tag, machine_id2device_id_list=devices,
                                     parallel_num=sum(len(ids) for ids in devices.values()))

    def push_to(self, builder) -> None:
        """Places the ops ``builder`` gets from now on (until ``builder.pop_placement()``)."""
        builder.push_placement(self.requested_device_tag, self.machine_device_ids)

    def __enter__(self):
        stack = getattr(_local, "placements", None)
        if stack is None:
            stack = _local.placements = []
        # Inside a job function's body the scope places that job's ops; elsewhere it is recorded only.
        context = _context.maybe_current()
        builder = context.builder if context is not None else None
        if builder is not None:
            self.push_to(builder)
            if self.requested_device_tag == "cpu":
                # A one-process session with no device count set gets the CPU devices its jobs name.
                session = context.session
                session.cpu_devices_named = max([session.cpu_devices_named, *(d + 1 for d in self.device_ids_on(0))])
        stack.append((self, builder))
        return self

    def __exit__(self, *exc):
        _, builder = _local.placements.pop()
        if builder is not None:
            builder.pop_placement()
        return False

    def __repr__(self) -> str:
        return f"placement({self.requested_device_tag!r}, {self.machine_device_ids!r})"


def placement(device_tag, machine_device_ids, hierarchy=None):
    """Places the ops created inside on `machine_device_ids` ("machine:device[-last]") of `device_tag`.
    `hierarchy` (OneFlow 0.4's device hierarchy for 2-D layouts) may be None or one-dimensional (a
    hierarchy whose axes are all 1 but one): Weir lays tensors out over a flat list of devices."""
    if hierarchy is not None:
        try:
            sizes = [int(d) for d in hierarchy]
        except TypeError:
            raise TypeError(f"flow.scope.placement: hierarchy must be None or a sequence of ints, got {hierarchy!r}") from None
        if sum(1 for d in sizes if d != 1) > 1:
            raise NotImplementedError(
                f"flow.scope.placement: hierarchy {tuple(sizes)} is 2-D; Weir places over a flat list of devices "
                "(give None or a 1-D hierarchy)")
    return PlacementScope(device_tag, machine_device_ids)


def current_scope():
    """The innermost flow.scope.placement; outside any, the job's (_job_placement). Outside a job
    function, cpu "0:0"."""
    stack = getattr(_local, "placements", None)
    if stack:
        return stack[-1][0]
    context = _context.maybe_current()
    return PlacementScope("cpu", "0:0") if context is None else _job_placement(context)


def _job_placement(context):
    """Where the ops of the job being traced run outside any flow.scope.placement: its
    function_config's default_placement_scope, else every device of its session (each process's, in a
    session of several)."""
    if context.config.default_placement_scope_value is not None:
        return context.config.default_placement_scope_value
    resource = context.session.c_session().resource()
    devices = context.session.devices()
    return PlacementScope("gpu" if resource["gpu_device_num"] else "cpu",
                          [f"{machine}:0-{devices - 1}" for machine in range(resource["process_num"])])


class LogicalView:
    """Consistent (one logical device, the default) or mirrored (one replica per device)."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        stack = getattr(_local, "views", None)
        if stack is None:
            stack = _local.views = []
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _local.views.pop()
        return False

    def __repr__(self) -> str:
        return f"flow.scope.{self.name}_view()"


def mirrored_view() -> LogicalView:
    return LogicalView("mirrored")


def consistent_view() -> LogicalView:
    return LogicalView("consistent")


def _current_view(config=None) -> str:
    """The innermost view scope's, else the job's function config's (``config`` or the job being
    traced), else consistent."""
    stack = getattr(_local, "views", None)
    if stack:
        return stack[-1].name
    if config is None:
        context = _context.maybe_current()
        config = context.config if context is not None else None
    if config is not None and config.default_logical_view_value is not None:
        return config.default_logical_view_value.name
    return "consistent"


def mirrored_view_enabled() -> bool:
    return _current_view() == "mirrored"


def consistent_view_enabled() -> bool:
    return _current_view() == "consistent"


@contextmanager
def namespace(name: str):
    """Prefixes variable names created inside with "<name>-"."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"flow.scope.namespace: name must be a non-empty str, got {name!r}")
    _context.push_namespace(name)
    try:
        yield
    finally:
        _context.pop_namespace()
