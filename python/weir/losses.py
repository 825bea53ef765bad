"""``flow.losses.add_loss``: the legacy way to train (before ``flow.optimizer``): the loss is
minimised with the learning rate and update rule of ``func_config.train.*``."""

from __future__ import annotations

from weir import _context
from weir._ops_util import check_blob

__all__ = ["add_loss"]


def add_loss(loss):
    context = _context.current("flow.losses.add_loss")
    context.losses.append(check_blob(loss, "flow.losses.add_loss", "loss"))
