"""``flow.regularizers``: L1/L2 penalties a variable's optimizer adds to its gradient."""

from __future__ import annotations

from weir import _C

__all__ = ["l1", "l2", "l1_l2"]


def _check(value, what):
    value = float(value)
    if value < 0:
        raise ValueError(f"flow.regularizers: {what} must be >= 0, got {value}")
    return value


def l1(l=0.01):  # noqa: E741 - OneFlow's parameter name
    return _C.Regularizer(l1=_check(l, "l"), l2=0.0)


def l2(l=0.01):  # noqa: E741
    return _C.Regularizer(l1=0.0, l2=_check(l, "l"))


def l1_l2(l1=0.01, l2=0.01):
    return _C.Regularizer(l1=_check(l1, "l1"), l2=_check(l2, "l2"))
