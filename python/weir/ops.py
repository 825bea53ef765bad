"""Array ops exported at the top level: ``flow.reshape``, ``transpose``, ``matmul``, ``cast``,
``identity``, ``constant``, ``get_variable``, ``watch`` and friends."""

from __future__ import annotations

import builtins
import random as _random
import re

import numpy as np

from weir import _C, _context, dtypes
from weir import distribute as _distribute
from weir import initializers as _init
from weir._blob import Blob, DynamicBlob, TensorListBlob, install_operators, is_blob, to_c_dtype
from weir._ops_util import add_op, check_blob, op_name, wrap
from weir._ops_util import constant_like as _constant_of
from weir._signature import watch_value_converter
from weir import math as _math
from weir import scope as _scope
from weir.math import clip_by_value, not_equal, reduce_mean, reduce_sum

__all__ = [
    "reshape", "transpose", "matmul", "cast", "identity", "amp_white_identity", "constant", "zeros_like", "ones_like",
    "squeeze", "expand_dims", "flatten", "concat", "one_hot", "clip_by_value", "get_variable", "watch", "watch_diff",
    "slice", "slice_v2", "reverse", "constant_like", "broadcast_to_compatible_with", "broadcast_like", "stack",
    "identity_n", "cast_to_static_shape", "ones", "zeros", "gather", "dim_gather", "where", "parallel_cast", "pad",
    "count_not_finite", "multi_count_not_finite", "reflection_pad2d", "replication_pad2d", "constant_pad2d",
    "assign", "gather_nd", "scatter_nd", "tensor_scatter_nd_update", "tensor_scatter_nd_add", "batch_gather",
    "argsort", "sort", "slice_update", "combined_margin_loss", "zero_pad2d", "expand", "diag", "smooth_l1_loss",
    "masked_fill", "dim_scatter_add", "dim_scatter_update", "dim_scatter_add_like", "dim_scatter_update_like",
    "eye", "Size", "ctc_loss", "scatter_nd_update", "hierarchical_parallel_cast", "argwhere", "sync_dynamic_resize",
    "tensor_to_tensor_buffer", "tensor_buffer_to_tensor", "gen_tensor_buffer", "tensor_buffer_to_list_of_tensors",
    "distributed_partial_fc_sample", "slice_assign", "tensor_list_split", "tensor_list_to_tensor_buffer", "tensor_buffer_to_tensor_list",
]

# Past either end of any axis: what an open end of a slice becomes (the op clamps it to the axis).
_OPEN_END = 1 << 62


def reshape(x, shape, name=None):
    """`x` with a new shape; one dimension may be -1 (inferred)."""
    x = check_blob(x, "flow.reshape", "x")
    try:
        dims = [int(d) for d in shape]
    except TypeError:
        raise TypeError(f"flow.reshape: shape must be a sequence of ints, got {shape!r}") from None
    return add_op("reshape", [x], op_name(name), shape=dims)


def slice_v2(x, slice_tup_list, name=None):
    """x[start:stop:step] along each axis, one (start, stop, step) tuple per axis from the first
    (None in a tuple: Python's default; axes after the list are taken whole). Negative indices count
    from the end and a negative step walks backwards, as in Python."""
    op = "flow.slice_v2"
    x = check_blob(x, op, "x")
    rank = len(x.shape)
    specs = list(slice_tup_list)
    if len(specs) > rank:
        raise ValueError(f"{op}: slice_tup_list has {len(specs)} tuples for x of {rank} axes")
    start, stop, step = [], [], []
    for axis in range(rank):
        spec = tuple(specs[axis]) if axis < len(specs) else (None, None, None)
        if len(spec) != 3:
            raise ValueError(f"{op}: slice_tup_list[{axis}] must be (start, stop, step), got {specs[axis]!r}")
        begin, end, stride = spec
        stride = 1 if stride is None else int(stride)
        if stride == 0:
            raise ValueError(f"{op}: slice_tup_list[{axis}] has step 0")
        start.append((0 if stride > 0 else _OPEN_END) if begin is None else int(begin))
        stop.append((_OPEN_END if stride > 0 else -_OPEN_END) if end is None else int(end))
        step.append(stride)
    return add_op("slice", [x], op_name(name), start=start, stop=stop, step=step)


def slice_update(x, update, slice_tup_list, name=None):
    """`x` with its slice x[start:stop:step, ...] (slice_v2's tuples, one per axis from the first)
    replaced by `update`, which has the slice's shape and x's dtype. The gradient: x's is dy with the
    slice zeroed, update's is dy's slice (a tensor_scatter_nd_update by the slice's coordinates)."""
    op = "flow.slice_update"
    x = check_blob(x, op, "x")
    update = check_blob(update, op, "update")
    specs = list(slice_tup_list)
    if len(specs) > len(x.shape):
        raise ValueError(f"{op}: slice_tup_list has {len(specs)} tuples for x of {len(x.shape)} axes")
    ranges = []
    for axis, dim in enumerate(x.shape):
        spec = tuple(specs[axis]) if axis < len(specs) else (None, None, None)
        if len(spec) != 3 or spec[2] == 0:
            raise ValueError(f"{op}: slice_tup_list[{axis}] must be (start, stop, step) with a nonzero step, got {spec!r}")
        ranges.append(range(*builtins.slice(*spec).indices(dim)))
    wanted = tuple(len(r) for r in ranges)
    if tuple(update.shape) != wanted:
        raise ValueError(f"{op}: update must have the slice's shape {wanted}, got {tuple(update.shape)}")
    if update.dtype != x.dtype:
        raise TypeError(f"{op}: update must have x's dtype {x.dtype.name}, got {update.dtype.name}")
    # Coordinates over the axes up to the last one not taken whole; the later axes go as whole slices.
    depth = max([a + 1 for a, r in enumerate(ranges) if r != range(x.shape[a])], default=1)
    grid = np.stack(np.meshgrid(*[np.array(r, np.int64) for r in ranges[:depth]], indexing="ij"), -1)
    tuples = Blob(x._job.constant(np.ascontiguousarray(grid), ""), x._job)
    return tensor_scatter_nd_update(x, tuples, update, name)


def reverse(input, axis, name=None):  # noqa: A002 - OneFlow's name
    """`input` with the order of its elements reversed along `axis` (an int or a list of ints): a slice
    with step -1 there."""
    x = check_blob(input, "flow.reverse", "input")
    rank = len(x.shape)
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    specs = [(None, None, None)] * rank
    for a in axes:
        if not -rank <= int(a) < rank:
            raise ValueError(f"flow.reverse: axis {a} is out of range for input of {rank} axes")
        specs[int(a) % rank] = (None, None, -1)
    return slice_v2(x, specs, name)


def slice(x, begin, size, name=None):  # noqa: A001 - OneFlow's name
    """`size[i]` elements of axis i from `begin[i]` (None: 0; a negative begin counts from the end);
    a size of -1 or None takes the rest of the axis."""
    op = "flow.slice"
    x = check_blob(x, op, "x")
    if len(begin) != len(x.shape) or len(size) != len(x.shape):
        raise ValueError(f"{op}: begin and size need one entry per axis of x {tuple(x.shape)}, got {list(begin)} "
                         f"and {list(size)}")
    specs = []
    for axis, (first, count) in enumerate(zip(begin, size)):
        first = 0 if first is None else int(first)
        if first < 0:
            first += x.shape[axis]
        if count is not None and int(count) < -1:
            raise ValueError(f"{op}: size[{axis}] must be -1 (the rest) or >= 0, got {count}")
        end = None if count is None or int(count) == -1 else first + int(count)
        specs.append((first, end, 1))
    return slice_v2(x, specs, name=name)


def transpose(a, perm=None, conjugate=False, batch_axis_non_change=False, name=None):
    """Permutes the axes: output axis i is input axis perm[i] (reversed when perm is None)."""
    a = check_blob(a, "flow.transpose", "a")
    if conjugate:
        raise ValueError("flow.transpose: conjugate=True needs complex dtypes, which Weir does not have")
    if perm is None:
        perm = list(reversed(range(len(a.shape))))
    return add_op("transpose", [a], op_name(name), perm=[int(p) for p in perm])


