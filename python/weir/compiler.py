"""``flow.compiler``: OneFlow 0.4's other spelling of a job function. ``flow.compiler.trace(func,
type=..., execution_config=...)`` (or as a decorator, without func) is ``flow.global_function(type,
function_config)`` with eager mode switched off, and ``flow.ExecutionConfig`` is FunctionConfig."""

from __future__ import annotations

from weir import _context
from weir._function import FunctionConfig, global_function

__all__ = ["trace"]


def trace(func=None, *, execution_config: FunctionConfig = None, type: str = "predict"):  # noqa: A002
    """A job function of `func` (a decorator when func is None), compiled as OneFlow's lazy mode does."""
    if type not in ("train", "predict"):
        raise ValueError(f"flow.compiler.trace: type must be 'train' or 'predict', got {type!r}")
    _context.eager_execution = False
    decorate = global_function(type=type, function_config=execution_config)
    return decorate if func is None else decorate(func)
