"""Variable initializers (OneFlow's ``flow.*_initializer`` family). Each returns an opaque
initializer that ``flow.get_variable`` and the layers take."""

from __future__ import annotations


from weir import _C, dtypes

__all__ = [
    "constant_initializer", "zeros_initializer", "ones_initializer", "random_uniform_initializer",
    "random_normal_initializer", "truncated_normal_initializer", "truncated_normal",
    "glorot_uniform_initializer", "xavier_uniform_initializer", "glorot_normal_initializer",
    "xavier_normal_initializer", "variance_scaling_initializer", "kaiming_initializer",
]


def _seed(seed):
    return None if seed is None else int(seed)


def _check_dtype(dtype):
    # Validates only: the variable's dtype decides the stored type.
    if dtype is not None:
        dtypes.as_dtype(dtype)


def constant_initializer(value=0, dtype=dtypes.float32):
    _check_dtype(dtype)
    return _C.constant_initializer(float(value))


def zeros_initializer(dtype=dtypes.float32):
    return constant_initializer(0, dtype)


def ones_initializer(dtype=dtypes.float32):
    return constant_initializer(1, dtype)


def random_uniform_initializer(minval=0, maxval=1, dtype=dtypes.float32, seed=None):
    """U[minval, maxval); a variable of an integer dtype gets integers uniform in [minval, maxval)
    (OneFlow's random_uniform_int), so both bounds must be integers."""
    _check_dtype(dtype)
    return _C.random_uniform_initializer(float(minval), float(maxval), _seed(seed))


def random_normal_initializer(mean=0.0, stddev=1.0, seed=None, dtype=None):
    _check_dtype(dtype)
    return _C.random_normal_initializer(float(mean), float(stddev), _seed(seed))


def truncated_normal_initializer(mean=0.0, stddev=1.0, seed=None, dtype=None):
    """N(mean, stddev²) resampled until |x - mean| < 2·stddev."""
    _check_dtype(dtype)
    return _C.truncated_normal_initializer(float(mean), float(stddev), _seed(seed))


def truncated_normal(stddev=1.0):
    """The docs' ``flow.truncated_normal(0.1)``: a truncated normal with mean 0."""
    return truncated_normal_initializer(0.0, stddev)


def variance_scaling_initializer(scale=1.0, mode="fan_in", distribution="truncated_normal", data_format=""):
    return _C.variance_scaling_initializer(float(scale), mode, distribution, data_format)


def glorot_uniform_initializer(data_format=""):
    return variance_scaling_initializer(1.0, "fan_avg", "random_uniform", data_format)


xavier_uniform_initializer = glorot_uniform_initializer


def glorot_normal_initializer(data_format=""):
    return variance_scaling_initializer(1.0, "fan_avg", "random_normal", data_format)


xavier_normal_initializer = glorot_normal_initializer


def kaiming_initializer(shape=None, distribution="random_normal", mode="fan_in", nonlinearity="leaky_relu",
                        negative_slope=0.0, data_format="NCHW"):
    """He et al.; `shape` is accepted for OneFlow compatibility (the variable's shape decides)."""
    return _C.kaiming_initializer(distribution, mode, nonlinearity, float(negative_slope), data_format)


def resolve(initializer, what, default=None):
    """`initializer`, or `default` (constant 0 unless given) when None; TypeError otherwise."""
    if initializer is None:
        return default if default is not None else _C.constant_initializer(0.0)
    if not isinstance(initializer, _C.Initializer):
        raise TypeError(f"{what}: expected an initializer such as flow.truncated_normal(0.1), got {initializer!r}")
    return initializer


def with_seed(initializer, seed):
    """A copy of `initializer` drawing from `seed` (get_variable's random_seed)."""
    return _C.with_seed(initializer, int(seed))


