"""Helpers shared by the op modules: argument checks and blob wrapping."""

from __future__ import annotations

import numpy as np

from weir import _C, _context
from weir._blob import Blob, is_blob

__all__ = ["add_op", "wrap", "check_blob", "op_name", "axes_list", "constant_like"]


def wrap(c_blob, like: Blob) -> Blob:
    return Blob(c_blob, like._job)


def add_op(op_type: str, inputs, name: str = "", **attrs) -> Blob:
    """Op `op_type` of the registry (weir._C.add_op) on `inputs`, blobs of one job, with its attributes
    by name (the op's file in src/graph/ops reads them); its first output."""
    return wrap(_C.add_op(op_type, [blob._c for blob in inputs], attrs, name)[0], inputs[0])


def at_least_one_axis(blob: Blob) -> Blob:
    """`blob`, or for a blob of no axes (a full reduction) the same value as shape (1,): OneFlow's
    blobs have at least one axis, and its programs index such results with [0]."""
    if len(blob.shape) > 0:
        return blob
    return add_op("reshape", [blob], "", shape=[1])


def check_blob(value, op: str, argument: str) -> Blob:
    if getattr(value, "is_tensor_list", False):
        raise TypeError(f"{op}: argument '{argument}' is a tensor list of {len(value.items)} tensors; ops take one "
                        "blob (flow.tensor_list_split gives its tensors, flow.tensor_list_to_tensor_buffer a tensor_buffer)")
    if not is_blob(value):
        raise TypeError(f"{op}: argument '{argument}' must be a blob of the job being built, got {type(value).__name__}")
    return value


def op_name(name) -> str:
    """The user's op name inside the active namespaces, or "" (the core then names it)."""
    if name is None:
        return ""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    return _context.scoped_name(name)


def axes_list(axis, op: str):
    """OneFlow's axis argument (None, an int, or a sequence) as a list; None gives [], which the reductions
    read as every axis."""
    if axis is None:
        return []
    if isinstance(axis, (int, np.integer)):
        return [int(axis)]
    try:
        return [int(a) for a in axis]
    except TypeError:
        raise TypeError(f"{op}: axis must be None, an int or a sequence of ints, got {axis!r}") from None


def constant_like(value, like: Blob, name: str = ""):
    """A constant blob of `like`'s dtype holding `value` (a scalar or array)."""
    array = np.asarray(value, dtype=like.dtype.numpy_dtype)
    return Blob(like._job.constant(np.ascontiguousarray(array), name), like._job)