def matmul(a, b, transpose_a=False, transpose_b=False, alpha=1.0, name=None):
    """op(a)·op(b), scaled by alpha: the 2-D product; for operands of one rank > 2 the product of
    the last two axes at every index of the leading ones (OneFlow's batch_matmul; the transposes act
    on the last two axes); for `a` of rank > 2 and a 2-D `b`, every row of a's leading axes times b
    (OneFlow's broadcast_matmul, a linear layer over a sequence; transpose_a is refused there)."""
    a = check_blob(a, "flow.matmul", "a")
    b = check_blob(b, "flow.matmul", "b")
    if len(a.shape) > 2 and len(b.shape) == 2:
        if transpose_a:
            raise ValueError(f"flow.matmul: transpose_a is not supported for a {len(a.shape)}-D a and a 2-D b")
        rows = reshape(a, (-1, a.shape[-1]))
        product = add_op("matmul", [rows, b], op_name(name), transpose_a=False, transpose_b=bool(transpose_b),
                         alpha=float(alpha))
        return reshape(product, tuple(a.shape[:-1]) + (product.shape[-1],))
    op_type = "batch_matmul" if len(a.shape) > 2 or len(b.shape) > 2 else "matmul"
    return add_op(op_type, [a, b], op_name(name), transpose_a=bool(transpose_a), transpose_b=bool(transpose_b),
                  alpha=float(alpha))


def cast(x, dtype, name=None):
    x = check_blob(x, "flow.cast", "x")
    return add_op("cast", [x], op_name(name), dtype=to_c_dtype(dtype, "flow.cast: dtype"))


def identity(x, name=None):
    x = check_blob(x, "flow.identity", "x")
    return add_op("identity", [x], op_name(name))


def constant(value, dtype=None, shape=None, name=None):
    """A blob fixed at build time: `value` (a number or array) broadcast to `shape`."""
    context = _context.current("flow.constant")
    dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.float32
    array = np.asarray(value, dtype=dtype.numpy_dtype)
    if shape is not None:
        array = np.broadcast_to(array, tuple(int(d) for d in shape))
    blob = context.builder.constant(np.ascontiguousarray(array), op_name(name))
    return Blob(blob, context.builder)


def ones(shape, dtype=None, name=None):
    """A blob of `shape` filled with 1 (float32 unless `dtype` says otherwise)."""
    return constant(1, dtype, shape, name)


def zeros(shape, dtype=None, name=None):
    """A blob of `shape` filled with 0 (float32 unless `dtype` says otherwise)."""
    return constant(0, dtype, shape, name)


def eye(rows, columns=None, batch_shape=None, dtype=None, name=None):
    """A blob of shape batch_shape + (rows, columns) (columns defaults to rows) holding identity
    matrices: ones on the main diagonal, zeros elsewhere (float32 unless `dtype` says otherwise)."""
    def count(value, what):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"flow.eye: {what} must be a non-negative int, got {value!r}")
        return int(value)

    rows = count(rows, "rows")
    columns = rows if columns is None else count(columns, "columns")
    batch = [count(d, "batch_shape's entries") for d in (batch_shape or [])]
    return constant(np.eye(rows, columns), dtype, batch + [rows, columns], name)


class Size(tuple):
    """A shape (OneFlow's flow.Size): a tuple of ints with numel() and index(value, start, end)."""

    def __new__(cls, dims=()):
        return super().__new__(cls, (int(d) for d in dims))

    def numel(self) -> int:
        """The number of elements of a tensor of this shape."""
        return int(np.prod(self, dtype=np.int64))

    def index(self, value, start=0, end=None):  # noqa: A003 - tuple's name, with keywords as OneFlow's
        return super().index(value, start, len(self) if end is None else end)

    def __repr__(self) -> str:
        return f"flow.Size({list(self)})"


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False,
             name=None):
    """The CTC loss (Graves et al. 2006; OneFlow's flow.ctc_loss): log_probs (T, N, C), log-softmax
    outputs; targets (N, S), classes in [0, C); input_lengths and target_lengths (N), int32 or int64.
    reduction "none" gives each example's -log p(target | input), "sum" their sum, "mean" the mean of
    each divided by its target length (at least 1). An example whose input is too short for its target
    has an infinite loss, 0 with zero_infinity (its gradient then 0 too). A length or target out of
    range fails the call."""
    op = "flow.ctc_loss"
    blobs = [check_blob(b, op, what) for b, what in ((log_probs, "log_probs"), (targets, "targets"),
                                                     (input_lengths, "input_lengths"), (target_lengths, "target_lengths"))]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{op}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
    if isinstance(blank, bool) or not isinstance(blank, (int, np.integer)):
        raise TypeError(f"{op}: blank must be an int, got {blank!r}")
    index = blobs[1].dtype
    for i, what in ((2, "input_lengths"), (3, "target_lengths")):  # the op takes one integer dtype
        if blobs[i].dtype != index and blobs[i].dtype in (dtypes.int32, dtypes.int64):
            blobs[i] = cast(blobs[i], index)
    loss = add_op("ctc_loss", blobs, op_name(name) if reduction == "none" else "", blank=int(blank),
                  zero_infinity=bool(zero_infinity))
    if reduction == "sum":
        return reduce_sum(loss, name=name)
    if reduction == "mean":
        per_label = cast(clip_by_value(blobs[3], min_value=1), loss.dtype)
        return reduce_mean(loss / per_label, name=name)
    return loss


def zeros_like(like, dtype=None, name=None):
    like = check_blob(like, "flow.zeros_like", "like")
    return constant(0, dtype or like.dtype, like.shape, name)


def ones_like(like, dtype=None, name=None):
    like = check_blob(like, "flow.ones_like", "like")
    return constant(1, dtype or like.dtype, like.shape, name)


def constant_like(like, value, dtype=None, name=None):
    """A blob of `like`'s shape filled with `value`, of `dtype` (default: like's)."""
    like = check_blob(like, "flow.constant_like", "like")
    return constant(value, dtype or like.dtype, like.shape, name)


def broadcast_to_compatible_with(x, compatible, name=None):
    """`x` broadcast (numpy's rules) to the shape it and every blob of `compatible` broadcast to together."""
    x = check_blob(x, "flow.broadcast_to_compatible_with", "x")
    shapes = [x.shape] + [check_blob(b, "flow.broadcast_to_compatible_with", f"compatible[{i}]").shape
                          for i, b in enumerate(compatible)]
    try:
        target = np.broadcast_shapes(*[tuple(s) for s in shapes])
    except ValueError:
        raise ValueError(f"flow.broadcast_to_compatible_with: shapes {[tuple(s) for s in shapes]} do not broadcast "
                         "together") from None
    return add_op("broadcast_to", [x], op_name(name), shape=[int(d) for d in target])


def broadcast_like(x, like, broadcast_axes=None, name=None):
    """`x` repeated to `like`'s shape along `broadcast_axes` (default: all of like's axes), where x
    has size 1 or, when x has fewer axes, no axis at all."""
    op = "flow.broadcast_like"
    x = check_blob(x, op, "x")
    like = check_blob(like, op, "like")
    rank = len(like.shape)
    axes = list(range(rank)) if broadcast_axes is None else [int(a) for a in broadcast_axes]
    if not axes or len(axes) > rank or any(not -rank <= a < rank for a in axes):
        raise ValueError(f"{op}: broadcast_axes must be 1 to {rank} axes of like {tuple(like.shape)}, got "
                         f"{broadcast_axes!r}")
    axes = [a % rank for a in axes]
    if len(x.shape) < rank:  # x lacks the broadcast axes: put them back as 1s
        kept = iter(x.shape)
        dims = [1 if axis in axes else next(kept, None) for axis in range(rank)]
        if None in dims or next(kept, None) is not None:
            raise ValueError(f"{op}: x {tuple(x.shape)} is not like {tuple(like.shape)} without axes {axes}")
        x = reshape(x, dims)
    return add_op("broadcast_to", [x], op_name(name), shape=[int(d) for d in like.shape])


