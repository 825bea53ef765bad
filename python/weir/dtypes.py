"""Weir's dtype objects (OneFlow's ``flow.float32``, ``flow.int32``, ...).

A :class:`DType` is an immutable singleton naming one element type and its NumPy
equivalent.  The module constants mirror OneFlow v0.2's exported set
(``float32``/``float``, ``float64``/``double``, ``float16``, ``int8``/``char``,
``int32``, ``int64``, ``uint8``) plus ``bool_``, ``bfloat16`` and ``tensor_buffer`` (the data
pipeline's records and decoded images, which only the data ops read).

The C++ core computes in f32, f64, i32, i64, u8, i8 and bool (int8 and uint8 are
stored, moved, sliced, concatenated, cast and returned; arithmetic takes the wider
types). ``float16`` and ``bfloat16`` are the storage types of mixed precision: they are
cast to and from, stored in checkpoints, and the products (matmul, conv2d) run in
bfloat16 on CPUs with AVX512_BF16; other ops need float32 inputs. NumPy has no bfloat16:
a bfloat16 result reaches Python as a float32 array (exactly), and ``bfloat16.numpy_dtype``
is float32.

Public helpers:

* ``as_dtype(x) -> DType`` accepts a DType, a NumPy dtype or scalar type, a Python
  type (``float`` -> float64 as NumPy does) or a name (``"float32"``, ``"float"``,
  ``"double"``, ``"char"``, ``"bool"``).
* ``from_numpy(np_dtype) -> DType`` raises ``TypeError`` naming the dtype when Weir
  has no equivalent (e.g. complex128, or a non-native byte order).
* ``convert_oneflow_dtype_to_numpy_dtype(dtype) -> numpy.dtype`` (OneFlow's name).
"""

from __future__ import annotations

import sys
import types

import numpy as np

__all__ = [
    "DType",
    "float32",
    "float",
    "float64",
    "double",
    "float16",
    "bfloat16",
    "int8",
    "char",
    "int32",
    "int64",
    "uint8",
    "bool_",
    "tensor_buffer",
    "as_dtype",
    "from_numpy",
    "convert_oneflow_dtype_to_numpy_dtype",
]


class DType:
    """One element type.  Instances are singletons: compare with ``is`` or ``==``."""

    __slots__ = ("name", "numpy_dtype")

    def __init__(self, name: str, numpy_dtype) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "numpy_dtype", np.dtype(numpy_dtype))

    def __setattr__(self, key, value):
        # Dtypes are shared module constants; mutating one would silently change
        # every placeholder that uses it.
        raise AttributeError("weir dtypes are immutable")

    def __repr__(self) -> str:
        return f"weir.{self.name}"

    __str__ = __repr__

    def __reduce__(self):
        # Pickle by name so that unpickling yields the module singleton again.
        return (as_dtype, (self.name,))


float32 = DType("float32", np.float32)
float64 = DType("float64", np.float64)
float16 = DType("float16", np.float16)
bfloat16 = DType("bfloat16", np.float32)  # numpy has none: values travel as float32
int8 = DType("int8", np.int8)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
uint8 = DType("uint8", np.uint8)
bool_ = DType("bool", np.bool_)
# The data pipeline's variable-sized items (records, decoded images): only the data ops read it, and
# no numpy array holds it.
tensor_buffer = DType("tensor_buffer", np.object_)

# OneFlow aliases.  ``float`` shadows the builtin inside this module only, which is
# why the builtin is never used below.
float = float32  # noqa: A001 - OneFlow's public name
double = float64
char = int8  # OneFlow maps kChar to numpy int8

_ALL = (float32, float64, float16, bfloat16, int8, int32, int64, uint8, bool_, tensor_buffer)
_BY_NAME = {d.name: d for d in _ALL}
_BY_NAME.update({"float": float32, "double": float64, "char": int8, "bool_": bool_, "half": float16})
_BY_NUMPY = {d.numpy_dtype: d for d in _ALL if d not in (bfloat16, tensor_buffer)}


def _supported_names() -> str:
    return ", ".join(d.name for d in _ALL)


def from_numpy(np_dtype) -> DType:
    """Weir dtype for a NumPy dtype (or anything ``numpy.dtype()`` accepts)."""
    if isinstance(np_dtype, DType):
        return np_dtype
    try:
        nd = np.dtype(np_dtype)
    except TypeError as e:
        raise TypeError(f"{np_dtype!r} is not a numpy dtype") from e
    found = _BY_NUMPY.get(nd)
    if found is None:
        raise TypeError(
            f"numpy dtype {nd.str if not nd.isnative else nd.name} has no weir equivalent "
            f"(supported: {_supported_names()})"
        )
    return found


def as_dtype(x) -> DType:
    """Coerce ``x`` (DType, numpy dtype/type, Python type or name string) to a DType."""
    if isinstance(x, DType):
        return x
    if isinstance(x, str):
        found = _BY_NAME.get(x)
        if found is not None:
            return found
        raise TypeError(f"unknown dtype name {x!r} (supported: {_supported_names()})")
    if x is None:
        raise TypeError(f"expected a dtype, got None (supported: {_supported_names()})")
    return from_numpy(x)


def convert_oneflow_dtype_to_numpy_dtype(dtype) -> np.dtype:
    """NumPy dtype of a Weir dtype (OneFlow's name for this function)."""
    return as_dtype(dtype).numpy_dtype


def make_module_callable(module_name: str, function) -> None:
    """Makes the module `module_name` callable as `function`: OneFlow had functions where Weir has
    modules of the same name (``flow.dtypes()``, the old ``flow.input_blob_def(shape)``)."""
    module = sys.modules[module_name]

    class _CallableModule(types.ModuleType):
        __doc__ = module.__doc__

        def __call__(self, *args, **kwargs):
            return function(*args, **kwargs)

    module.__class__ = _CallableModule


def _all_dtypes() -> list:
    """OneFlow's ``flow.dtypes()``: every dtype."""
    return list(_ALL)


make_module_callable(__name__, _all_dtypes)
