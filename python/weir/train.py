"""``flow.train``: OneFlow 0.2's checkpoint object."""

from __future__ import annotations

import os

from weir import checkpoint

__all__ = ["CheckPoint"]


class CheckPoint:
    """``init()`` gives every variable its initializer's value (Weir does this when a job is
    compiled, so it only starts the session); ``save(path)`` writes every variable; ``load(path)``
    reads them, and variables the checkpoint lacks keep their initial values (a warning names
    them), which is how OneFlow programs fine-tune."""

    def init(self):
        checkpoint._started_session()

    def save(self, path):
        checkpoint.save(path)

    def load(self, path):
        path = os.fspath(path)
        missing, _unexpected = checkpoint._started_session().load_checkpoint(path)
        return missing