def stack(inputs, axis=0, name=None):
    """The blobs of `inputs`, all of one shape, joined along a new axis `axis`."""
    inputs = list(inputs)
    if not inputs:
        raise ValueError("flow.stack: expected at least one blob")
    shape = check_blob(inputs[0], "flow.stack", "inputs[0]").shape
    for index, blob in enumerate(inputs):
        if check_blob(blob, "flow.stack", f"inputs[{index}]").shape != shape:
            raise ValueError(f"flow.stack: every input must have inputs[0]'s shape {tuple(shape)}, inputs[{index}] "
                             f"has {tuple(blob.shape)}")
    rank = len(shape)
    if not -rank - 1 <= axis <= rank:
        raise ValueError(f"flow.stack: axis must be in [{-rank - 1}, {rank}], got {axis}")
    return concat([expand_dims(blob, axis) for blob in inputs], axis=axis % (rank + 1), name=name)


def amp_white_identity(x, name=None):
    """x itself. OneFlow's marks its output as safe in 16 bits under mixed precision (GPT's embedding
    tables); Weir's mixed-precision pass decides from the ops that read it, so it is an identity."""
    x = check_blob(x, "flow.amp_white_identity", "x")
    return add_op("identity", [x], op_name(name))


def identity_n(inputs, name=None):
    """identity of each blob of `inputs`, as a list."""
    return [identity(check_blob(blob, "flow.identity_n", f"inputs[{i}]"), None if name is None else f"{name}_{i}")
            for i, blob in enumerate(inputs)]


def cast_to_static_shape(x, name=None):
    """A dynamic blob's whole value, of its largest shape (flow.argwhere's: its rows past the size are
    zeros). Other blobs are `x` itself: Weir compiles a job for its dynamic inputs' actual shapes, so
    their shapes are static."""
    x = check_blob(x, "flow.cast_to_static_shape", "x")
    return x.static if isinstance(x, DynamicBlob) else x


def sync_dynamic_resize(inputs, size, name=None):
    """`inputs` of which only the first `size` rows are meant (OneFlow's dynamic blob): `size` an int32
    or int64 blob of shape (1,) whose value is known only when the job runs (of shape (k,), the leading
    k axes' extents). A job returns the blob cut to x[:size] (a size outside [0, rows] fails the call);
    no op or watch reads it, and flow.cast_to_static_shape gives back `inputs`."""
    op = "flow.sync_dynamic_resize"
    x = check_blob(inputs, op, "inputs")
    size = check_blob(size, op, "size")
    if isinstance(x, DynamicBlob):
        x = x.static
    resized = _C.add_op("sync_dynamic_resize", [x._c, size._c], {}, op_name(name))[0]
    return DynamicBlob(resized, x._job, size, x)


def argwhere(condition, dtype=None, name=None):
    """The coordinates of `condition`'s nonzero elements (numpy.argwhere): a dynamic blob of shape
    (count, rank), one element's coordinates a row in row-major order, of dtype `dtype` (flow.int32,
    the default, or flow.int64). `condition` holds numbers of any dtype and has 1 to 12 axes. The count
    is known when the job runs: a job returns the blob cut to it, and flow.cast_to_static_shape gives
    all of the (condition.size, rank) rows, zeros past the count."""
    op = "flow.argwhere"
    condition = check_blob(condition, op, "condition")
    index_dtype = to_c_dtype(dtypes.int32 if dtype is None else dtype, f"{op}: dtype")
    indices, size = _C.add_op("argwhere", [condition._c], {"dtype": index_dtype}, op_name(name))
    return sync_dynamic_resize(wrap(indices, condition), wrap(size, condition))


def squeeze(input, axis=None, name=None):  # noqa: A002 - OneFlow's name
    """Removes size-1 axes (all of them, or those in `axis`)."""
    x = check_blob(input, "flow.squeeze", "input")
    rank = len(x.shape)
    if axis is None:
        axes = {i for i, d in enumerate(x.shape) if d == 1}
    else:
        axes = {a % rank for a in ([axis] if isinstance(axis, int) else axis)}
        for a in axes:
            if x.shape[a] != 1:
                raise ValueError(f"flow.squeeze: axis {a} of {x.shape} has size {x.shape[a]}, not 1")
    # Squeezing every axis leaves (1,), as OneFlow's (its blobs have at least one axis).
    return reshape(x, [d for i, d in enumerate(x.shape) if i not in axes] or [1], name)


def expand_dims(input, axis, name=None):  # noqa: A002 - OneFlow's name
    x = check_blob(input, "flow.expand_dims", "input")
    rank = len(x.shape)
    if not -rank - 1 <= axis <= rank:
        raise ValueError(f"flow.expand_dims: axis must be in [{-rank - 1}, {rank}] for {x.shape}, got {axis}")
    axis = axis % (rank + 1)
    dims = list(x.shape)
    dims.insert(axis, 1)
    return reshape(x, dims, name)


def flatten(input, start_dim=0, end_dim=-1, name=None):  # noqa: A002 - OneFlow's name
    """Merges axes start_dim..end_dim (inclusive) into one (OneFlow 0.3's flow.flatten)."""
    x = check_blob(input, "flow.flatten", "input")
    return wrap(_C.flatten(x._c, int(start_dim), int(end_dim), op_name(name)), x)


def concat(inputs=None, axis=0, max_dim_size=None, name=None, values=None):
    """Joins blobs of one dtype along `axis` (their other dimensions equal). `max_dim_size`, OneFlow's
    bound for dynamic blobs, is checked: the joined axis may not be longer (the result has its actual
    length). `values` is OneFlow's older name for `inputs` (Inception's)."""
    if (inputs is None) == (values is None):
        raise TypeError("flow.concat: give the blobs as inputs or as values, not both or neither")
    inputs = list(inputs if inputs is not None else values)
    if not inputs:
        raise ValueError("flow.concat: expected at least one blob")
    for index, blob in enumerate(inputs):
        check_blob(blob, "flow.concat", f"inputs[{index}]")
    rank = len(inputs[0].shape)
    joined = int(axis) + rank if int(axis) < 0 else int(axis)
    if max_dim_size is not None and 0 <= joined < rank:  # a bad axis is the op's to report
        length = sum(blob.shape[joined] for blob in inputs if len(blob.shape) == rank)
        if int(max_dim_size) < length:
            raise ValueError(f"flow.concat: max_dim_size must be at least the joined axis's length {length}, "
                             f"got {max_dim_size}")
    return add_op("concat", inputs, op_name(name), axis=int(axis))


def one_hot(indices, depth, on_value=1, off_value=0, axis=-1, dtype=None, name=None):
    """indices (...) int -> (..., depth): on_value at each index, off_value elsewhere."""
    x = check_blob(indices, "flow.one_hot", "indices")
    rank = len(x.shape)
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not -1 <= axis <= rank:
        raise ValueError(f"flow.one_hot: axis must be an int in [-1, {rank}] for indices {tuple(x.shape)}, got {axis!r}")
    c_dtype = to_c_dtype(dtype if dtype is not None else dtypes.float32, "flow.one_hot: dtype")
    if axis in (-1, rank):
        return add_op("one_hot", [x], op_name(name), depth=int(depth), on_value=float(on_value),
                      off_value=float(off_value), dtype=c_dtype)
    hot = add_op("one_hot", [x], "", depth=int(depth), on_value=float(on_value), off_value=float(off_value), dtype=c_dtype)
    # The classes' axis moved from last to `axis`.
    perm = list(range(axis)) + [rank] + list(range(axis, rank))
    return transpose(hot, perm, name=name)


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """The entries of `params` along `axis` (default: batch_dims) that `indices` (int32/int64) pick:
    params.shape[:axis] + indices.shape + params.shape[axis + 1:]. An index outside
    [0, params.shape[axis]) fails the call. The gradient for params adds dy back into the rows it
    came from (unsorted_segment_sum). With batch_dims > 0, params and indices share their first
    batch_dims axes and each batch entry gathers from its own params (flow.batch_gather); axis must
    then be batch_dims, as in OneFlow."""
    op = "flow.gather"
    params = check_blob(params, op, "params")
    indices = check_blob(indices, op, "indices")
    if isinstance(batch_dims, bool) or not isinstance(batch_dims, (int, np.integer)) or batch_dims < 0:
        raise ValueError(f"{op}: batch_dims must be an int >= 0, got {batch_dims!r}")
    if batch_dims == 0:
        return add_op("gather", [params, indices], op_name(name), axis=0 if axis is None else int(axis))
    if axis is not None and int(axis) != batch_dims:
        raise NotImplementedError(f"{op}: with batch_dims {batch_dims}, axis must be batch_dims (as OneFlow), got {axis}")
    return _gather_in_batches(params, indices, int(batch_dims), op, name)


