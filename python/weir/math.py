"""``flow.math``: elementwise arithmetic, activations and reductions."""

from __future__ import annotations

import numpy as np

from weir import _C
from weir._blob import is_blob, is_scalar
from weir._ops_util import axes_list, check_blob, constant_like, op_name, wrap

__all__ = [
    "add", "subtract", "multiply", "divide", "pow", "add_n", "negative", "maximum", "minimum",
    "relu", "sigmoid", "tanh", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "argmax",
    "exp", "log", "sqrt", "rsqrt", "square", "abs", "reciprocal", "log1p", "expm1", "softplus",
    "sign", "floor", "ceil", "round", "rint", "sin", "cos", "clip_by_value", "top_k",
]


def _binary(c_op, scalar_kind, reversed_kind, op: str, x, y, name):
    name = op_name(name)
    if is_blob(x) and is_blob(y):
        return wrap(c_op(x._c, y._c, name), x)
    if is_blob(x) and is_scalar(y):
        if scalar_kind is None:
            return wrap(c_op(x._c, constant_like(y, x)._c, name), x)
        return wrap(_C.scalar(x._c, scalar_kind, float(y), name), x)
    if is_scalar(x) and is_blob(y):
        if reversed_kind is None:
            return wrap(c_op(constant_like(x, y)._c, y._c, name), y)
        return wrap(_C.scalar(y._c, reversed_kind, float(x), name), y)
    if is_blob(x) and isinstance(y, np.ndarray):
        return wrap(c_op(x._c, constant_like(y, x)._c, name), x)
    if isinstance(x, np.ndarray) and is_blob(y):
        return wrap(c_op(constant_like(x, y)._c, y._c, name), y)
    raise TypeError(f"{op}: expected blobs or a blob and a number, got {type(x).__name__} and {type(y).__name__}")


def add(x, y, name=None):
    """x + y: elementwise with numpy broadcasting, or with a scalar."""
    return _binary(_C.add, "add", "add", "flow.math.add", x, y, name)


def subtract(x, y, name=None):
    return _binary(_C.sub, "sub", "rsub", "flow.math.subtract", x, y, name)


def multiply(x, y, name=None):
    return _binary(_C.mul, "mul", "mul", "flow.math.multiply", x, y, name)


def divide(x, y, name=None):
    return _binary(_C.div, "div", "rdiv", "flow.math.divide", x, y, name)


def pow(x, y, name=None):  # noqa: A001 - OneFlow's name
    """x ** y for a scalar exponent."""
    check_blob(x, "flow.math.pow", "x")
    if not is_scalar(y):
        raise TypeError(f"flow.math.pow: the exponent must be a number, got {type(y).__name__}")
    return wrap(_C.scalar(x._c, "pow", float(y), op_name(name)), x)


def _unary(kind):
    def op(x, name=None):
        x = check_blob(x, f"flow.math.{kind}", "x")
        return wrap(_C.unary(x._c, kind, op_name(name)), x)

    op.__name__ = op.__qualname__ = kind
    op.__doc__ = f"{kind}(x), elementwise."
    return op


exp = _unary("exp")
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


def maximum(x, y, name=None):
    """Elementwise max with numpy broadcasting."""
    return _binary(_C.maximum, None, None, "flow.math.maximum", x, y, name)


def minimum(x, y, name=None):
    return _binary(_C.minimum, None, None, "flow.math.minimum", x, y, name)


def clip_by_value(values, min_value=None, max_value=None, name=None):
    """values clamped to [min_value, max_value] (either bound may be None)."""
    x = check_blob(values, "flow.math.clip_by_value", "values")
    if min_value is None and max_value is None:
        raise ValueError("flow.math.clip_by_value: give min_value, max_value or both")
    return wrap(_C.clip_by_value(x._c, None if min_value is None else float(min_value),
                                 None if max_value is None else float(max_value), op_name(name)), x)


def top_k(input, k=1, sorted=True, name=None):  # noqa: A002 - OneFlow's names
    """Indices of the k largest entries of the last axis; only k = 1 (argmax) is supported."""
    if k != 1:
        raise ValueError(f"flow.math.top_k: Weir supports k=1 (argmax), got k={k}")
    from weir import ops

    return ops.expand_dims(argmax(input, -1), -1, name)


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
        total = wrap(_C.add(total._c, blob._c, op_name(name) if index == len(inputs) - 1 else ""), total)
    return total


def relu(x, name=None):
    return wrap(_C.relu(check_blob(x, "flow.math.relu", "x")._c, op_name(name)), x)


def sigmoid(x, name=None):
    return wrap(_C.sigmoid(check_blob(x, "flow.math.sigmoid", "x")._c, op_name(name)), x)


def tanh(x, name=None):
    return wrap(_C.tanh(check_blob(x, "flow.math.tanh", "x")._c, op_name(name)), x)


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    x = check_blob(input_tensor, "flow.math.reduce_sum", "input_tensor")
    return wrap(_C.reduce_sum(x._c, axes_list(axis, "flow.math.reduce_sum"), bool(keepdims), op_name(name)), x)


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    x = check_blob(input_tensor, "flow.math.reduce_mean", "input_tensor")
    return wrap(_C.reduce_mean(x._c, axes_list(axis, "flow.math.reduce_mean"), bool(keepdims), op_name(name)), x)


def argmax(input, axis=-1, name=None):  # noqa: A002 - OneFlow's name
    """The index of the largest element along `axis` (int32), the axis removed."""
    x = check_blob(input, "flow.math.argmax", "input")
    return wrap(_C.argmax(x._c, int(axis), _C.DType.int32, op_name(name)), x)


def reduce_max(input_tensor, axis=None, keepdims=False, name=None):
    x = check_blob(input_tensor, "flow.math.reduce_max", "input_tensor")
    return wrap(_C.reduce_max(x._c, axes_list(axis, "flow.math.reduce_max"), bool(keepdims), op_name(name)), x)


def reduce_min(input_tensor, axis=None, keepdims=False, name=None):
    x = check_blob(input_tensor, "flow.math.reduce_min", "input_tensor")
    return wrap(_C.reduce_min(x._c, axes_list(axis, "flow.math.reduce_min"), bool(keepdims), op_name(name)), x)
