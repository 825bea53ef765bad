"""``flow.math``: elementwise arithmetic, activations and reductions."""

from __future__ import annotations

import random as _random

import numpy as np

from weir import _C, dtypes
from weir._blob import Blob, install_operators, is_blob, is_scalar, to_c_dtype
from weir._ops_util import add_op, at_least_one_axis, axes_list, check_blob, constant_like, op_name

__all__ = [
    "add", "subtract", "multiply", "divide", "mod", "pow", "add_n", "negative", "maximum", "minimum",
    "relu", "sigmoid", "tanh", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "argmax",
    "exp", "log", "sqrt", "rsqrt", "square", "abs", "reciprocal", "log1p", "expm1", "softplus",
    "sign", "floor", "ceil", "round", "rint", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
    "acosh", "atanh", "erf", "erfc", "log_sigmoid", "gelu", "reciprocal_no_nan", "clip_by_value", "top_k", "cumsum",
    "equal", "not_equal", "greater", "greater_equal", "less", "less_equal", "squared_difference",
    "unsorted_segment_sum", "unsorted_segment_sum_like", "unsorted_batch_segment_sum", "reduce_variance", "reduce_std", "reduce_euclidean_norm",
    "reduce_logsumexp", "l2_normalize", "xdivy", "xlogy", "reduce_any", "reduce_all", "in_top_k", "tril",
    "atan2", "floordiv", "reduced_shape_elem_cnt", "sigmoid_v2", "two_stage_reduce_max", "two_stage_reduce_min",
    "fused_scale_tril", "fused_scale_tril_softmax_dropout", "lgamma", "reduce_prod", "logical_and", "logical_or",
    "logical_xor", "polyval", "tanh_v2",
]


def _binary(op_type, scalar_kind, reversed_kind, op: str, x, y, name, **attrs):
    """x (op) y for two blobs, or a blob and a number or array (a constant of the blob's dtype; or the
    scalar op's `scalar_kind` / `reversed_kind` where there is one)."""
    name = op_name(name)
    if is_blob(x) and is_blob(y):
        return add_op(op_type, [x, y], name, **attrs)
    if is_blob(x) and is_scalar(y):
        if scalar_kind is None:
            return add_op(op_type, [x, constant_like(y, x)], name, **attrs)
        return add_op("scalar", [x], name, kind=scalar_kind, value=float(y))
    if is_scalar(x) and is_blob(y):
        if reversed_kind is None:
            return add_op(op_type, [constant_like(x, y), y], name, **attrs)
        return add_op("scalar", [y], name, kind=reversed_kind, value=float(x))
    if is_blob(x) and isinstance(y, np.ndarray):
        return add_op(op_type, [x, constant_like(y, x)], name, **attrs)
    if isinstance(x, np.ndarray) and is_blob(y):
        return add_op(op_type, [constant_like(x, y), y], name, **attrs)
    raise TypeError(f"{op}: expected blobs or a blob and a number, got {type(x).__name__} and {type(y).__name__}")


def add(x, y, name=None):
    """x + y: elementwise with numpy broadcasting, or with a scalar."""
    return _binary("add", "add", "add", "flow.math.add", x, y, name)


def subtract(x, y, name=None):
    return _binary("sub", "sub", "rsub", "flow.math.subtract", x, y, name)


def multiply(x, y, name=None):
    return _binary("mul", "mul", "mul", "flow.math.multiply", x, y, name)


def divide(x, y, name=None):
    return _binary("div", "div", "rdiv", "flow.math.divide", x, y, name)


def mod(x, y, name=None):
    """x mod y with the divisor's sign (floor modulo, Python's %); elementwise with numpy broadcasting, or
    with a number. An integer divisor of 0 fails the call."""
    return _binary("mod", None, None, "flow.math.mod", x, y, name)


def squared_difference(x, y, name=None):
    """(x - y)² elementwise with numpy broadcasting."""
    return add_op("unary", [subtract(x, y)], op_name(name), kind="square")