def batch_gather(params, indices, name=None):
    """For each entry of indices' leading axes (all but its last), the rows of that entry's params
    it picks along the next axis: params (B..., N, ...) and indices (B..., M) give (B..., M, ...)
    (OneFlow's flow.batch_gather; flow.gather with batch_dims = indices' rank - 1)."""
    op = "flow.batch_gather"
    params = check_blob(params, op, "params")
    indices = check_blob(indices, op, "indices")
    if len(indices.shape) == 0:
        raise ValueError(f"{op}: indices must have at least one axis, got a scalar")
    return _gather_in_batches(params, indices, len(indices.shape) - 1, op, name)


def _gather_in_batches(params, indices, batch_dims, op, name):
    # gather_nd with tuples (batch coordinates..., index): the batch coordinates are a constant grid
    # beside the indices, so the gradient is gather_nd's (a scatter back into each batch's rows).
    if not batch_dims < len(params.shape) or not batch_dims <= len(indices.shape):
        raise ValueError(f"{op}: batch_dims {batch_dims} must be below params' rank ({len(params.shape)}) and at most "
                         f"indices' ({len(indices.shape)})")
    if tuple(params.shape[:batch_dims]) != tuple(indices.shape[:batch_dims]):
        raise ValueError(f"{op}: params {tuple(params.shape)} and indices {tuple(indices.shape)} must share their first "
                         f"{batch_dims} axes")
    shape = tuple(indices.shape)
    grid = np.indices(shape[:batch_dims], dtype=indices.dtype.numpy_dtype)  # (batch_dims, B...)
    grid = grid.reshape((batch_dims,) + shape[:batch_dims] + (1,) * (len(shape) - batch_dims))
    grid = np.moveaxis(np.broadcast_to(grid, (batch_dims,) + shape), 0, -1)
    tuples = concat([_constant_of(np.ascontiguousarray(grid), indices), expand_dims(indices, -1)], axis=-1)
    return gather_nd(params, tuples, name)


def argsort(input, axis=-1, direction="ASCENDING", name=None):  # noqa: A002 - OneFlow's name
    """The indices (int32) that sort `input` along `axis`, "ASCENDING" or "DESCENDING"; NaN counts as
    the largest, equal values keep their order (a stable sort)."""
    return _argsort_along(check_blob(input, "flow.argsort", "input"), axis, direction, "flow.argsort", name)


def sort(input, axis=-1, direction="ASCENDING", name=None):  # noqa: A002 - OneFlow's name
    """`input` sorted along `axis` ("ASCENDING" or "DESCENDING"; NaN counts as the largest). The
    gradient goes back to where each value came from."""
    x = check_blob(input, "flow.sort", "input")
    order = _argsort_along(x, axis, direction, "flow.sort", None)
    return dim_gather(x, int(axis), order, name)


def _argsort_along(x, axis, direction, op, name):
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"{op}: direction must be 'ASCENDING' or 'DESCENDING', got {direction!r}")
    rank = len(x.shape)
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not -rank <= axis < rank:
        raise ValueError(f"{op}: axis must be an int in [{-rank}, {rank}) for input of shape {tuple(x.shape)}, got {axis!r}")
    descending = direction == "DESCENDING"
    axis = int(axis) % rank
    if axis == rank - 1:
        return add_op("argsort", [x], op_name(name), descending=descending)
    swap = list(range(rank))  # the op sorts the last axis: swap `axis` there and back (a swap undoes itself)
    swap[axis], swap[-1] = swap[-1], swap[axis]
    order = add_op("argsort", [transpose(x, swap)], "", descending=descending)
    return transpose(order, swap, name=name)


def gather_nd(params, indices, name=None):
    """The slices of `params` that tuples of `indices` (int32/int64) pick: the last axis of indices
    holds K indices into params' first K axes, and the result is indices.shape[:-1] +
    params.shape[K:] (OneFlow's flow.gather_nd, TensorFlow's). An index outside its axis fails the
    call. The gradient for params adds dy back into the slices it came from (scatter_nd)."""
    params = check_blob(params, "flow.gather_nd", "params")
    indices = check_blob(indices, "flow.gather_nd", "indices")
    return add_op("gather_nd", [params, indices], op_name(name))


def combined_margin_loss(x, label, m1=1, m2=0, m3=0, name=None):
    """x (N, C) of cosines with each row's ``label`` entry replaced by cos(m1 * acos(x) + m2) - m3:
    the angular margins of SphereFace (m1), ArcFace (m2) and CosFace (m3) in one op (OneFlow's
    flow.combined_margin_loss; its result then goes through a scale and a softmax cross entropy).
    label: int32/int64 (N); a label outside [0, C) fails the call (OneFlow leaves such a row as it
    is, for a split of the classes over devices that Weir does not offer for this op). The gradient
    for x scales dy at the label entries by the margin's derivative, m1 * sin(m1 * theta + m2) /
    sin(theta), which is infinite where x is +-1 (unless m1 = 1 and m2 = 0)."""
    op = "flow.combined_margin_loss"
    x = check_blob(x, op, "x")
    label = check_blob(label, op, "label")
    margins = {}
    for key, value in (("m1", m1), ("m2", m2), ("m3", m3)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
            raise TypeError(f"{op}: {key} must be a number, got {value!r}")
        margins[key] = float(value)
    return add_op("combined_margin_loss", [x, label], op_name(name), **margins)


def scatter_nd(indices, updates, shape, name=None):
    """Zeros of `shape` with each slice of `updates` added where its tuple of `indices` points (the
    adjoint of gather_nd: updates has the shape indices.shape[:-1] + shape[K:]); tuples that repeat
    add up. updates: float32, float64, int32 or int64."""
    op = "flow.scatter_nd"
    indices = check_blob(indices, op, "indices")
    updates = check_blob(updates, op, "updates")
    try:
        dims = [int(d) for d in shape]
    except TypeError:
        raise TypeError(f"{op}: shape must be a sequence of ints, got {shape!r}") from None
    return add_op("scatter_nd", [indices, updates], op_name(name), shape=dims)


def scatter_nd_update(params, indices, updates, name=None):
    """OneFlow 0.1's name of tensor_scatter_nd_update."""
    return tensor_scatter_nd_update(params, indices, updates, name)


def tensor_scatter_nd_update(params, indices, updates, name=None):
    """`params` with the slices that tuples of `indices` pick replaced by `updates` (of tuples that
    repeat, one update wins, which one unspecified)."""
    op = "flow.tensor_scatter_nd_update"
    return add_op("tensor_scatter_nd_update", [check_blob(params, op, "params"), check_blob(indices, op, "indices"),
                                               check_blob(updates, op, "updates")], op_name(name))


def tensor_scatter_nd_add(params, indices, updates, name=None):
    """`params` with each slice of `updates` added where its tuple of `indices` points."""
    op = "flow.tensor_scatter_nd_add"
    return add_op("tensor_scatter_nd_add", [check_blob(params, op, "params"), check_blob(indices, op, "indices"),
                                            check_blob(updates, op, "updates")], op_name(name))


def _dim_of(op, dim, index, blob, what):
    """The dim/index ops' `dim` (an axis of `blob`, the argument `what`) made non-negative, with an
    integer `index`."""
    rank = len(blob.shape)
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or not -rank <= dim < rank:
        raise ValueError(f"{op}: dim must be an int in [{-rank}, {rank}) for {what} of shape {tuple(blob.shape)}, "
                         f"got {dim!r}")
    if index.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"{op}: index must be int32 or int64, got {index.dtype.name}")
    return int(dim) % rank


