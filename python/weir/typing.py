"""``weir.typing`` (imported as ``tp``): OneFlow's job-function annotations.

Public names are exactly OneFlow v0.2's: ``Numpy``, ``ListNumpy``, ``ListListNumpy``,
``Callback`` and ``Bundle``.

Parameters (inputs) are annotated with placeholder classes::

    def job(images: tp.Numpy.Placeholder((100, 1, 28, 28), dtype=flow.float),
            labels: tp.Numpy.Placeholder((100,), dtype=flow.int32)) -> tp.Numpy: ...

``X.Placeholder(shape, dtype=float32, batch_axis=0)`` returns a NEW class, a subclass
of ``X.Placeholder`` carrying ``shape`` (tuple of positive ints), ``dtype`` (a
:class:`weir.dtypes.DType`) and ``batch_axis`` (normalised to ``0 <= batch_axis <
len(shape)``; ``None`` only for ``Numpy``) as class attributes, plus ``kind``
(``"numpy"``, ``"list"`` or ``"listlist"``).  Annotations are evaluated when the
``def`` statement runs, even for functions that are never decorated, so creation is
cheap and has no side effect; bad arguments raise at once (``TypeError`` for a wrong
type, ``ValueError`` for a wrong value).  Placeholder classes are annotations only:
calling a concrete one raises ``TypeError``.

Returns are annotated with ``Numpy`` / ``ListNumpy`` / ``ListListNumpy`` themselves,
``typing.Tuple``/``List``/``Dict`` over them, ``Bundle[E]`` or ``Callback[T]``; the
rules live in :mod:`weir._signature`.
"""

import typing as _typing

import numpy as _np

from weir import dtypes as _dtypes

__all__ = ["Numpy", "ListNumpy", "ListListNumpy", "Callback", "Bundle"]


class _PlaceholderMeta(type):
    """Metaclass of the placeholder families.

    Calling a family base (``Numpy.Placeholder(...)``) creates a concrete subclass;
    calling a concrete class is an error (they describe a parameter, they are not
    values).  It also gives concrete classes a readable ``repr`` for error messages.
    """

    def __call__(cls, *args, **kwargs):
        if getattr(cls, "_concrete", False):
            raise TypeError(
                f"{cls!r} is a parameter annotation, not a value; "
                "pass a numpy array when calling the job function"
            )
        return _make_placeholder(cls, *args, **kwargs)

    def __repr__(cls) -> str:
        if getattr(cls, "_concrete", False):
            return (
                f"tp.{cls.__qualname__}(shape={cls.shape!r}, dtype={cls.dtype.name}, "
                f"batch_axis={cls.batch_axis!r})"
            )
        return f"tp.{cls.__qualname__}"


class _PlaceholderBase(metaclass=_PlaceholderMeta):
    """Common base of the three placeholder families (not public)."""

    kind: _typing.ClassVar[str] = ""
    _allow_none_batch_axis: _typing.ClassVar[bool] = False
    _concrete: _typing.ClassVar[bool] = False
    shape: _typing.ClassVar[tuple] = ()
    dtype: _typing.ClassVar[_dtypes.DType] = _dtypes.float32
    batch_axis: _typing.ClassVar[_typing.Optional[int]] = 0


def _check_shape(where: str, shape) -> tuple:
    # OneFlow asserts ``type(shape) is tuple``; a list is the classic typo (oneflow#3558),
    # so it gets its own hint.  Tuple subclasses (namedtuples) are fine.
    if not isinstance(shape, tuple):
        hint = f" (write tuple({shape!r}) instead)" if isinstance(shape, list) else ""
        raise TypeError(
            f"{where}: shape must be a tuple of positive ints, got {type(shape).__name__} {shape!r}{hint}"
        )
    if len(shape) == 0:
        raise ValueError(f"{where}: shape must have at least one dimension, got ()")
    dims = []
    for i, d in enumerate(shape):
        if isinstance(d, (bool, _np.bool_)) or not isinstance(d, (int, _np.integer)):
            raise TypeError(
                f"{where}: shape must be a tuple of positive ints, but shape[{i}] is "
                f"{type(d).__name__} {d!r} in {shape!r}"
            )
        if d <= 0:
            raise ValueError(
                f"{where}: shape must be a tuple of positive ints, but shape[{i}] is {int(d)} in {shape!r}"
            )
        dims.append(int(d))
    return tuple(dims)


def _check_dtype(where: str, dtype) -> _dtypes.DType:
    try:
        checked = _dtypes.as_dtype(dtype)
    except TypeError as e:
        raise TypeError(f"{where}: dtype must be a weir dtype (e.g. flow.float32), got {dtype!r}: {e}") from None
    if checked is _dtypes.bfloat16:
        raise TypeError(f"{where}: dtype bfloat16: numpy has no bfloat16 arrays to pass; use a float32 placeholder "
                        "and flow.cast(x, flow.bfloat16)")
    return checked


