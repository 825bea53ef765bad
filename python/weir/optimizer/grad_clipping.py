"""``flow.optimizer.grad_clipping``: clipping gradients before the update."""

from __future__ import annotations

__all__ = ["by_global_norm"]


class GlobalNormClip:
    """Scale every gradient by clip_norm / max(global_norm, clip_norm)."""

    def __init__(self, clip_norm):
        self.clip_norm = float(clip_norm)
        if not self.clip_norm > 0:
            raise ValueError(f"grad_clipping.by_global_norm: clip_norm must be > 0, got {clip_norm}")


def by_global_norm(clip_norm):
    return GlobalNormClip(clip_norm)