def dim_gather(input, dim, index, name=None):  # noqa: A002 - OneFlow's name
    """input's elements that `index` picks along `dim` (OneFlow's flow.dim_gather, NumPy's
    take_along_axis): out[p] = input[p with its `dim` coordinate replaced by index[p]]. `index` (int32
    or int64) has input's rank and, on every other axis, at most input's extent; the result has
    index's shape. An index outside [0, input.shape[dim]) fails the call. Built as a gather of the
    flattened input at each element's offset, so the gradient adds dy back where each element came
    from (unsorted_segment_sum)."""
    op = "flow.dim_gather"
    x = check_blob(input, op, "input")
    idx = check_blob(index, op, "index")
    rank = len(x.shape)
    dim = _dim_of(op, dim, idx, x, "input")
    if len(idx.shape) != rank or any(i > n for d, (i, n) in enumerate(zip(idx.shape, x.shape)) if d != dim):
        raise ValueError(f"{op}: index must have input's rank {rank} and at most input's extent on every axis but "
                         f"dim {dim}: input {tuple(x.shape)}, index {tuple(idx.shape)}")
    strides = [int(np.prod(x.shape[d + 1:], dtype=np.int64)) for d in range(rank)]
    coords = np.indices(tuple(idx.shape), dtype=np.int64)
    base = np.zeros(tuple(idx.shape), np.int64)
    for d in range(rank):
        if d != dim:
            base += coords[d] * strides[d]
    picked = cast(idx, dtypes.int64) if idx.dtype != dtypes.int64 else idx
    offsets = picked * strides[dim] + constant(base, dtypes.int64)
    # An index out of range would land on another row's element: point it past the end instead, so
    # that the gather fails the call naming its position.
    outside = not_equal(clip_by_value(picked, 0, x.shape[dim] - 1), picked)
    offsets = where(outside, constant(-1, dtypes.int64, ()), offsets)
    return gather(reshape(x, [-1]), offsets, axis=0, name=name)


def _dim_scatter(op, dim, index, input, like, adds, onto_like, name):  # noqa: A002
    """The scatter along `dim` as a tensor_scatter_nd over each element's full coordinates: index's
    own position, with its `dim` coordinate replaced by the index value."""
    x = check_blob(input, op, "input")
    idx = check_blob(index, op, "index")
    like = check_blob(like, op, "like")
    rank = len(like.shape)
    dim = _dim_of(op, dim, idx, like, "like")
    if x.dtype != like.dtype:
        raise TypeError(f"{op}: input is {x.dtype.name} but like is {like.dtype.name}")
    if (len(idx.shape) != rank or len(x.shape) != rank or any(i > n for i, n in zip(idx.shape, x.shape))
            or any(i > n for d, (i, n) in enumerate(zip(idx.shape, like.shape)) if d != dim)):
        raise ValueError(f"{op}: index must have like's rank {rank}, at most input's extent on every axis and at most "
                         f"like's on every axis but dim {dim}: index {tuple(idx.shape)}, input {tuple(x.shape)}, "
                         f"like {tuple(like.shape)}")
    if tuple(x.shape) != tuple(idx.shape):  # the elements that index reaches: input's leading block
        x = slice_v2(x, [(0, extent, 1) for extent in idx.shape])
    coords = np.indices(tuple(idx.shape), dtype=np.int64)
    coords[dim] = 0
    picked = cast(idx, dtypes.int64) if idx.dtype != dtypes.int64 else idx
    column = np.zeros(rank, np.int64)
    column[dim] = 1
    tuples = (constant(np.ascontiguousarray(np.moveaxis(coords, 0, -1)), dtypes.int64)
              + expand_dims(picked, -1) * constant(column, dtypes.int64))
    base = like if onto_like else zeros_like(like)
    scatter = tensor_scatter_nd_add if adds else tensor_scatter_nd_update
    return scatter(base, tuples, x, name)


def dim_scatter_add(dim, index, input, like, name=None):  # noqa: A002 - OneFlow's names
    """`like` with input's elements added in along `dim` (OneFlow's flow.dim_scatter_add, PyTorch's
    scatter_add): out[p with its `dim` coordinate replaced by index[p]] += input[p] for every position
    p of `index` (int32 or int64, like's rank, on every axis at most input's extent and, but `dim`,
    like's). An index outside [0, like.shape[dim]) fails the call. The gradient for input gathers dy
    where each element went (dim_gather), for like it is dy."""
    return _dim_scatter("flow.dim_scatter_add", dim, index, input, like, True, True, name)


def dim_scatter_update(dim, index, input, like, name=None):  # noqa: A002
    """`like` with input's elements written in along `dim` (OneFlow's flow.dim_scatter_update,
    PyTorch's scatter): as dim_scatter_add, replacing instead of adding. Where index sends several
    elements to one place, the last in index's row-major order wins on the CPU (on CUDA, one of them)."""
    return _dim_scatter("flow.dim_scatter_update", dim, index, input, like, False, True, name)


def dim_scatter_add_like(dim, index, input, like, name=None):  # noqa: A002
    """dim_scatter_add onto zeros of like's shape and dtype (OneFlow's flow.dim_scatter_add_like,
    the adjoint of dim_gather): like gives only the shape."""
    return _dim_scatter("flow.dim_scatter_add_like", dim, index, input, like, True, False, name)


def dim_scatter_update_like(dim, index, input, like, name=None):  # noqa: A002
    """dim_scatter_update onto zeros of like's shape and dtype (OneFlow's flow.dim_scatter_update_like)."""
    return _dim_scatter("flow.dim_scatter_update_like", dim, index, input, like, False, False, name)


def count_not_finite(x, name=None):
    """The number of x's elements that are inf or NaN, as an int64 blob of shape (1,) (OneFlow's
    flow.count_not_finite). x - x is NaN exactly there, and NaN is unequal to everything."""
    return multi_count_not_finite([x], name)


def multi_count_not_finite(x, name=None):
    """count_not_finite summed over a list of blobs (OneFlow's flow.multi_count_not_finite)."""
    op = "flow.multi_count_not_finite"
    blobs = [check_blob(b, op, f"x[{i}]") for i, b in enumerate(x)]
    if not blobs:
        raise ValueError(f"{op}: expected at least one blob")
    counts = [reduce_sum(cast(not_equal(b - b, 0), dtypes.int64)) for b in blobs]
    total = counts[0]
    for count in counts[1:]:
        total = total + count
    return reshape(total, [1], name=name)


def parallel_cast(input, name=None, distribute=None, gradient_distribute=None):  # noqa: A002 - OneFlow's name
    """`input` itself, laid out on the devices of the consistent view as `distribute` says (a
    flow.distribute split or broadcast; None: as it is), its gradient as `gradient_distribute` says."""
    x = check_blob(input, "flow.parallel_cast", "input")
    return add_op("parallel_cast", [x], op_name(name),
                  distribute=_distribute.to_attr(distribute, "flow.parallel_cast: distribute"),
                  gradient_distribute=_distribute.to_attr(gradient_distribute, "flow.parallel_cast: gradient_distribute"))


def hierarchical_parallel_cast(input, parallel_distribution, grad_mode=None, grad_parallel_distribution=None,  # noqa: A002
                               name=None):
    """OneFlow's parallel_cast over a placement's hierarchy, for a one-level one: `input` laid out as
    the one entry of `parallel_distribution` says ("B" broadcast, "S(axis)" split), its gradient as
    grad_parallel_distribution says with grad_mode "manual", else as the compiler chooses. Two-level
    hierarchies (2-D placements) do not exist in Weir: they are refused."""
    op = "flow.hierarchical_parallel_cast"

    def layout(value, what):
        if not isinstance(value, (list, tuple)) or len(value) != 1:
            raise ValueError(f"{op}: {what} must list one layout (Weir's placements are one-level), got {value!r}")
        match = re.fullmatch(r"S\((\d+)\)", str(value[0]))
        if value[0] == "B":
            return _distribute.broadcast()
        if match:
            return _distribute.split(int(match.group(1)))
        raise ValueError(f"{op}: {what} entries must be \"B\" or \"S(axis)\", got {value[0]!r}")

    gradient = None
    if grad_mode == "manual":
        gradient = layout(grad_parallel_distribution, "grad_parallel_distribution")
    elif grad_mode not in (None, "restore", "identity", "auto"):
        raise ValueError(f"{op}: grad_mode must be None, 'restore', 'identity', 'auto' or 'manual', got {grad_mode!r}")
    return parallel_cast(input, name, layout(parallel_distribution, "parallel_distribution"), gradient)