def pow(x, y, name=None):  # noqa: A001 - OneFlow's name
    """x ** y elementwise: a number exponent (any dtype of x), or a blob exponent with numpy
    broadcasting (float32 and float64; the gradient in y is dy·x^y·ln x where x > 0, else 0)."""
    if is_blob(y) or isinstance(y, np.ndarray) or is_scalar(x):
        return _binary("pow", "pow", None, "flow.math.pow", x, y, name)
    check_blob(x, "flow.math.pow", "x")
    if not is_scalar(y):
        raise TypeError(f"flow.math.pow: the exponent must be a number or a blob, got {type(y).__name__}")
    return add_op("scalar", [x], op_name(name), kind="pow", value=float(y))


def _unary(kind):
    def op(x, name=None):
        x = check_blob(x, f"flow.math.{kind}", "x")
        return add_op("unary", [x], op_name(name), kind=kind)

    op.__name__ = op.__qualname__ = kind
    op.__doc__ = f"{kind}(x), elementwise."
    return op


exp = _unary("exp")
relu = _unary("relu")
sigmoid = _unary("sigmoid")
sigmoid_v2 = sigmoid  # OneFlow's second sigmoid op: the same function and gradient
tanh = _unary("tanh")
tanh_v2 = tanh  # likewise
log = _unary("log")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
square = _unary("square")
abs = _unary("abs")  # noqa: A001 - OneFlow's name
negative = _unary("negative")
reciprocal = _unary("reciprocal")
log1p = _unary("log1p")
expm1 = _unary("expm1")
softplus = _unary("softplus")
sign = _unary("sign")
floor = _unary("floor")
ceil = _unary("ceil")
round = _unary("round")  # noqa: A001 - OneFlow's name
rint = round
sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
asin = _unary("asin")
acos = _unary("acos")
atan = _unary("atan")
sinh = _unary("sinh")
cosh = _unary("cosh")
asinh = _unary("asinh")
acosh = _unary("acosh")
atanh = _unary("atanh")
erf = _unary("erf")
erfc = _unary("erfc")
log_sigmoid = _unary("log_sigmoid")
lgamma = _unary("lgamma")
gelu = _unary("gelu")
gelu.__doc__ = "x·Φ(x), Φ the standard normal CDF (the exact form, as OneFlow's gelu), elementwise."
reciprocal_no_nan = _unary("reciprocal_no_nan")
reciprocal_no_nan.__doc__ = "1/x elementwise, and 0 where x is 0."


def maximum(x, y, name=None):
    """Elementwise max with numpy broadcasting."""
    return _binary("maximum", None, None, "flow.math.maximum", x, y, name)


def minimum(x, y, name=None):
    return _binary("minimum", None, None, "flow.math.minimum", x, y, name)


def _comparison(kind):
    def op(x, y, name=None):
        return _binary("compare", None, None, f"flow.math.{kind}", x, y, name, kind=kind)

    op.__name__ = op.__qualname__ = kind
    op.__doc__ = f"x {kind} y elementwise with numpy broadcasting, as int8 1 or 0 (OneFlow's broadcast_{kind})."
    return op


equal = _comparison("equal")
not_equal = _comparison("not_equal")
greater = _comparison("greater")
greater_equal = _comparison("greater_equal")
less = _comparison("less")
less_equal = _comparison("less_equal")


def clip_by_value(values, min_value=None, max_value=None, name=None):
    """values clamped to [min_value, max_value] (either bound may be None)."""
    x = check_blob(values, "flow.math.clip_by_value", "values")
    if min_value is None and max_value is None:
        raise ValueError("flow.math.clip_by_value: give min_value, max_value or both")
    return add_op("clip_by_value", [x], op_name(name), min=None if min_value is None else float(min_value),
                  max=None if max_value is None else float(max_value))


