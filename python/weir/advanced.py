"""``flow.advanced``: OneFlow's ops between one blob laid out over the devices of a placement and one
blob per device. Weir's consistent view lays blobs out by itself, so these are the computations
alone: ``distribute_clone`` (the blob once per device), ``distribute_split`` (its pieces along an
axis, one per device, the first ones a row longer where it does not divide), ``distribute_concat``
(the pieces put back together) and ``distribute_add`` (their sum). "Each device" is each of the
devices of the current placement scope (``flow.current_scope()``)."""

from __future__ import annotations

import numpy as np

from weir import math as _math
from weir import ops, scope
from weir._ops_util import check_blob

__all__ = ["distribute_clone", "distribute_add", "distribute_split", "distribute_concat"]


def _devices() -> int:
    return scope.current_scope().device_parallel_desc_symbol.parallel_num


def _blobs(values, op):
    if not isinstance(values, (list, tuple)) or not values:
        raise TypeError(f"{op}: expected a non-empty list of blobs, got {values!r}")
    return [check_blob(v, op, f"x[{i}]") for i, v in enumerate(values)]


def distribute_clone(x, name=None):
    """`x` once for each device of the current placement."""
    x = check_blob(x, "flow.advanced.distribute_clone", "x")
    return [ops.identity(x, None if name is None else f"{name}_{i}") for i in range(_devices())]


def distribute_add(xs, name=None):
    """The sum of the blobs (of one shape)."""
    blobs = _blobs(xs, "flow.advanced.distribute_add")
    return blobs[0] if len(blobs) == 1 and name is None else _math.add_n(blobs, name=name)


def distribute_split(x, axis=0, name=None):
    """`x` cut along `axis` into one piece per device of the current placement, as OneFlow balances
    them: the first (length mod devices) pieces a row longer."""
    op = "flow.advanced.distribute_split"
    x = check_blob(x, op, "x")
    rank = len(x.shape)
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not -rank <= axis < rank:
        raise ValueError(f"{op}: axis must be an int in [{-rank}, {rank}) for x of shape {tuple(x.shape)}, got {axis!r}")
    axis, devices = int(axis) % rank, _devices()
    length = x.shape[axis]
    if length < devices:
        raise ValueError(f"{op}: x's axis {axis} has {length} rows, fewer than the {devices} devices")
    pieces, begin = [], 0
    for i in range(devices):
        size = length // devices + (1 if i < length % devices else 0)
        spans = [(None, None, None)] * rank
        spans[axis] = (begin, begin + size, 1)
        pieces.append(ops.slice_v2(x, spans, name=None if name is None else f"{name}_{i}"))
        begin += size
    return pieces


def distribute_concat(xs, axis=0, name=None):
    """The blobs put together along `axis` (flow.concat)."""
    return ops.concat(_blobs(xs, "flow.advanced.distribute_concat"), axis=axis, name=name)