def _check_batch_axis(where: str, batch_axis, rank: int, allow_none: bool):
    if batch_axis is None:
        if allow_none:
            return None
        raise TypeError(f"{where}: batch_axis must be an int (None is only allowed for tp.Numpy.Placeholder)")
    if isinstance(batch_axis, (bool, _np.bool_)) or not isinstance(batch_axis, (int, _np.integer)):
        raise TypeError(f"{where}: batch_axis must be an int, got {type(batch_axis).__name__} {batch_axis!r}")
    axis = int(batch_axis)
    if not -rank <= axis < rank:
        raise ValueError(f"{where}: batch_axis must be in [{-rank}, {rank}) for a rank-{rank} shape, got {axis}")
    return axis + rank if axis < 0 else axis


def _validate_placeholder_args(where: str, shape, dtype, batch_axis, allow_none_batch_axis: bool):
    """Validate and normalise (shape, dtype, batch_axis); shared with input_blob_def."""
    shape = _check_shape(where, shape)
    dtype = _check_dtype(where, dtype)
    batch_axis = _check_batch_axis(where, batch_axis, len(shape), allow_none_batch_axis)
    return shape, dtype, batch_axis


def _make_placeholder(family, shape, dtype=_dtypes.float32, batch_axis=0, name=None):
    where = f"tp.{family.__qualname__}()"
    # Some docs programs name their placeholders; Weir names each after its parameter, so the name
    # is checked and kept for reference only.
    if name is not None and not isinstance(name, str):
        raise TypeError(f"{where}: name must be a str, got {name!r}")
    shape, dtype, batch_axis = _validate_placeholder_args(
        where, shape, dtype, batch_axis, family._allow_none_batch_axis
    )
    # ``type(family)`` is the metaclass, so the subclass keeps the guarded __call__.
    return type(family)(
        family.__name__,
        (family,),
        {
            "__module__": family.__module__,
            "__qualname__": family.__qualname__,
            "_concrete": True,
            "shape": shape,
            "dtype": dtype,
            "batch_axis": batch_axis,
            "placeholder_name": name,
        },
    )


class _PyStructCompatibleToBlob:
    """Marker base of Numpy/ListNumpy/ListListNumpy (OneFlow's PyStructCompatibleToBlob)."""


class Numpy(_PyStructCompatibleToBlob):
    """A ``numpy.ndarray`` (consistent view).

    As a return or callback annotation: the caller receives one ndarray.
    ``Numpy.Placeholder(shape, dtype=float32, batch_axis=0)`` annotates an input that
    takes one ndarray of exactly that shape and dtype.
    """

    class Placeholder(_PlaceholderBase):
        kind = "numpy"
        _allow_none_batch_axis = True


class ListNumpy(_PyStructCompatibleToBlob):
    """A list of ndarrays, one per device (mirrored view).

    ``ListNumpy.Placeholder(shape, dtype=float32, batch_axis=0)`` annotates an input
    that takes a list holding one ndarray per device, each of that rank and no larger
    than that shape (a dynamic input, as OneFlow's: the ops see the actual sizes).
    """

    class Placeholder(_PlaceholderBase):
        kind = "list"


class ListListNumpy(_PyStructCompatibleToBlob):
    """A list (per device) of lists (tensor list) of ndarrays.

    ``ListListNumpy.Placeholder(shape, dtype=float32, batch_axis=0)`` annotates an
    input that takes ``[[ndarray], ...]``, each array no larger than that shape
    (dynamic, as ListNumpy's).
    """

    class Placeholder(_PlaceholderBase):
        kind = "listlist"


_T = _typing.TypeVar("_T")


class Callback(_typing.Generic[_T]):
    """``-> tp.Callback[T]``: the job call returns ``register(cb)``; ``cb(result: T)``
    is later invoked once with what ``-> T`` would have returned."""


class Bundle(_typing.Generic[_T]):
    """``-> tp.Bundle[E]`` (E in Numpy, ListNumpy, ListListNumpy): the job returns a
    blob or any nesting of list/tuple/dict of blobs; the caller receives the same
    nesting with each blob converted as E."""


# Lookup tables used by weir._signature (kept here so the two stay in sync).
_FAMILY_BY_KIND = {"numpy": Numpy, "list": ListNumpy, "listlist": ListListNumpy}
_KIND_BY_FAMILY = {Numpy: "numpy", ListNumpy: "list", ListListNumpy: "listlist"}


def _is_placeholder_class(x) -> bool:
    """True for a concrete placeholder class such as ``Numpy.Placeholder((2,))``."""
    return isinstance(x, _PlaceholderMeta) and getattr(x, "_concrete", False)
