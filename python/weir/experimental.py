"""``flow.experimental``: OneFlow's helpers under that name. ``name_scope`` (``flow.name_scope``),
``square_sum``, and ``enable_typing_check``."""

from __future__ import annotations

from weir import _function, ops, scope
from weir import math as _math
from weir._ops_util import check_blob

__all__ = ["name_scope", "square_sum", "enable_typing_check"]

name_scope = scope.namespace


def square_sum(x, name=None):
    """The sum of the squares of every element of `x`, as a blob of shape (1,) (OneFlow's
    square_sum). Its gradient is 2 x times the incoming one."""
    check_blob(x, "flow.experimental.square_sum", "x")
    return ops.reshape(_math.reduce_sum(_math.square(x)), (1,), name=name)


def enable_typing_check(val=True):
    """As OneFlow's: job functions decorated after ``enable_typing_check(True)`` must annotate every
    parameter (``tp.Numpy.Placeholder(...)``, ...) and the return (``-> tp.Numpy``, ``-> None``, ...);
    one that does not is refused when decorated, naming the function. Off by default: un-annotated
    parameters are OneFlow's legacy placeholders (``flow.FixedTensorDef`` defaults) and an
    un-annotated return a future."""
    if not isinstance(val, bool):
        raise ValueError(f"flow.experimental.enable_typing_check: expected True or False, got {val!r}")
    _function.set_typing_check(val)
