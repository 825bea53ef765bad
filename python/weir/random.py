"""``flow.random``: random draws a job makes on each call (OneFlow's): ``CoinFlip``, ``bernoulli``,
``generate_random_batch_permutation_indices`` and ``shuffle``. Each draws anew at every call; with
`seed` a run repeats; without it the op's seed comes from Python's `random` module when the job is
traced (``random.seed(n)`` first makes a run repeat). In a split batch each device draws its own rows."""

from __future__ import annotations

from weir import _C, dtypes, ops
from weir import math as _math
from weir._ops_util import check_blob
from weir.data import _random_draws, _seed, _source

__all__ = ["CoinFlip", "coin_flip", "bernoulli", "generate_random_batch_permutation_indices", "shuffle"]

_PROBABILITY_DTYPES = (dtypes.float32, dtypes.float64, dtypes.float16, dtypes.bfloat16)


def CoinFlip(batch_size=1, seed=None, probability=0.5, name=None):  # noqa: N802 - OneFlow's name
    """Each call, (batch_size,) int8 values, 1 with `probability` (each device of a split batch draws
    its own): the mirror_blob of flow.image.CropMirrorNormalize. Without `seed` the op's seed comes
    from Python's `random` module when the job is traced."""
    if not 0.0 <= float(probability) <= 1.0:
        raise ValueError(f"flow.random.CoinFlip: probability must be within [0, 1], got {probability!r}")
    return _source("coin_flip", "flow.random.CoinFlip", name, batch_size=int(batch_size), probability=float(probability),
                   seed=_seed(seed))


coin_flip = CoinFlip


def _uniform_draws(shape, seed, api, argument):
    """Each call, float64 draws uniform in [0, 1) of `shape` (at least one row): decode_random's rows.
    In float64 (53 random bits) a draw below p happens with probability p exactly, also for p near 1,
    where a float32 draw could round up to 1."""
    if len(shape) > 0 and shape[0] < 1:
        raise ValueError(f"{api}: {argument} must have at least one row, got shape {tuple(shape)}")
    rows = shape[0] if len(shape) > 0 else 1
    draws = _random_draws(shape[1:], dtypes.float64, rows, _C.random_uniform_initializer(0.0, 1.0), seed, api, None)
    return draws if len(shape) > 0 else ops.reshape(draws, [])


def bernoulli(x, seed=None, dtype=None, name=None):
    """Each call, 1 with probability x and 0 otherwise, elementwise (x's shape; `dtype`, default x's):
    OneFlow's flow.random.bernoulli. x holds probabilities in [0, 1] (floating point)."""
    api = "flow.random.bernoulli"
    x = check_blob(x, api, "x")
    if x.dtype not in _PROBABILITY_DTYPES:
        raise TypeError(f"{api}: x must hold floating-point probabilities (float32, float64, float16 or bfloat16), "
                        f"got {x.dtype}")
    draws = _uniform_draws(x.shape, seed, api, "x")
    probabilities = x if x.dtype == dtypes.float64 else ops.cast(x, dtypes.float64)
    return ops.cast(_math.less(draws, probabilities), x.dtype if dtype is None else dtype, name)


def generate_random_batch_permutation_indices(value, seed=None, name=None):
    """Each call, a random permutation of range(value.shape[0]) as int32: the order of rows that
    flow.random.shuffle gives (OneFlow's). Every permutation is equally likely."""
    api = "flow.random.generate_random_batch_permutation_indices"
    value = check_blob(value, api, "value")
    if len(value.shape) == 0:
        raise ValueError(f"{api}: value must have a batch axis, got a scalar")
    # Sorting independent uniform keys gives each order the same chance (ties: 2^-53 per pair).
    return ops.argsort(_uniform_draws(value.shape[:1], seed, api, "value"), name=name)


def shuffle(value, seed=None, name=None):
    """Each call, `value` with its rows (axis 0) in a new random order (OneFlow's flow.random.shuffle).
    Its gradient takes each row's gradient back to where the row came from. In the mirrored view each
    device reorders its own rows; in the consistent view the order covers the whole batch."""
    api = "flow.random.shuffle"
    value = check_blob(value, api, "value")
    if len(value.shape) == 0:
        raise ValueError(f"{api}: value must have a batch axis, got a scalar")
    return ops.gather(value, generate_random_batch_permutation_indices(value, seed), axis=0, name=name)