def pad(x, paddings, constant_value=0, name=None):
    """`x` with `paddings[i] = (before, after)` elements of `constant_value` added on each side of axis i
    (OneFlow's flow.pad). The gradient is the interior of the incoming one."""
    op = "flow.pad"
    x = check_blob(x, op, "x")
    try:
        pairs = [(int(before), int(after)) for before, after in paddings]
    except (TypeError, ValueError):
        raise TypeError(f"{op}: paddings must be a (before, after) pair of ints per axis, got {paddings!r}") from None
    if len(pairs) != len(x.shape) or any(before < 0 or after < 0 for before, after in pairs):
        raise ValueError(f"{op}: paddings must be {len(x.shape)} pairs of non-negative ints for x of shape "
                         f"{tuple(x.shape)}, got {paddings!r}")
    shape = [before + d + after for d, (before, after) in zip(x.shape, pairs)]
    interior = {"shape": shape, "start": [before for before, _ in pairs],
                "stop": [before + d for d, (before, _) in zip(x.shape, pairs)], "step": [1] * len(pairs)}
    if constant_value == 0:
        return add_op("slice_grad", [x], op_name(name), **interior)
    padded = add_op("slice_grad", [x], "", **interior)
    inside = add_op("slice_grad", [ones_like(x)], "", **interior)
    # A selection, not padded + (1 - inside) * value: an infinite value (max pooling's -inf) times 0 is NaN.
    return where(not_equal(inside, 0), padded, constant_value, name)


def where(condition, x=None, y=None, name=None):
    """condition ? x : y elementwise, the three numpy-broadcast to one shape. `condition` is an int8,
    uint8, bool, int32 or int64 blob (nonzero takes x); x and y are blobs of one dtype (or one of them a
    number, made a constant of the other's dtype). The gradient flows to x where the condition holds
    and to y elsewhere. Without x and y: flow.argwhere(condition), the coordinates of its nonzero
    elements (int32)."""
    condition = check_blob(condition, "flow.where", "condition")
    if x is None and y is None:
        return argwhere(condition, name=name)
    if x is None or y is None:
        raise ValueError("flow.where: give both x and y, or neither")
    if not is_blob(x) and not is_blob(y):
        raise TypeError(f"flow.where: x or y must be a blob, got {x!r} and {y!r}")
    x = x if is_blob(x) else _constant_of(x, y)
    y = y if is_blob(y) else _constant_of(y, x)
    return add_op("where", [condition, check_blob(x, "flow.where", "x"), check_blob(y, "flow.where", "y")], op_name(name))


def masked_fill(x, mask, value, name=None):
    """`x` with `value` where `mask` (an int8, uint8, bool, int32 or int64 blob, numpy-broadcast with x)
    is nonzero; the gradient flows to x elsewhere."""
    x = check_blob(x, "flow.masked_fill", "x")
    mask = check_blob(mask, "flow.masked_fill", "mask")
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"flow.masked_fill: value must be a number, got {value!r}")
    return where(mask, value, x, name)


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None, trainable=None,
                 model_name=None, random_seed=None, distribute=None, reuse=True, parallel_distribution=None,
                 nd_sbp=None):
    """The variable `name` (prefixed by the active flow.scope.namespace()s): created on first
    use in the session, shared by name with every job that asks for it, kept across calls and
    saved in checkpoints. The default initializer is constant 0. `parallel_distribution` (or
    `nd_sbp`, its later name), OneFlow 0.4's layout as a list of "B" / "S(axis)" strings, may be empty
    or one entry (as `distribute`), or all "B"."""
    context = _context.current("flow.get_variable")
    distribute = _distribute_of_layout(parallel_distribution if nd_sbp is None else nd_sbp, distribute, name)
    if not isinstance(name, str) or not name:
        raise TypeError(f"flow.get_variable: name must be a non-empty str, got {name!r}")
    full_name = _context.scoped_name(name)
    if full_name in context.variables:
        if not reuse:
            raise ValueError(f"flow.get_variable: variable {full_name!r} already exists in job {context.function_name}")
        existing = context.variables[full_name]
        if shape is not None and tuple(shape) != existing.shape:
            raise ValueError(
                f"flow.get_variable: variable {full_name!r} has shape {existing.shape}, asked for {tuple(shape)}"
            )
        return existing
    if shape is None:
        raise TypeError(f"flow.get_variable: variable {full_name!r} needs a shape")
    init = _init.resolve(initializer, f"flow.get_variable({full_name!r}): initializer")
    if random_seed is not None:
        init = _init.with_seed(init, random_seed)
    c_dtype = to_c_dtype(dtype, f"flow.get_variable({full_name!r}): dtype") if dtype is not None else None
    reg = regularizer if regularizer is not None else _C.Regularizer()
    if not isinstance(reg, _C.Regularizer):
        raise TypeError(f"flow.get_variable: regularizer must come from flow.regularizers, got {regularizer!r}")
    blob = context.builder.variable(
        full_name, [int(d) for d in shape], c_dtype, init, reg, True if trainable is None else bool(trainable),
        _distribute.to_c(distribute, f"flow.get_variable({full_name!r}): distribute"),
    )
    variable = Blob(blob, context.builder)
    context.variables[full_name] = variable
    return variable


def _distribute_of_layout(layout, distribute, name):
    """The flow.distribute object of a "B"/"S(axis)" layout list (None or [] leaves `distribute`)."""
    what = f"flow.get_variable({name!r}): parallel_distribution"
    if layout is None or len(layout) == 0:
        return distribute
    if distribute is not None:
        raise ValueError(f"{what}: give it or distribute, not both")
    entries = [str(entry) for entry in layout]
    parsed = [_LAYOUT.fullmatch(entry) for entry in entries]
    if not all(parsed):
        raise ValueError(f"{what}: expected entries like 'B' or 'S(0)', got {entries!r}")
    if all(entry == "B" for entry in entries):
        return _distribute.broadcast()
    if len(entries) > 1:
        raise NotImplementedError(f"{what}: {entries!r} is a 2-D layout; Weir lays variables out over a flat list of devices")
    return _distribute.split(int(parsed[0].group(1)))


_LAYOUT = re.compile(r"B|S\((\d+)\)")


def _handler(blob, handler_or_prompt, what):
    if handler_or_prompt is None or isinstance(handler_or_prompt, str):
        prompt = handler_or_prompt or blob.logical_blob_name

        def print_value(array):
            print(prompt, array)

        return print_value
    if not callable(handler_or_prompt):
        raise TypeError(f"{what}: expected a callable handler or a prompt string, got {handler_or_prompt!r}")
    convert = watch_value_converter(handler_or_prompt, what)
    return lambda array: handler_or_prompt(convert(array))


def watch(blob_watched, handler_or_prompt=None):
    """Calls the handler with the blob's value at every call of the job (a string prints it)."""
    blob = check_blob(blob_watched, "flow.watch", "blob_watched")
    context = _context.current("flow.watch")
    handler = _handler(blob, handler_or_prompt, "flow.watch")
    if context.eager is not None:  # eager mode: the value is there now (a dynamic blob's cut to its size)
        handler(blob.numpy())
        return
    context.watches += 1
    _C.watch(blob._c, handler)


