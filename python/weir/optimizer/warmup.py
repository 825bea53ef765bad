"""``flow.optimizer.warmup``: ramps at the start of a learning-rate schedule."""

from __future__ import annotations

from weir import _C

__all__ = ["constant", "linear"]


class Warmup:
    def __init__(self, c_warmup):
        self._c = c_warmup


def constant(steps, multiplier):
    """The rate times `multiplier` for the first `steps` steps."""
    return Warmup(_C.constant_warmup(int(steps), float(multiplier)))


def linear(steps, start_multiplier):
    """The rate ramping linearly from `start_multiplier` times it to itself over `steps` steps."""
    return Warmup(_C.linear_warmup(int(steps), float(start_multiplier)))
