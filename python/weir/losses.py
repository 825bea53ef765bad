"""``flow.losses.add_loss``: the legacy way to train (before ``flow.optimizer``): the loss is
minimised with the learning rate and update rule of ``func_config.train.*``."""

from __future__ import annotations

from weir import _context
from weir._ops_util import check_blob

__all__ = ["add_loss"]


def add_loss(loss):
    """Outside a job function it raises NotImplementedError (a RuntimeError), OneFlow's contract."""
    context = _context.maybe_current()
    if context is None:
        raise NotImplementedError(
            "flow.losses.add_loss works inside a job function only: call it in a function decorated with "
            "@flow.global_function, while that function is traced"
        )
    context.losses.append(check_blob(loss, "flow.losses.add_loss", "loss"))