def top_k(input, k=1, sorted=True, name=None, axis=-1):  # noqa: A002 - OneFlow's names
    """The indices (int32) of the k largest entries along `axis` (the last by default), largest first
    (always sorted; a NaN counts as the largest, equal values in index order): input's shape with
    min(k, n) along the axis. OneFlow 0.4's order, top_k(input, axis, k, sorted), is read too: a call
    whose third argument is an int, not a bool, gives the axis second."""
    if isinstance(sorted, (int, np.integer)) and not isinstance(sorted, (bool, np.bool_)):
        axis, k, name = k, sorted, None if isinstance(name, (bool, np.bool_)) else name
    x = check_blob(input, "flow.math.top_k", "input")
    if not x.shape:
        raise ValueError("flow.math.top_k: input must have at least one axis, got a scalar")
    rank = len(x.shape)
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not -rank <= axis < rank:
        raise ValueError(f"flow.math.top_k: axis must be an int in [{-rank}, {rank}) for input of shape "
                         f"{tuple(x.shape)}, got {axis!r}")
    axis = int(axis) % rank
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"flow.math.top_k: k must be an int >= 1, got {k!r}")
    if axis != rank - 1:  # along the last axis, between two swaps of it with `axis`
        perm = list(range(rank))
        perm[axis], perm[-1] = rank - 1, axis
        last = top_k(add_op("transpose", [x], "", perm=perm), k)
        return add_op("transpose", [last], op_name(name), perm=perm)
    k = min(int(k), x.shape[-1])  # as OneFlow's kernel: a k beyond the axis gives the whole axis, largest first
    if k == 1:
        return add_op("reshape", [argmax(x, -1)], op_name(name), shape=list(x.shape[:-1]) + [1])
    order = add_op("argsort", [x], "", descending=True)
    return add_op("slice", [order], op_name(name), start=[0] * rank, stop=list(x.shape[:-1]) + [int(k)], step=[1] * rank)


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """The running sums of x (float32, float64, int32, int64) along `axis` (TensorFlow's and OneFlow's):
    from the end with `reverse`; with `exclusive` each sum leaves out its own element (the first is 0)."""
    x = check_blob(x, "flow.math.cumsum", "x")
    return add_op("cumsum", [x], op_name(name), axis=int(axis), exclusive=bool(exclusive), reverse=bool(reverse))


def add_n(inputs, name=None):
    """The sum of a list of blobs of one shape."""
    inputs = list(inputs)
    if not inputs:
        raise ValueError("flow.math.add_n: expected at least one blob")
    total = check_blob(inputs[0], "flow.math.add_n", "inputs[0]")
    for index, blob in enumerate(inputs[1:], 1):
        check_blob(blob, "flow.math.add_n", f"inputs[{index}]")
        if blob.shape != total.shape:
            raise ValueError(f"flow.math.add_n: inputs[{index}] has shape {blob.shape}, inputs[0] has {total.shape}")
        total = add_op("add", [total, blob], op_name(name) if index == len(inputs) - 1 else "")
    return total


def _reduce(op, x, axis, keepdims, name):
    """`axis=None` reduces every axis; an empty list reduces none (x unchanged, as in OneFlow and NumPy).
    A reduction of every axis has shape (1,), as OneFlow's (its blobs have at least one axis)."""
    axes = axes_list(axis, f"flow.math.{op}")
    if axis is not None and not axes:
        return add_op("identity", [x], op_name(name))
    reduced = add_op(op, [x], op_name(name), axes=axes, keep_dims=bool(keepdims))
    return at_least_one_axis(reduced)


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    x = check_blob(input_tensor, "flow.math.reduce_sum", "input_tensor")
    return _reduce("reduce_sum", x, axis, keepdims, name)


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    x = check_blob(input_tensor, "flow.math.reduce_mean", "input_tensor")
    return _reduce("reduce_mean", x, axis, keepdims, name)


def argmax(input, axis=-1, name=None):  # noqa: A002 - OneFlow's name
    """The index of the largest element along `axis` (int32), the axis removed."""
    x = check_blob(input, "flow.math.argmax", "input")
    return at_least_one_axis(add_op("argmax", [x], op_name(name), axis=int(axis), output_dtype=_C.DType.int32))


