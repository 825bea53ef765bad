"""``flow.experimental``: OneFlow's helpers under that name. ``name_scope`` (``flow.name_scope``),
``square_sum``, ``unique_with_counts``, ``logical_slice``, ``logical_slice_assign``,
``enable_typing_check`` and ``scope.config``."""

from __future__ import annotations

import types
from contextlib import contextmanager

from weir import _C, _context, _function, checkpoint, dtypes, ops, scope
from weir import math as _math
from weir._blob import to_c_dtype
from weir._ops_util import check_blob, op_name, wrap

__all__ = ["name_scope", "square_sum", "unique_with_counts", "logical_slice", "logical_slice_assign",
           "enable_typing_check", "scope", "broadcast_minimum", "broadcast_maximum", "get_interface_blob_value",
           "set_interface_blob_value"]

name_scope = scope.namespace


def broadcast_minimum(a, b, name=None):
    """OneFlow 0.2's flow.experimental.broadcast_minimum: flow.math.minimum (numpy-broadcast)."""
    return _math.minimum(a, b, name=name)


def broadcast_maximum(a, b, name=None):
    """OneFlow 0.2's flow.experimental.broadcast_maximum: flow.math.maximum (numpy-broadcast)."""
    return _math.maximum(a, b, name=name)


def square_sum(x, name=None):
    """The sum of the squares of every element of `x`, as a blob of shape (1,) (OneFlow's
    square_sum). Its gradient is 2 x times the incoming one."""
    check_blob(x, "flow.experimental.square_sum", "x")
    return ops.reshape(_math.reduce_sum(_math.square(x)), (1,), name=name)


def unique_with_counts(x, out_idx=dtypes.int32, name=None):
    """The distinct values of a one-dimensional blob x (float32, float64, int32, int64) and how often
    each occurs, as OneFlow's: a tuple (y, idx, count, num_unique), each of x's length but num_unique
    (shape (1,)). y holds the values in its first num_unique entries, ascending (OneFlow leaves the
    order unspecified; a NaN counts as the largest and all NaNs as one value), zeros after;
    ``y[idx[i]] == x[i]``; count[k] is how many elements have value y[k]. idx, count and num_unique are
    of dtype `out_idx`, flow.int32 or flow.int64. On a GPU it compares every pair of elements: quick up
    to some thousands of elements."""
    check_blob(x, "flow.experimental.unique_with_counts", "x")
    attrs = {"out_idx": to_c_dtype(out_idx, "flow.experimental.unique_with_counts: out_idx")}
    return tuple(wrap(c, x) for c in _C.add_op("unique_with_counts", [x._c], attrs, op_name(name)))


def logical_slice(x, slice_tup_list, name=None):
    """x[start:stop:step, ...] of the logical (whole) blob, however its parts are placed: one
    (start, stop, step) tuple per axis from the first, as ``flow.slice_v2``'s."""
    check_blob(x, "flow.experimental.logical_slice", "x")
    return ops.slice_v2(x, slice_tup_list, name)


def logical_slice_assign(x, value, slice_tup_list, name=None):
    """Writes `value` into the slice x[start:stop:step, ...] of the variable `x` (the logical blob,
    however its parts are placed) when the job runs, as ``flow.assign`` writes a whole one: the job's
    other readers of `x` see its value from before, the next call the new one. Returns None."""
    ops.slice_assign(x, value, slice_tup_list, name)


def get_interface_blob_value(op_name):
    """The current value of the session's variable `op_name` (OneFlow's interface blobs), a numpy
    array; a KeyError names the variables there are when none has that name."""
    variables = checkpoint.get_all_variables()
    if op_name not in variables:
        raise KeyError(f"flow.experimental.get_interface_blob_value: the session has no variable named {op_name!r}; "
                       f"it has {sorted(variables)}")
    return variables[op_name].numpy()


def set_interface_blob_value(op_name, ndarray):
    """Writes `ndarray` (of its shape and dtype) into the session's variable `op_name`, as
    flow.load_variables does; a name no variable has is a RuntimeError."""
    checkpoint.load_variables({op_name: ndarray}, ignore_mismatch=False)


def enable_typing_check(val=True):
    """As OneFlow's: job functions decorated after ``enable_typing_check(True)`` must annotate every
    parameter (``tp.Numpy.Placeholder(...)``, ...) and the return (``-> tp.Numpy``, ``-> None``, ...);
    one that does not is refused when decorated, naming the function. Off by default: un-annotated
    parameters are OneFlow's legacy placeholders (``flow.FixedTensorDef`` defaults) and an
    un-annotated return a future."""
    if not isinstance(val, bool):
        raise ValueError(f"flow.experimental.enable_typing_check: expected True or False, got {val!r}")
    _function.set_typing_check(val)


@contextmanager
def _scope_config(checkpointing=None, pipeline_stage_id_hint=None, quantization_aware_training=None):
    """OneFlow 0.4's scope attributes for the ops created inside: `checkpointing` (recompute the
    activations in the backward pass instead of keeping them), `pipeline_stage_id_hint` (a stage
    of a pipeline) and `quantization_aware_training` (False: the job's quantization-aware training,
    FunctionConfig.enable_qat, leaves these ops as they are). Weir keeps every activation and places
    pipeline stages by flow.scope.placement, so it says once that it does neither; the results are
    the same."""
    if checkpointing:
        _function.notice_once("scope.checkpointing", "flow.experimental.scope.config(checkpointing=True): Weir keeps the "
                              "activations (more memory, the same results)")
    if pipeline_stage_id_hint is not None:
        _function.notice_once("scope.pipeline", "flow.experimental.scope.config(pipeline_stage_id_hint=...): Weir places "
                              "pipeline stages by flow.scope.placement; the hint has no effect")
    if quantization_aware_training is None:
        yield
        return
    if not isinstance(quantization_aware_training, bool):
        raise TypeError("flow.experimental.scope.config: quantization_aware_training must be a bool, got "
                        f"{quantization_aware_training!r}")
    builder = _context.current("flow.experimental.scope.config(quantization_aware_training=...)").builder
    builder.push_quantization_scope(quantization_aware_training)
    try:
        yield
    finally:
        builder.pop_quantization_scope()


scope = types.SimpleNamespace(config=_scope_config)