def watch_diff(blob_watched, handler_or_prompt=None):
    """Calls the handler with the gradient of the loss with respect to the blob (train jobs)."""
    blob = check_blob(blob_watched, "flow.watch_diff", "blob_watched")
    _context.current("flow.watch_diff").watches += 1
    _C.watch_diff(blob._c, _handler(blob, handler_or_prompt, "flow.watch_diff"))


# Blob's @ builds a matmul.
install_operators(matmul=matmul)


def _pad2d_sizes(padding, op, x):
    """(left, right, top, bottom) from an int or 4 ints (OneFlow's order), for an NCHW x."""
    if len(x.shape) != 4:
        raise ValueError(f"{op}: x must be 4-D (NCHW), got shape {tuple(x.shape)}")
    sizes = [padding] * 4 if isinstance(padding, (int, np.integer)) else list(padding)
    if len(sizes) != 4 or not all(isinstance(p, (int, np.integer)) and p >= 0 for p in sizes):
        raise ValueError(f"{op}: padding must be an int or (left, right, top, bottom) of ints >= 0, got {padding!r}")
    return [int(p) for p in sizes]


def _pad_axis(x, axis, before, after, edge, name=None):
    """x with `before` and `after` elements added along `axis`, each from edge(x, axis, count, at_start)."""
    parts = ([edge(x, axis, before, True)] if before else []) + [x] + ([edge(x, axis, after, False)] if after else [])
    return concat(parts, axis=axis, name=name) if len(parts) > 1 else identity(x, name=name)


def _along(rank, axis, spec):
    return [spec if a == axis else (None, None, None) for a in range(rank)]


def reflection_pad2d(x, padding, name=None):
    """NCHW `x` padded by reflection at its spatial edges, the edge itself not repeated (x[1], x[0] |
    x[0], x[1], ...); `padding` an int or (left, right, top, bottom), each below its axis's size."""
    op = "flow.reflection_pad2d"
    x = check_blob(x, op, "x")
    left, right, top, bottom = _pad2d_sizes(padding, op, x)
    if max(top, bottom) >= x.shape[2] or max(left, right) >= x.shape[3]:
        raise ValueError(f"{op}: each pad must be below its axis's size {tuple(x.shape[2:])}, got {padding!r}")

    def mirror(v, axis, count, at_start):
        spec = (count, 0, -1) if at_start else (-2, -2 - count, -1)
        return slice_v2(v, _along(4, axis, spec))

    return _pad_axis(_pad_axis(x, 2, top, bottom, mirror), 3, left, right, mirror, name=name)


def replication_pad2d(x, padding, name=None):
    """NCHW `x` padded by repeating its edge values; `padding` an int or (left, right, top, bottom)."""
    op = "flow.replication_pad2d"
    x = check_blob(x, op, "x")
    left, right, top, bottom = _pad2d_sizes(padding, op, x)
    if (top or bottom) and x.shape[2] == 0 or (left or right) and x.shape[3] == 0:
        raise ValueError(f"{op}: an empty axis has no edge to repeat, x of shape {tuple(x.shape)}")

    def repeat(v, axis, count, at_start):
        edge = slice_v2(v, _along(4, axis, (0, 1, 1) if at_start else (-1, None, 1)))
        return concat([edge] * count, axis=axis) if count > 1 else edge

    return _pad_axis(_pad_axis(x, 2, top, bottom, repeat), 3, left, right, repeat, name=name)


def constant_pad2d(x, padding, constant_value=0, name=None):
    """NCHW `x` padded with `constant_value`; `padding` an int or (left, right, top, bottom)."""
    op = "flow.constant_pad2d"
    x = check_blob(x, op, "x")
    left, right, top, bottom = _pad2d_sizes(padding, op, x)
    return pad(x, [(0, 0), (0, 0), (top, bottom), (left, right)], constant_value=constant_value, name=name)


def zero_pad2d(x, padding, name=None):
    """NCHW `x` padded with zeros; `padding` an int or (left, right, top, bottom)."""
    return constant_pad2d(check_blob(x, "flow.zero_pad2d", "x"), padding, 0, name)


def expand(x, expand_size, name=None):
    """`x` repeated along its size-1 axes to `expand_size` (OneFlow's flow.expand, PyTorch's
    Tensor.expand): one entry per output axis, -1 keeping the axis as it is; extra leading entries add
    axes. The gradient sums over the repeats."""
    op = "flow.expand"
    x = check_blob(x, op, "x")
    sizes = [int(d) for d in expand_size]
    rank = len(x.shape)
    if len(sizes) < rank:
        raise ValueError(f"{op}: expand_size {tuple(sizes)} must have at least the {rank} axes of x {tuple(x.shape)}")
    padded = (1,) * (len(sizes) - rank) + tuple(x.shape)
    target = []
    for axis, (have, want) in enumerate(zip(padded, sizes)):
        if want == -1 and axis >= len(sizes) - rank:
            want = have
        if want < 0 or (have != 1 and have != want):
            raise ValueError(f"{op}: axis {axis} of size {have} cannot expand to {expand_size[axis]} "
                             f"(x {tuple(x.shape)}, expand_size {tuple(sizes)})")
        target.append(want)
    if padded != tuple(x.shape):
        x = reshape(x, list(padded))
    return add_op("broadcast_to", [x], op_name(name), shape=target)


def diag(input, diagonal=0, name=None):  # noqa: A002 - OneFlow's name
    """A 1-D input as the `diagonal`-th diagonal of a square matrix of zeros (above the main one for
    diagonal > 0, below for < 0); a 2-D input's `diagonal`-th diagonal as a 1-D blob."""
    op = "flow.diag"
    x = check_blob(input, op, "input")
    if isinstance(diagonal, bool) or not isinstance(diagonal, (int, np.integer)):
        raise TypeError(f"{op}: diagonal must be an int, got {diagonal!r}")
    k = int(diagonal)
    if len(x.shape) == 1:
        n = x.shape[0]
        size = n + abs(k)
        rows = np.arange(n) + max(-k, 0)
        spots = np.stack([rows, rows + k], axis=1).astype(np.int64)
        # The diagonal written into zeros (a replacement moves words, so every dtype, int8 too).
        return tensor_scatter_nd_update(zeros((size, size), x.dtype), constant(spots, dtypes.int64, spots.shape), x, name)
    if len(x.shape) == 2:
        rows, cols = x.shape
        first = np.arange(max(-k, 0), min(rows, cols - k))
        if first.size == 0:
            raise ValueError(f"{op}: diagonal {k} lies outside input of shape {tuple(x.shape)}")
        spots = np.stack([first, first + k], axis=1).astype(np.int64)
        return gather_nd(x, constant(spots, dtypes.int64, spots.shape), name)
    raise ValueError(f"{op}: input must be 1-D or 2-D, got shape {tuple(x.shape)}")


def smooth_l1_loss(prediction, label, beta=1.0, name=None):
    """Elementwise: 0.5 d² / beta where d = |prediction - label| < beta, else d - 0.5 beta (the L1
    distance for beta = 0), as OneFlow's flow.smooth_l1_loss (no reduction)."""
    op = "flow.smooth_l1_loss"
    prediction = check_blob(prediction, op, "prediction")
    label = check_blob(label, op, "label")
    if float(beta) < 0:
        raise ValueError(f"{op}: beta must be >= 0, got {beta}")
    distance = _math.abs(_math.subtract(prediction, label))
    if float(beta) == 0:
        return identity(distance, name)
    quadratic = _math.multiply(_math.square(distance), 0.5 / float(beta))
    linear = _math.subtract(distance, 0.5 * float(beta))
    return where(_math.less(distance, float(beta)), quadratic, linear, name)


def assign(ref, value, dtype=None, name=None):
    """OneFlow's: writes `value` (a blob, or a number or array, of ref's shape and dtype) into the
    variable `ref` in place when the job runs. The call's other ops that read `ref` see its value from
    before; the next call sees the new one. Returns None, as OneFlow's. (`dtype` is accepted and unused,
    as in OneFlow.)"""
    op = "flow.assign"
    check_blob(ref, op, "ref")
    if not is_blob(value):
        value = _constant_of(np.broadcast_to(np.asarray(value), tuple(ref.shape)), ref)
    _C.add_op("assign", [ref._c, value._c], {}, op_name(name))
    _context.current(op).writes += 1