def reduce_max(input_tensor, axis=None, keepdims=False, name=None):
    x = check_blob(input_tensor, "flow.math.reduce_max", "input_tensor")
    return _reduce("reduce_max", x, axis, keepdims, name)


def reduce_min(input_tensor, axis=None, keepdims=False, name=None):
    x = check_blob(input_tensor, "flow.math.reduce_min", "input_tensor")
    return _reduce("reduce_min", x, axis, keepdims, name)


def reduce_prod(input_tensor, axis=None, keepdims=False, name=None):
    """The product over `axis` (every axis when None); its gradient is right with zeros among the
    elements (the product of the others, never a division by zero)."""
    x = check_blob(input_tensor, "flow.math.reduce_prod", "input_tensor")
    return _reduce("reduce_prod", x, axis, keepdims, name)


def two_stage_reduce_max(x, axis=None, keepdims=False, name=None):
    """reduce_max computed by OneFlow in two stages (on each device, then across them) for a split x:
    the same result, and the same gradient (shared among the tied maxima)."""
    return reduce_max(x, axis, keepdims, name)


def two_stage_reduce_min(x, axis=None, keepdims=False, name=None):
    """reduce_min, as two_stage_reduce_max is reduce_max."""
    return reduce_min(x, axis, keepdims, name)


def _named(name, part):
    return None if name is None else f"{name}_{part}"


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """The mean squared deviation from the mean over `axis` (the population variance)."""
    x = check_blob(input_tensor, "flow.math.reduce_variance", "input_tensor")
    mean = reduce_mean(x, axis, keepdims=True, name=_named(name, "mean"))
    return reduce_mean(square(x - mean), axis, keepdims=keepdims, name=name)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """The square root of reduce_variance."""
    x = check_blob(input_tensor, "flow.math.reduce_std", "input_tensor")
    return sqrt(reduce_variance(x, axis, keepdims, name=_named(name, "variance")), name=name)


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """sqrt(sum(x²)) over `axis`."""
    x = check_blob(input_tensor, "flow.math.reduce_euclidean_norm", "input_tensor")
    return sqrt(reduce_sum(square(x), axis, keepdims, name=_named(name, "sum")), name=name)


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    """log(sum(e^x)) over `axis`, computed as m + log(sum(e^(x - m))) with m the maximum, so that it
    neither overflows nor underflows to -inf."""
    op = "flow.math.reduce_logsumexp"
    x = check_blob(input_tensor, op, "input_tensor")
    peak = reduce_max(x, axis, keepdims=True, name=_named(name, "max"))
    kept = add(peak, log(reduce_sum(exp(x - peak), axis, keepdims=True, name=_named(name, "sum"))),
               name=name if keepdims else _named(name, "kept"))
    if keepdims:
        return kept
    # The reduced axes are 1s in `kept`: dropping them is a reshape, not a second maximum over x.
    rank = len(x.shape)
    reduced = set(range(rank)) if axis is None else {a % rank for a in axes_list(axis, op)}
    return add_op("reshape", [kept], op_name(name), shape=[d for i, d in enumerate(x.shape) if i not in reduced])


def l2_normalize(input, axis=None, epsilon=1e-12, name=None):  # noqa: A002 - OneFlow's name
    """x / sqrt(max(sum(x², axis), epsilon)) (OneFlow's flow.math.l2_normalize, whose kernel takes the
    maximum; axis None: every axis). Where the sum is below epsilon no gradient flows through the norm."""
    op = "flow.math.l2_normalize"
    x = check_blob(input, op, "input")
    if x.dtype not in (dtypes.float32, dtypes.float64):
        raise TypeError(f"{op}: input must be float32 or float64, got {x.dtype.name}")
    squares = reduce_sum(square(x), axis, keepdims=True, name=_named(name, "square_x_sum"))
    return multiply(x, rsqrt(maximum(squares, float(epsilon))), name=name)


