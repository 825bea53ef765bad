"""``flow.quantization``: OneFlow's quantization-aware training pieces. An observer computes the
scale and zero point of a blob's values (``min_max_observer`` from the blob itself,
``moving_average_min_maxObserver`` from moving statistics it keeps in variables), and
``fake_quantization`` rounds a blob to that integer grid and back, passing its gradient straight
through. Schemes: "google" (TFLite's) "symmetric" (zero point 0, integers in ±(2^(bits-1) - 1)) or
"affine" (integers in [0, 2^bits - 1] around the zero point), and "cambricon" (symmetric, the scale a
power of two whose exponent the observer returns as the scale)."""

from __future__ import annotations

import numpy as np

from weir import _C, _context, dtypes, ops
from weir._ops_util import add_op, check_blob, op_name, wrap

__all__ = ["min_max_observer", "moving_average_min_maxObserver", "fake_quantization"]

_SCHEMES = ("symmetric", "affine")
_FORMULAS = ("google", "cambricon")


def _check_config(op, quantization_bit, quantization_scheme, quantization_formula):
    if isinstance(quantization_bit, bool) or not isinstance(quantization_bit, (int, np.integer)) \
            or not 2 <= quantization_bit <= 8:
        raise ValueError(f"{op}: quantization_bit must be an int in [2, 8], got {quantization_bit!r}")
    if quantization_scheme not in _SCHEMES:
        raise ValueError(f"{op}: quantization_scheme must be 'symmetric' or 'affine', got {quantization_scheme!r}")
    if quantization_formula not in _FORMULAS:
        raise ValueError(f"{op}: quantization_formula must be 'google' or 'cambricon', got {quantization_formula!r}")


def _check_floating(x, op):
    if x.dtype not in (dtypes.float32, dtypes.float64):
        raise TypeError(f"{op}: input must be float32 or float64, got {x.dtype.name}")


def min_max_observer(input, quantization_bit=8, quantization_scheme="symmetric",  # noqa: A002 - OneFlow's names
                     quantization_formula="google", per_layer_quantization=True, name=None):
    """(scale, zero_point) of input's values, of input's dtype (OneFlow's
    flow.quantization.min_max_observer): one entry each, (1,), or per channel along axis 0
    (per_layer_quantization=False, "google" only), (input.shape[0],). Symmetric: scale = max|x| /
    (2^(bits-1) - 1), zero point 0; affine: scale = (max - min) / (2^bits - 1), zero point = -min /
    scale (not rounded); cambricon: scale = floor(log2(max|x|)) - (bits - 2), zero point 0."""
    op = "flow.quantization.min_max_observer"
    x = check_blob(input, op, "input")
    _check_floating(x, op)
    _check_config(op, quantization_bit, quantization_scheme, quantization_formula)
    scale, zero_point = (wrap(c, x) for c in _C.min_max_observer(
        x._c, int(quantization_bit), quantization_scheme == "affine", quantization_formula == "cambricon",
        bool(per_layer_quantization)))
    if name is not None:
        scale, zero_point = ops.identity(scale, f"{name}-scale"), ops.identity(zero_point, f"{name}-zero_point")
    return scale, zero_point


def moving_average_min_maxObserver(input, quantization_bit=8, quantization_scheme="symmetric",  # noqa: A002, N802
                                   quantization_formula="google", momentum=0.95, name=None):
    """(scale, zero_point), each (1,), from moving statistics of input's range (OneFlow's
    flow.quantization.moving_average_min_maxObserver), the formulas of min_max_observer per layer.
    The statistics are variables "<name>-moving_max" and "<name>-moving_min" (unnamed observers are
    "MovingAverageMinMaxObserver", "..._1", ...), zero at first. A train job updates them each call
    before computing the scale: the call's range when they are still zero, else moving · momentum +
    range · (1 - momentum); a predict job reads them as they are."""
    op = "flow.quantization.moving_average_min_maxObserver"
    x = check_blob(input, op, "input")
    _check_floating(x, op)
    _check_config(op, quantization_bit, quantization_scheme, quantization_formula)
    if isinstance(momentum, bool) or not isinstance(momentum, (int, float, np.floating)) or not 0 <= momentum < 1:
        raise ValueError(f"{op}: momentum must be a number in [0, 1), got {momentum!r}")
    full = _context.layer_name(name, op, "MovingAverageMinMaxObserver")
    return tuple(wrap(c, x) for c in _C.moving_average_observer(
        x._c, int(quantization_bit), quantization_scheme == "affine", quantization_formula == "cambricon",
        float(momentum), f"{full}-moving_max", f"{full}-moving_min", _context.current(op).is_train))


def fake_quantization(input, scale, zero_point, quantization_bit=8, quantization_scheme="symmetric",  # noqa: A002
                      quantization_formula="google", name=None):
    """input rounded to the integer grid of an observer's (scale, zero_point) and mapped back
    (OneFlow's flow.quantization.fake_quantization): per layer or per channel along axis 0, as the
    observer gave them. Rounding is to nearest, ties to even; values beyond the grid clamp to its ends.
    The gradient passes to input unchanged (the straight-through estimator), none to scale and
    zero_point."""
    op = "flow.quantization.fake_quantization"
    x = check_blob(input, op, "input")
    _check_floating(x, op)
    _check_config(op, quantization_bit, quantization_scheme, quantization_formula)
    return add_op("fake_quantization", [x, check_blob(scale, op, "scale"), check_blob(zero_point, op, "zero_point")],
                  op_name(name), quantization_bit=int(quantization_bit), quantization_scheme=quantization_scheme,
                  quantization_formula=quantization_formula)
