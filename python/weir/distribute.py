"""``flow.distribute``: SBP hints (split, broadcast, auto) for the consistent view on several
devices: ``get_variable(distribute=split(0))`` and ``layers.dense(model_distribute=split(0))`` split
a variable by rows over the devices (model parallelism); ``blob.with_distribute(...)`` lays a blob
out as asked. They change no value, and nothing on one device or in the mirrored view."""

from __future__ import annotations

from weir import _C, scope

__all__ = ["split", "broadcast", "auto", "assert_is_valid_distribute", "mirrored_strategy", "consistent_strategy",
           "mirrored_strategy_enabled", "consistent_strategy_enabled"]


class Distribute:
    def __init__(self, kind: str, axis=None):
        self.kind = kind
        self.axis = axis

    def __repr__(self) -> str:
        return f"flow.distribute.{self.kind}({'' if self.axis is None else self.axis})"


_AUTO = Distribute("auto")
_BROADCAST = Distribute("broadcast")
_SPLITS = [Distribute("split", axis) for axis in range(11)]


def auto() -> Distribute:
    return _AUTO


def broadcast() -> Distribute:
    return _BROADCAST


def split(axis: int) -> Distribute:
    """Split along `axis` (0..10); one object per axis, compared by identity as in OneFlow."""
    if not isinstance(axis, int) or not 0 <= axis < len(_SPLITS):
        raise ValueError(f"flow.distribute.split: axis must be an int in [0, 11), got {axis!r}")
    return _SPLITS[axis]


def to_attr(distribute, what: str) -> str:
    """The op attribute of a flow.distribute object (None: auto): "auto", "broadcast" or "split(axis)"."""
    if distribute is None:
        return "auto"
    if not isinstance(distribute, Distribute):
        raise TypeError(f"{what}: expected flow.distribute.split/broadcast/auto, got {distribute!r}")
    return f"split({distribute.axis})" if distribute.kind == "split" else distribute.kind


def to_c(distribute, what: str):
    """The C++ Distribute of a flow.distribute object (None: auto)."""
    if distribute is None:
        return _C.Distribute("auto")
    if not isinstance(distribute, Distribute):
        raise TypeError(f"{what}: expected flow.distribute.split/broadcast/auto, got {distribute!r}")
    return _C.Distribute(distribute.kind, distribute.axis or 0)


def assert_is_valid_distribute(distribute) -> None:
    if not isinstance(distribute, Distribute):
        raise TypeError(f"expected flow.distribute.split/broadcast/auto, got {distribute!r}")


def mirrored_strategy():
    return scope.mirrored_view()


def consistent_strategy():
    return scope.consistent_view()


def mirrored_strategy_enabled() -> bool:
    return scope.mirrored_view_enabled()


def consistent_strategy_enabled() -> bool:
    return scope.consistent_view_enabled()