def slice_assign(ref, value, slice_tup_list, name=None):
    """Writes `value` into the slice ref[start:stop:step, ...] (slice_v2's tuples) of the variable
    `ref`, however its parts are placed, as flow.assign writes a whole one: the job's other readers of
    `ref` see its value from before, the next call the new one. Returns None."""
    op = "flow.slice_assign"
    assign(check_blob(ref, op, "ref"), slice_update(ref, check_blob(value, op, "value"), slice_tup_list), name=name)


def distributed_partial_fc_sample(weight, label, num_sample, name=None):
    """Partial-FC sampling for a classifier over many classes (OneFlow's, InsightFace's): a tuple
    (mapped_label, sampled_label, sampled_weight). weight (classes, features) float; label (batch,)
    int32 or int64. The classes fall into as many equal parts as the current placement has devices,
    and each part draws num_sample / parts of its classes: its positive classes (those some label
    names) first, ascending, then others at random, new ones each call. sampled_label lists the drawn
    classes part after part; mapped_label is each label's place in it; sampled_weight the weight's rows
    they pick, through which the gradient flows back into weight. With weight split along its rows
    (flow.distribute.split(0)), each device draws its own parts. The classes and num_sample must divide
    into the parts, and no part may have more positive classes than samples (a call fails naming it)."""
    op = "flow.distributed_partial_fc_sample"
    weight = check_blob(weight, op, "weight")
    label = check_blob(label, op, "label")
    parts = _scope.current_scope().device_parallel_desc_symbol.parallel_num
    if len(weight.shape) != 2 or weight.shape[0] % parts or not isinstance(num_sample, int) or num_sample % parts:
        raise ValueError(f"{op}: the weight's classes ({weight.shape}) and num_sample ({num_sample!r}) must divide into "
                         f"the {parts} devices of the placement")
    attrs = {"num_sample": num_sample, "num_classes": weight.shape[0], "parts": parts, "seed": _random.getrandbits(63)}
    return tuple(wrap(c, weight) for c in _C.add_op("distributed_partial_fc_sample", [weight._c, label._c], attrs,
                                                     op_name(name)))


# --- tensor_buffers: blobs whose elements are tensors of their own shapes (the data pipeline's
# records and images). They live on the host; a job cannot return them.

def tensor_to_tensor_buffer(x, instance_dims, name=None):
    """A tensor_buffer of x's leading axes, each item the block of its trailing `instance_dims` axes
    (1 to 3), of x's dtype."""
    x = check_blob(x, "flow.tensor_to_tensor_buffer", "x")
    return add_op("tensor_to_tensor_buffer", [x], op_name(name), instance_dims=instance_dims)


def tensor_buffer_to_tensor(x, dtype, instance_shape, name=None):
    """The tensor of shape x.shape + instance_shape whose blocks are x's items, each of which must be
    of `dtype` and hold instance_shape's element count (a failed call names the first that does not)."""
    op = "flow.tensor_buffer_to_tensor"
    x = check_blob(x, op, "x")
    return add_op("tensor_buffer_to_tensor", [x], op_name(name), dtype=to_c_dtype(dtype, f"{op}: dtype"),
                  instance_shape=[int(d) for d in instance_shape])


def gen_tensor_buffer(shape, shape_list, value_list, data_type=dtypes.float32, dynamic_out=False, name=None):
    """A tensor_buffer of `shape` whose item i (row-major) has shape shape_list[i] (1 to 3 axes) and
    every element value_list[i], of `data_type`. `dynamic_out` changes nothing: a tensor_buffer's own
    shape is static, and its items keep their shapes."""
    op = "flow.gen_tensor_buffer"
    context = _context.current(op)
    shapes = [tuple(int(d) for d in item) for item in shape_list]
    attrs = {"shape": [int(d) for d in shape], "item_dims": [d for item in shapes for d in item],
             "item_ranks": [len(item) for item in shapes], "values": [float(v) for v in value_list],
             "dtype": to_c_dtype(data_type, f"{op}: data_type")}
    return Blob(_C.add_source_op(context.builder, "gen_tensor_buffer", attrs, op_name(name))[0], context.builder)


def tensor_buffer_to_list_of_tensors(x, out_shape, out_dtype, dynamic_out=False, name=None):
    """One blob per item of the tensor_buffer x (row-major), of `out_shape` and `out_dtype`. Each item
    must be of out_dtype and out_shape's rank; without `dynamic_out` of out_shape itself. With it, an
    item may be smaller on any axis, and its blob is dynamic: a job returns it in the item's shape
    (flow.cast_to_static_shape gives it in out_shape, the item in its leading corner, zeros elsewhere)."""
    op = "flow.tensor_buffer_to_list_of_tensors"
    items = _buffer_items(check_blob(x, op, "x"), out_shape, to_c_dtype(out_dtype, f"{op}: out_dtype"),
                          bool(dynamic_out), name)
    return [item if shape is None else sync_dynamic_resize(item, shape) for item, shape in items]


def _buffer_items(x, out_shape, c_dtype, dynamic_out, name):
    """The tensor_buffer_to_list_of_tensors op on x: (item, its shape blob, or None without dynamic_out)
    for each item."""
    attrs = {"out_shape": [int(d) for d in out_shape], "out_dtype": c_dtype, "dynamic_out": dynamic_out}
    outputs = [wrap(c, x) for c in _C.add_op("tensor_buffer_to_list_of_tensors", [x._c], attrs, op_name(name))]
    if not dynamic_out:
        return [(item, None) for item in outputs]
    items = len(outputs) // 2
    return list(zip(outputs[:items], outputs[items:]))


# --- tensor lists (OneFlow's TensorList): a tp.ListListNumpy placeholder's list of tensors, each a blob
# of its own shape (a list of one tensor is that tensor's blob).

def _tensors_of(tensor_list, op: str) -> list:
    if isinstance(tensor_list, TensorListBlob):
        return tensor_list.items
    return [check_blob(tensor_list, op, "input")]


def tensor_list_split(input_tensor_list, name=None):
    """The tensors of a tensor list, each of shape (1, ...), as blobs without that first axis (a tuple)."""
    op = "flow.tensor_list_split"
    tensors = _tensors_of(input_tensor_list, op)
    for k, tensor in enumerate(tensors):
        if not tensor.shape or tensor.shape[0] != 1:
            raise ValueError(f"{op}: tensor {k} of the list has shape {tuple(tensor.shape)}; each must have one row, "
                             "which the split drops")
    return tuple(reshape(tensor, tensor.shape[1:], None if name is None else f"{name}_{k}")
                 for k, tensor in enumerate(tensors))


def tensor_list_to_tensor_buffer(input, name=None):  # noqa: A002 - OneFlow's name
    """A tensor_buffer of every row of every tensor of a tensor list, in order: each item a row's block
    (a (1, height, width, channels) image tensor gives one (height, width, channels) item)."""
    tensors = _tensors_of(input, "flow.tensor_list_to_tensor_buffer")
    return wrap(_C.add_op("tensor_list_to_tensor_buffer", [t._c for t in tensors], {}, op_name(name))[0], tensors[0])


def tensor_buffer_to_tensor_list(input, shape, dtype, name=None):  # noqa: A002 - OneFlow's name
    """A tensor list of one tensor per item of the tensor_buffer `input`, each (1, *the item's shape):
    items of `dtype`, no larger than `shape` on any axis. Its tensors are dynamic blobs (a job
    returns each in its item's shape)."""
    op = "flow.tensor_buffer_to_tensor_list"
    shape = tuple(int(d) for d in shape)
    items = _buffer_items(check_blob(input, op, "input"), shape, to_c_dtype(dtype, f"{op}: dtype"), True, name)
    one = constant(np.ones(1, np.int64), dtype=dtypes.int64)
    tensors = [sync_dynamic_resize(reshape(item, (1,) + shape), concat([one, item_shape], axis=0))
               for item, item_shape in items]
    return TensorListBlob(tensors, (len(items),) + shape)