def _where(condition, x, y, name=""):
    return add_op("where", [condition, x, y], name)


def _zero_where_x_is_zero(op, x, y, f, name):
    """where(x == 0, 0, f(x, y')) with y' = 1 where x is 0, so that neither the value nor the gradient
    of the branch not taken is a NaN (0 / 0, log 0)."""
    x = check_blob(x, op, "x")
    y = check_blob(y, op, "y") if is_blob(y) else constant_like(y, x)
    zero_x = equal(x, 0)
    safe_y = _where(zero_x, constant_like(1, y), y)
    return _where(zero_x, constant_like(0, x), f(x, safe_y), op_name(name))


def xdivy(x, y, name=None):
    """x / y, and 0 where x is 0 (y = 0 included), with numpy broadcasting."""
    return _zero_where_x_is_zero("flow.math.xdivy", x, y, divide, name)


def xlogy(x, y, name=None):
    """x · log(y), and 0 where x is 0 (y = 0 included), with numpy broadcasting."""
    return _zero_where_x_is_zero("flow.math.xlogy", x, y, lambda a, b: a * log(b), name)


def _reduce_logical(op, reduce, input_tensor, axis, keepdims, name):
    x = check_blob(input_tensor, f"flow.math.{op}", "input_tensor")
    truth = add_op("cast", [not_equal(x, 0)], "", dtype=to_c_dtype(dtypes.int32, op))
    reduced = reduce(truth, axis, keepdims, name=_named(name, "reduced"))
    return add_op("cast", [reduced], op_name(name), dtype=to_c_dtype(dtypes.int8, op))


def reduce_any(input_tensor, axis=None, keepdims=False, name=None):
    """1 (int8) where some element over `axis` is nonzero, else 0; over no elements, 0."""
    return _reduce_logical("reduce_any", reduce_max, input_tensor, axis, keepdims, name)


def reduce_all(input_tensor, axis=None, keepdims=False, name=None):
    """1 (int8) where every element over `axis` is nonzero, else 0; over no elements, 1."""
    return _reduce_logical("reduce_all", reduce_min, input_tensor, axis, keepdims, name)


def _logical(op, combine, x, y, name):
    x = check_blob(x, f"flow.math.{op}", "x")
    truth = [add_op("cast", [not_equal(v, 0)], "", dtype=to_c_dtype(dtypes.int32, op)) if is_blob(v) else int(v != 0)
             for v in (x, y)]
    return add_op("cast", [combine(*truth)], op_name(name), dtype=to_c_dtype(dtypes.int8, op))


def logical_and(x, y, name=None):
    """1 (int8) where x and y are both nonzero, else 0; numpy-broadcast (y a blob or a number)."""
    return _logical("logical_and", multiply, x, y, name)


def logical_or(x, y, name=None):
    """1 (int8) where x or y is nonzero, else 0; numpy-broadcast."""
    return _logical("logical_or", maximum, x, y, name)


def logical_xor(x, y, name=None):
    """1 (int8) where exactly one of x and y is nonzero, else 0; numpy-broadcast."""
    return _logical("logical_xor", not_equal, x, y, name)


def polyval(coeffs, x, name=None):
    """The polynomial coeffs[0] x^(n-1) + ... + coeffs[n-1] at each element of x (numpy.polyval's
    order), by Horner's rule; `coeffs` a list of numbers. An empty list gives zeros."""
    op = "flow.math.polyval"
    x = check_blob(x, op, "x")
    if not isinstance(coeffs, (list, tuple)) or not all(is_scalar(c) for c in coeffs):
        raise TypeError(f"{op}: coeffs must be a list or tuple of numbers, got {coeffs!r}")
    if not coeffs:
        return multiply(x, 0, name)
    if len(coeffs) == 1:
        return add(multiply(x, 0), coeffs[0], name)
    value = multiply(x, coeffs[0])
    for index, c in enumerate(coeffs[1:], 1):
        value = add(value, c, name if index == len(coeffs) - 1 else None)
        if index < len(coeffs) - 1:
            value = multiply(value, x)
    return value


