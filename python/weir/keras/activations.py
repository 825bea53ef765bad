"""``flow.keras.activations``: ``relu`` and ``sigmoid`` as OneFlow exports them (flow.math's, with
Keras's signature)."""

from __future__ import annotations

from weir import math as _math

__all__ = ["relu", "sigmoid"]


def relu(x, alpha=0.0, max_value=None, threshold=0.0, name=None):
    """max(x, 0). OneFlow takes only Keras's defaults (alpha 0, no max_value, threshold 0); so does Weir."""
    if alpha != 0.0 or max_value is not None or threshold != 0.0:
        raise ValueError(f"flow.keras.activations.relu: only alpha=0, max_value=None and threshold=0 are supported "
                         f"(as in OneFlow), got alpha={alpha!r}, max_value={max_value!r}, threshold={threshold!r}")
    return _math.relu(x, name)


def sigmoid(x, name=None):
    """1 / (1 + exp(-x))."""
    return _math.sigmoid(x, name)
