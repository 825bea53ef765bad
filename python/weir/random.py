"""``flow.random``: random draws a job makes on each call (OneFlow's): ``CoinFlip``."""

from __future__ import annotations

from weir.data import _seed, _source

__all__ = ["CoinFlip", "coin_flip"]


def CoinFlip(batch_size=1, seed=None, probability=0.5, name=None):  # noqa: N802 - OneFlow's name
    """Each call, (batch_size,) int8 values, 1 with `probability` (each device of a split batch draws
    its own): the mirror_blob of flow.image.CropMirrorNormalize. Without `seed` the op's seed comes
    from Python's `random` module when the job is traced."""
    if not 0.0 <= float(probability) <= 1.0:
        raise ValueError(f"flow.random.CoinFlip: probability must be within [0, 1], got {probability!r}")
    return _source("coin_flip", "flow.random.CoinFlip", name, batch_size=int(batch_size), probability=float(probability),
                   seed=_seed(seed))


coin_flip = CoinFlip