def in_top_k(targets, predictions, k, name=None):
    """1 (int8) for each row of `predictions` (N, C) whose target class (targets: N int32/int64) is
    among its k largest, ties included (fewer than k classes score higher), as OneFlow's and
    TensorFlow's in_top_k; 0 for a row with a non-finite prediction; a target outside [0, C) fails
    the call."""
    op = "flow.math.in_top_k"
    targets = check_blob(targets, op, "targets")
    predictions = check_blob(predictions, op, "predictions")
    if len(predictions.shape) != 2 or tuple(targets.shape) != (predictions.shape[0],):
        raise ValueError(f"{op}: predictions must be (N, C) and targets (N,), got predictions "
                         f"{tuple(predictions.shape)} and targets {tuple(targets.shape)}")
    if targets.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"{op}: targets must be int32 or int64, got {targets.dtype.name}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"{op}: k must be an int, got {k!r}")
    hot = add_op("one_hot", [targets], "", depth=int(predictions.shape[1]), dtype=to_c_dtype(dtypes.int32, op))
    picked = reduce_sum(_where(hot, predictions, constant_like(0, predictions)), axis=1, keepdims=True)
    higher = add_op("cast", [greater(predictions, picked)], "", dtype=to_c_dtype(dtypes.int32, op))
    in_k = add_op("cast", [less(reduce_sum(higher, axis=1), int(k))], "", dtype=to_c_dtype(dtypes.int32, op))
    # A row with a non-finite prediction cannot say (TensorFlow's and OneFlow's kernels give 0): x - x is
    # 0 exactly where x is finite.
    finite = add_op("cast", [equal(subtract(predictions, predictions), 0)], "", dtype=to_c_dtype(dtypes.int32, op))
    return add_op("cast", [multiply(in_k, reduce_min(finite, axis=1))], op_name(name), dtype=to_c_dtype(dtypes.int8, op))


def tril(x, diagonal=0, fill_value=0, name=None):
    """x's lower triangle over its last two axes: the elements with column − row <= diagonal, the
    others `fill_value` (OneFlow's flow.math.tril)."""
    op = "flow.math.tril"
    x = check_blob(x, op, "x")
    if len(x.shape) < 2:
        raise ValueError(f"{op}: x needs at least 2 axes, got shape {tuple(x.shape)}")
    if isinstance(diagonal, bool) or not isinstance(diagonal, (int, np.integer)):
        raise TypeError(f"{op}: diagonal must be an int, got {diagonal!r}")
    rows, cols = x.shape[-2], x.shape[-1]
    keep = np.tril(np.ones((rows, cols), np.int8), int(diagonal))
    mask = Blob(x._job.constant(np.ascontiguousarray(keep), ""), x._job)
    return _where(mask, x, constant_like(fill_value, x), op_name(name))


# Blob's + - * / % ** build these ops.
install_operators(add=add, subtract=subtract, multiply=multiply, divide=divide, mod=mod, pow=pow, equal=equal,
                  not_equal=not_equal, greater=greater, greater_equal=greater_equal, less=less, less_equal=less_equal)


def fused_scale_tril(x, diagonal=0, fill_value=0, scale=1, name=None):
    """tril(x * scale, diagonal, fill_value): the lower triangle of x scaled, the rest fill_value
    (unscaled), as OneFlow's fused op gives (a transformer's causal mask of scaled scores)."""
    x = check_blob(x, "flow.math.fused_scale_tril", "x")
    if isinstance(scale, bool) or not isinstance(scale, (int, float, np.integer, np.floating)):
        raise TypeError(f"flow.math.fused_scale_tril: scale must be a number, got {scale!r}")
    return tril(x * scale if scale != 1 else x, diagonal, fill_value, name)


def _dropout(x, rate, seed, name):
    """flow.nn.dropout's op: `seed` None draws one from Python's `random` module now (at tracing)."""
    if seed is None:
        seed = _random.getrandbits(63)
    return Blob(_C.dropout(x._c, float(rate), int(seed), name), x._job)


def fused_scale_tril_softmax_dropout(x, diagonal=0, scale=1.0, fill_value=0.0, rate=0.0, noise_shape=None, seed=None,
                                     name=None):
    """dropout(softmax(fused_scale_tril(x, diagonal, fill_value, scale)), rate) along the last axis, as
    OneFlow's fused op (a transformer's causal attention weights: fill_value -inf masks the future).
    Composed of those ops here; the dropout acts in train jobs only."""
    x = check_blob(x, "flow.math.fused_scale_tril_softmax_dropout", "x")
    if noise_shape is not None:
        raise ValueError("flow.math.fused_scale_tril_softmax_dropout: noise_shape is not supported; the mask has x's shape")
    weights = add_op("softmax", [fused_scale_tril(x, diagonal, fill_value, scale)], "", axis=-1)
    return _dropout(weights, rate, seed, op_name(name)) if rate > 0 else weights


def unsorted_segment_sum(data, segment_ids, num_segments, axis=0, name=None):
    """`data`, whose axes from `axis` on start with segment_ids' shape, summed by id (int32/int64)
    into `num_segments` segments: data.shape[:axis] + (num_segments,) + the axes after the ids',
    zeros where no id points. An id outside [0, num_segments) fails the call."""
    data = check_blob(data, "flow.math.unsorted_segment_sum", "data")
    segment_ids = check_blob(segment_ids, "flow.math.unsorted_segment_sum", "segment_ids")
    return add_op("unsorted_segment_sum", [data, segment_ids], op_name(name), axis=int(axis),
                  num_segments=int(num_segments))


def unsorted_batch_segment_sum(data, segment_ids, num_segments, name=None):
    """unsorted_segment_sum for each batch entry: segment_ids (B..., n) has data's leading axes, the
    ones before its last being batch axes; data's rows along segment_ids' last axis are summed by id
    into num_segments rows, entry by entry: the result is data's shape with that axis num_segments
    long. An id outside [0, num_segments) fails the call."""
    op = "flow.math.unsorted_batch_segment_sum"
    data = check_blob(data, op, "data")
    segment_ids = check_blob(segment_ids, op, "segment_ids")
    ids_shape = tuple(segment_ids.shape)
    if len(ids_shape) < 1 or tuple(data.shape[:len(ids_shape)]) != ids_shape:
        raise ValueError(f"{op}: segment_ids must have data's leading axes, got data {tuple(data.shape)} and "
                         f"segment_ids {ids_shape}")
    if isinstance(num_segments, bool) or not isinstance(num_segments, (int, np.integer)) or num_segments < 1:
        raise ValueError(f"{op}: num_segments must be a positive int, got {num_segments!r}")
    num_segments = int(num_segments)
    batch = int(np.prod(ids_shape[:-1], dtype=np.int64))
    rows, rest = ids_shape[-1], list(data.shape[len(ids_shape):])
    # Entry b's ids moved to [b * num_segments, (b + 1) * num_segments); an id out of its entry's
    # range becomes -1, out of every entry's, so that the segment sum refuses it.
    offsets = constant_like(np.arange(batch).reshape(ids_shape[:-1] + (1,)) * num_segments, segment_ids)
    in_range = multiply(greater_equal(segment_ids, 0), less(segment_ids, num_segments))
    ids = _where(in_range, add(segment_ids, offsets), constant_like(np.full(ids_shape, -1), segment_ids))
    flat = add_op("reshape", [data], "", shape=[batch * rows] + rest)
    summed = unsorted_segment_sum(flat, add_op("reshape", [ids], "", shape=[batch * rows]), batch * num_segments)
    return add_op("reshape", [summed], op_name(name), shape=list(ids_shape[:-1]) + [num_segments] + rest)


def unsorted_segment_sum_like(data, segment_ids, like, axis=0, name=None):
    """unsorted_segment_sum with as many segments as `like` has along `axis`."""
    like = check_blob(like, "flow.math.unsorted_segment_sum_like", "like")
    rank = len(like.shape)
    if not -rank <= int(axis) < rank:
        raise ValueError(f"flow.math.unsorted_segment_sum_like: axis must be in [{-rank}, {rank}) for like of shape "
                         f"{tuple(like.shape)}, got {axis}")
    return unsorted_segment_sum(data, segment_ids, like.shape[int(axis)], axis=axis, name=name)


def _same_shape_and_dtype(op, x, y):
    """OneFlow's binary math ops of this kind take two blobs of one shape and dtype (no broadcasting)."""
    x, y = check_blob(x, op, "x"), check_blob(y, op, "y")
    if tuple(x.shape) != tuple(y.shape) or x.dtype != y.dtype:
        raise ValueError(f"{op}: x and y must have one shape and dtype, got {tuple(x.shape)} {x.dtype.name} and "
                         f"{tuple(y.shape)} {y.dtype.name}")
    return x, y


def atan2(x, y, name=None):
    """The angle of the point (y, x) in radians, in [-π, π]: atan(x / y) in the right quadrant (x the
    numerator, as OneFlow's). Gradients y / (x² + y²) and -x / (x² + y²). Built as 2·atan(x / (r + y))
    with r = √(x² + y²), which holds everywhere but on the non-positive y axis (x = 0, y ≤ 0), where the
    angle is π (or 0 at the origin) and its gradient is taken as 0."""
    op = "flow.math.atan2"
    x, y = _same_shape_and_dtype(op, x, y)
    if x.dtype not in (dtypes.float32, dtypes.float64):
        raise TypeError(f"{op}: x and y must be float32 or float64, got {x.dtype.name}")
    zero = constant_like(0, x)
    x_is_zero = equal(x, 0)
    on_axis = _where(x_is_zero, less_equal(y, 0), constant_like(0, x_is_zero))  # int8: x = 0 and y ≤ 0
    one = constant_like(1, x)
    squares = _where(on_axis, one, square(x) + square(y))  # no 0 under the square root (its gradient)
    denominator = _where(on_axis, one, sqrt(squares) + y)
    angle = 2.0 * atan(divide(x, denominator))
    axis_angle = _where(less(y, 0), constant_like(np.pi, x), zero)
    return _where(on_axis, axis_angle, angle, op_name(name))


def floordiv(x, y, name=None):
    """floor(x / y) elementwise (x and y of one shape and dtype). Integers round toward negative
    infinity as Python's //: (x - x mod y) / y, exact; a divisor of 0 fails the call. No gradient flows
    through it (it is piecewise constant)."""
    op = "flow.math.floordiv"
    x, y = _same_shape_and_dtype(op, x, y)
    if x.dtype in (dtypes.float32, dtypes.float64):
        return floor(divide(x, y), name=name)
    if x.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"{op}: x and y must be float32, float64, int32 or int64, got {x.dtype.name}")
    return divide(subtract(x, mod(x, y)), y, name=name)


def reduced_shape_elem_cnt(input_blob, axis=None, dtype=None, name=None):
    """OneFlow's: the number of elements of `input_blob` over the axes `axis` (a sequence; every axis by
    default), as a one-element blob of `dtype` (int32 by default). Shapes are fixed when the job is
    built, so it is a constant."""
    op = "flow.math.reduced_shape_elem_cnt"
    check_blob(input_blob, op, "input_blob")
    shape = input_blob.shape
    axes = range(len(shape)) if axis is None else axes_list(axis, op)
    for a in axes:
        if not -len(shape) <= a < len(shape):
            raise ValueError(f"{op}: axis {a} is out of range for a blob of shape {tuple(shape)}")
    count = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.int32
    array = np.full((1,), count, dtype=dtype.numpy_dtype)
    return Blob(input_blob._job.constant(array, op_name(name)), input_blob._job)
