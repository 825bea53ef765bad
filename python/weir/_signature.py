"""Job-function signatures: annotation checking, argument flattening, result building.

This module is the pure-Python machinery behind ``@flow.global_function``; it knows
nothing about ``weir._C``.  The decorator uses it in four steps:

1. Decoration: ``sig = parse_signature(fn, localns=None, *, require_annotations=False)``
   validates every annotation at once and raises :class:`AnnotationError` (a subclass
   of both ``TypeError`` and ``NotImplementedError``, OneFlow's exception) naming the
   function and the bad annotation.  ``localns`` lets the decorator pass the caller's
   locals for string annotations (``from __future__ import annotations``) that refer to
   local names; ``require_annotations=True`` is OneFlow's ``enable_typing_check``:
   un-annotated parameters or return become errors.
2. Tracing (once): ``args = sig.build_arguments(make_blob)`` calls ``make_blob(leaf)``
   for each :class:`PlaceholderLeaf` in ``sig.leaves`` order and nests the blobs as the
   ``Tuple`` annotations say; the decorator calls ``fn(*args)``.  With the value the body
   returned, ``template = sig.flatten_returns(value, is_blob)`` checks it against the
   return annotation (``TypeError`` naming the function, what was expected and what was
   returned) and gives a :class:`ResultTemplate` whose ``leaves`` are the returned blobs
   in flatten order (a blob returned twice appears twice) and ``leaf_kinds`` says how
   each is converted (``"numpy"``, ``"list"``, ``"listlist"`` or ``"local"``).
3. Each call: ``arrays = sig.flatten_call_args(args, kwargs)`` validates the call and
   returns one C-contiguous ndarray per leaf (the caller's own array when it already is
   contiguous, so push/copy it before returning control to user code).  Errors:
   wrong argument count or keyword arguments -> ``TypeError``; non-ndarray, or a dtype that
   does not convert (not a number, or byte-swapped) -> ``TypeError``; wrong shape or wrong
   per-device list length -> ``ValueError``; all name the function and the argument. A
   number array of another number dtype is converted (as OneFlow converts it), with a warning.
4. Results: ``template.build(arrays)`` (one array per template leaf) gives what the
   caller receives.  ``sig.is_async`` (``-> tp.Callback[T]``): the call returns a
   registrar and the callback gets ``template.build(arrays)``.  ``sig.returns_future``
   (no return annotation): the call returns ``LegacyFuture(wait_fn, template,
   register_fn)``, whose ``.get()`` / ``.async_get(cb)`` give :class:`LocalBlob` objects.

Return annotations accepted: ``None``; ``tp.Numpy`` / ``tp.ListNumpy`` /
``tp.ListListNumpy`` (caller gets ``a`` / ``[a]`` / ``[[a]]``); ``Tuple[...]`` (exact
length, non-empty), ``List[T]`` (any length), ``Dict[K, V]`` (each key's type exactly
``K``), nested over those (builtin ``tuple[...]`` etc. too); ``tp.Bundle[E]`` with E one
of the three (any list/tuple/dict nesting, any hashable keys, tuple stays tuple);
``tp.Callback[T]`` for any of the above including ``None`` and ``Bundle``; or none at
all (legacy: a blob or any nesting, or ``None``, converted to :class:`LocalBlob`).

``watch_value_converter(handler, what="flow.watch")`` returns the function that turns a
watched blob's ndarray into the value the handler's annotation asks for.

JobSignature attributes: ``fn_name``, ``param_names``, ``leaves``, ``return_annotation``
(resolved; ``inspect.Signature.empty`` when absent), ``result_annotation`` (the ``T`` of
``Callback[T]``, else the return annotation), ``is_async``, ``returns_none``,
``returns_future``, ``legacy_params`` (parameters declared with ``flow.FixedTensorDef``
defaults).

Mirrored (``ListNumpy``/``ListListNumpy``) inputs hold one array per device of the session
(``[[array, ...]]`` per device for tensor lists), list index i for device i; list
results hold one array per device (OneFlow 0.2/0.3; ``tp.Numpy`` results of a mirrored job are
the devices' arrays concatenated along axis 0, OneFlow 0.4's rule). A ``Numpy`` input of a mirrored
job is one array, split along axis 0 over the devices (each device's blob has its rows, as OneFlow
splits a consistent input in the mirrored view). A ``Numpy`` input's shape must match its placeholder
exactly; a list input's arrays may be smaller (dynamic shapes).
"""

from __future__ import annotations

import dataclasses
import inspect
import threading
import typing
import warnings
from typing import Any, Callable, Optional

import numpy as np

from weir import dtypes
from weir import typing as tp
from weir.input_blob_def import ArgBlobDef

__all__ = [
    "AnnotationError",
    "PlaceholderLeaf",
    "JobSignature",
    "ResultTemplate",
    "CallArrays",
    "TensorListShapes",
    "cut_to_size",
    "LocalBlob",
    "LegacyFuture",
    "parse_signature",
    "watch_value_converter",
]

_EMPTY = inspect.Parameter.empty
_NONE_TYPE = type(None)
_FAMILIES = (tp.Numpy, tp.ListNumpy, tp.ListListNumpy)


def _is_family(ann) -> bool:
    # Identity, not ``in``: an arbitrary annotation object may define a strange ``==``.
    return any(ann is f for f in _FAMILIES)


class AnnotationError(TypeError, NotImplementedError):
    """An annotation that Weir's job functions do not support.

    OneFlow raises ``NotImplementedError`` here and Python convention says
    ``TypeError``; subclassing both lets either ``except`` clause catch it.
    """


# --------------------------------------------------------------------------- helpers


def _fmt(ann) -> str:
    """Readable form of an annotation for error messages (``Tuple[tp.Numpy, tp.Numpy]``)."""
    if ann is _EMPTY:
        return "<no annotation>"
    if ann is None or ann is _NONE_TYPE:
        return "None"
    if ann is Ellipsis:
        return "..."
    if isinstance(ann, tp._PlaceholderMeta):
        return repr(ann)
    if _is_family(ann):
        return f"tp.{ann.__name__}"
    if ann is tp.Callback or ann is tp.Bundle:
        return f"tp.{ann.__name__}"
    origin = typing.get_origin(ann)
    if origin is tp.Callback or origin is tp.Bundle:
        return f"tp.{origin.__name__}[{', '.join(_fmt(a) for a in typing.get_args(ann))}]"
    if origin in (tuple, list, dict):
        name = {tuple: "Tuple", list: "List", dict: "Dict"}[origin]
        args = typing.get_args(ann)
        return f"{name}[{', '.join(_fmt(a) for a in args)}]" if args else name
    if isinstance(ann, type):
        return ann.__qualname__
    return repr(ann)


def _describe(value) -> str:
    """Short description of a returned / passed value for error messages."""
    if value is None:
        return "None"
    if isinstance(value, tuple):
        return f"a tuple of {len(value)} value{'s' if len(value) != 1 else ''}"
    if isinstance(value, list):
        return f"a list of {len(value)} value{'s' if len(value) != 1 else ''}"
    if isinstance(value, dict):
        return f"a dict with {len(value)} key{'s' if len(value) != 1 else ''}"
    if isinstance(value, np.ndarray):
        return f"a numpy.ndarray of shape {value.shape} and dtype {_dtype_str(value.dtype)}"
    return f"{type(value).__name__} {value!r}" if isinstance(value, (int, float, str, bool)) else type(value).__name__


def _is_number_dtype(d: np.dtype) -> bool:
    """Whether an array of `d` converts to another number dtype as OneFlow converts its inputs:
    booleans, integers and floats in the machine's byte order."""
    return d.kind in "biuf" and d.isnative


def _dtype_str(d: np.dtype) -> str:
    # A byte-swapped float32 has name "float32" too; show ">f4" so the message is not
    # "float32 given for a float32 placeholder".
    return d.name if d.isnative else d.str


def _resolve_hints(fn, fn_name: str, localns) -> dict:
    """Evaluated annotations of ``fn`` (string annotations included)."""
    raw = dict(getattr(fn, "__annotations__", None) or {})
    try:
        return typing.get_type_hints(fn, localns=localns)
    except Exception as e:  # NameError, SyntaxError, TypeError from typing._type_check...
        if any(isinstance(v, str) for v in raw.values()):
            raise AnnotationError(
                f"{fn_name}(): cannot evaluate its annotations ({type(e).__name__}: {e}); "
                "names used in string annotations must be importable from the function's module"
            ) from e
        # Nothing to evaluate: validate the raw objects so the error names the bad one.
        return raw


# --------------------------------------------------------------------------- parameters


@dataclasses.dataclass(frozen=True)
class PlaceholderLeaf:
    """One job input (one C++ placeholder).

    ``name`` is stable and unique within the job: the parameter name, with ``_i``
    suffixes for elements of ``Tuple`` parameters (``pair_1``, ``nested_1_0``);
    ``param`` is the parameter it belongs to and ``path`` the element indices inside it.
    """

    name: str
    kind: str  # "numpy" | "list" | "listlist"
    shape: tuple
    dtype: dtypes.DType
    batch_axis: Optional[int]
    param: str = ""
    path: tuple = ()

    @property
    def where(self) -> str:
        """``argument 'pair'[1]``: how error messages refer to this input."""
        return f"argument '{self.param}'" + "".join(f"[{i}]" for i in self.path)

    def per_device_shape(self, devices: int, fn_name: str) -> tuple:
        """The shape of each device's piece in a mirrored job. A list leaf's arrays are the devices'
        own; a ``Numpy`` leaf (consistent) is split over the devices along axis 0, as OneFlow splits a
        consistent input in the mirrored view."""
        if self.kind != "numpy" or devices == 1:
            return self.shape
        if self.shape[0] % devices != 0:
            raise ValueError(f"{fn_name}(): {self.where} is a tp.Numpy placeholder of shape {self.shape} in a mirrored "
                             f"job, which splits its rows over the {devices} devices: {self.shape[0]} rows do not "
                             f"split evenly (use a multiple of {devices}, or tp.ListNumpy for each device's own array)")
        return (self.shape[0] // devices,) + tuple(self.shape[1:])


@dataclasses.dataclass(frozen=True)
class _TupleParam:
    """A ``typing.Tuple[...]`` parameter (or element); ``items`` are leaves or tuples."""

    items: tuple
    annotation: Any
    param: str
    path: tuple

    @property
    def where(self) -> str:
        return f"argument '{self.param}'" + "".join(f"[{i}]" for i in self.path)


_PARAM_EXPECTED = (
    "expected tp.Numpy.Placeholder(...), tp.ListNumpy.Placeholder(...), "
    "tp.ListListNumpy.Placeholder(...) or typing.Tuple of them"
)


def _param_spec(fn_name: str, pname: str, ann, whole, path: tuple):
    """Parse one parameter annotation into a leaf (unnamed yet) or a _TupleParam."""
    if tp._is_placeholder_class(ann):
        return PlaceholderLeaf("", ann.kind, ann.shape, ann.dtype, ann.batch_axis, pname, path)
    if typing.get_origin(ann) is tuple:
        args = typing.get_args(ann)
        if not args or Ellipsis in args:
            raise AnnotationError(
                f"{fn_name}(): invalid annotation {_fmt(whole)} for parameter '{pname}': "
                "a Tuple parameter needs a fixed, non-empty list of element placeholders"
            )
        items = tuple(_param_spec(fn_name, pname, a, whole, path + (i,)) for i, a in enumerate(args))
        return _TupleParam(items, ann, pname, path)
    if _is_family(ann) or (isinstance(ann, tp._PlaceholderMeta) and not ann._concrete):
        family = ann if _is_family(ann) else tp._FAMILY_BY_KIND[ann.kind]
        hint = (
            f"; parameters need a shape and dtype: tp.{family.__name__}.Placeholder(shape, dtype=...)"
            f" (tp.{family.__name__} alone is a return annotation)"
        )
    else:
        hint = f"; {_PARAM_EXPECTED}"
    inner = "" if ann is whole else f" (element {_fmt(ann)})"
    raise AnnotationError(f"{fn_name}(): invalid annotation {_fmt(whole)} for parameter '{pname}'{inner}{hint}")


def _leaf_name(leaf: PlaceholderLeaf) -> str:
    return leaf.param + "".join(f"_{i}" for i in leaf.path)


# --------------------------------------------------------------------------- results


class _TNone:
    def build(self, it):
        return None


class _TLeaf:
    __slots__ = ("kind",)

    def __init__(self, kind: str):
        self.kind = kind

    def build(self, it):
        return _convert(self.kind, next(it))


class _TTensorList:
    """A returned tensor list: one array (or one per device) per tensor, gathered into each device's list."""

    __slots__ = ("kind", "count")

    def __init__(self, kind: str, count: int):
        self.kind, self.count = kind, count

    def build(self, it):
        tensors = [value if isinstance(value, list) else [value] for value in (next(it) for _ in range(self.count))]
        lists = [[tensor[device] for tensor in tensors] for device in range(len(tensors[0]))]
        return lists if self.kind == "listlist" else LocalBlob([tensors[0][d] for d in range(len(lists))], lists)


class _TSeq:
    __slots__ = ("ctor", "items")

    def __init__(self, ctor, items):
        self.ctor, self.items = ctor, items

    def build(self, it):
        return self.ctor(item.build(it) for item in self.items)


class _TDict:
    __slots__ = ("keys", "items")

    def __init__(self, keys, items):
        self.keys, self.items = keys, items

    def build(self, it):
        # Build values in key order, which is the order the leaves were flattened in.
        return {k: item.build(it) for k, item in zip(self.keys, self.items)}


def _convert(kind: str, value):
    """``value``: an output's array, or a list of arrays (one per device) of a mirrored output."""
    pieces = value if isinstance(value, list) else [value]
    if kind == "numpy":
        return value if not isinstance(value, list) else np.concatenate([np.atleast_1d(p) for p in pieces])
    if kind == "list":
        return pieces
    if kind == "listlist":
        return [[p] for p in pieces]
    if kind == "local":
        return LocalBlob(pieces)
    raise AssertionError(f"unknown result kind {kind!r}")


class CallArrays(list):
    """One call's arrays (JobSignature.flatten_call_args), with ``tensor_list_items``: {leaf name: the
    number of tensors in its lists} for each tensor-list argument given more than one tensor a list
    (their arrays come tensor by tensor, each tensor's once per device)."""

    def __init__(self):
        super().__init__()
        self.tensor_list_items = {}


class TensorListShapes(tuple):
    """A tensor-list placeholder's actual shapes in a call: one per tensor of its lists."""


def cut_to_size(array, size, what: str):
    """The leading block of `array` that a dynamic blob's `size` (its k leading axes' extents) means,
    or a ValueError when an extent is outside [0, the axis' length]."""
    extents = [int(e) for e in np.asarray(size).reshape(-1)]
    for axis, extent in enumerate(extents):
        if not 0 <= extent <= array.shape[axis]:
            raise ValueError(f"{what}: its size is {extents}, outside its blob's shape {array.shape} on axis {axis}")
    return array[tuple(slice(0, extent) for extent in extents)]


class ResultTemplate:
    """The shape of a job's result, fixed at trace time.

    ``leaves``: the returned blobs in flatten order (repeats kept); ``leaf_kinds``: the
    conversion of each (``"numpy"`` -> ndarray, ``"list"`` -> ``[ndarray]``,
    ``"listlist"`` -> ``[[ndarray]]``, ``"local"`` -> :class:`LocalBlob`). ``outputs``: what the
    job returns, the leaves then the size of each dynamic leaf (a blob with ``size``: flow.argwhere's),
    by which its rows are cut.
    """

    def __init__(self, root, leaves: list, leaf_kinds: list):
        self._root = root
        self.leaves = leaves
        self.leaf_kinds = leaf_kinds
        self._dynamic = [i for i, blob in enumerate(leaves) if getattr(blob, "is_dynamic", False)]
        self.outputs = list(leaves) + [leaves[i].size for i in self._dynamic]

    def build(self, arrays):
        """The caller's value from one array per output, in ``outputs`` order (an array, or a list
        of them, one per device, for a mirrored output)."""
        arrays = list(arrays)
        if len(arrays) != len(self.outputs):
            raise ValueError(f"ResultTemplate.build: expected {len(self.outputs)} arrays, got {len(arrays)}")
        for k, i in enumerate(self._dynamic):
            what, size = self.leaves[i].logical_blob_name, arrays[len(self.leaves) + k]
            arrays[i] = ([cut_to_size(a, s, what) for a, s in zip(arrays[i], size)] if isinstance(arrays[i], list)
                         else cut_to_size(arrays[i], size, what))
        return self._root.build(iter(arrays[:len(self.leaves)]))

    def __repr__(self) -> str:
        return f"ResultTemplate(leaf_kinds={self.leaf_kinds!r})"


_TOP = "return value"


class _Flattener:
    """Walks a returned value against a return spec, collecting leaves."""

    def __init__(self, fn_name: str, annotation, is_blob: Callable[[Any], bool]):
        self.fn_name = fn_name
        self.ann_str = _fmt(annotation) if annotation is not _EMPTY else None
        self.is_blob = is_blob
        self.leaves: list = []
        self.kinds: list = []

    def fail(self, where: str, expected: str, value):
        per = (
            f"per its return annotation {self.ann_str}"
            if self.ann_str is not None
            else "(un-annotated jobs return a blob or a list/tuple/dict nesting of blobs)"
        )
        raise TypeError(f"{self.fn_name}(): {where} must be {expected} {per}, but the job returned {_describe(value)}")

    def leaf(self, value, kind: str):
        if _is_tensor_list(value):
            if kind not in ("listlist", "local"):
                raise TypeError(f"{self.fn_name}(): a tensor list is returned as tp.ListListNumpy (or without "
                                f"an annotation), not {tp._FAMILY_BY_KIND[kind].__name__}")
            self.leaves.extend(value.items)
            self.kinds.extend([kind] * len(value.items))
            return _TTensorList(kind, len(value.items))
        self.leaves.append(value)
        self.kinds.append(kind)
        return _TLeaf(kind)


class _RNone:
    def flatten(self, f: _Flattener, value, where):
        if value is not None:
            f.fail(where, "None", value)
        return _TNone()


def _is_tensor_list(value) -> bool:
    return getattr(value, "is_tensor_list", False) and hasattr(value, "items")


class _RLeaf:
    def __init__(self, kind: str):
        self.kind = kind

    def flatten(self, f: _Flattener, value, where):
        if not f.is_blob(value) and not _is_tensor_list(value):
            f.fail(where, f"a blob (tp.{tp._FAMILY_BY_KIND[self.kind].__name__})", value)
        return f.leaf(value, self.kind)


class _RTuple:
    def __init__(self, items):
        self.items = items

    def flatten(self, f: _Flattener, value, where):
        n = len(self.items)
        if not isinstance(value, tuple) or f.is_blob(value) or len(value) != n:
            f.fail(where, f"a tuple of {n} value{'s' if n != 1 else ''}", value)
        return _TSeq(tuple, [s.flatten(f, v, f"{where}[{i}]") for i, (s, v) in enumerate(zip(self.items, value))])


class _RList:
    def __init__(self, item):
        self.item = item

    def flatten(self, f: _Flattener, value, where):
        if not isinstance(value, list) or f.is_blob(value):
            f.fail(where, "a list", value)
        return _TSeq(list, [self.item.flatten(f, v, f"{where}[{i}]") for i, v in enumerate(value)])


class _RDict:
    def __init__(self, key_type, item):
        self.key_type, self.item = key_type, item

    def flatten(self, f: _Flattener, value, where):
        if not isinstance(value, dict) or f.is_blob(value):
            f.fail(where, f"a dict with {self.key_type.__qualname__} keys", value)
        keys, items = [], []
        for k, v in value.items():
            # OneFlow checks ``type(key) is K`` exactly (a bool key is not an int key).
            if type(k) is not self.key_type:
                raise TypeError(
                    f"{f.fn_name}(): {where} key {k!r} has type {type(k).__name__}, but its return "
                    f"annotation {f.ann_str} requires {self.key_type.__qualname__} keys"
                )
            keys.append(k)
            items.append(self.item.flatten(f, v, f"{where}[{k!r}]"))
        return _TDict(keys, items)


class _RNested:
    """Bundle[E] (kind = E's kind) or no annotation (kind = "local"): any nesting."""

    def __init__(self, kind: str):
        self.kind = kind

    def flatten(self, f: _Flattener, value, where):
        if f.is_blob(value) or _is_tensor_list(value):
            return f.leaf(value, self.kind)
        if value is None and self.kind == "local" and where == _TOP:
            # Legacy jobs that return nothing (e.g. an init job): the future yields None.
            return _TNone()
        if isinstance(value, (tuple, list)):
            ctor = tuple if isinstance(value, tuple) else list
            return _TSeq(ctor, [self.flatten(f, v, f"{where}[{i}]") for i, v in enumerate(value)])
        if isinstance(value, dict):
            keys = list(value.keys())
            return _TDict(keys, [self.flatten(f, value[k], f"{where}[{k!r}]") for k in keys])
        f.fail(where, "a blob or a list/tuple/dict of blobs", value)


def _return_spec(fn_name: str, ann):
    """Parse a return annotation: (spec, result_annotation, is_async)."""
    if ann is _EMPTY:
        return _RNested("local"), ann, False
    if typing.get_origin(ann) is tp.Callback:
        (inner,) = typing.get_args(ann)  # Generic guarantees exactly one argument
        if inner is None or inner is _NONE_TYPE:
            return _RNone(), None, True
        return _result_spec(fn_name, inner, ann), inner, True
    if ann is None or ann is _NONE_TYPE:
        return _RNone(), None, False
    return _result_spec(fn_name, ann, ann), ann, False


def _bad_return(fn_name: str, whole, ann, why: str):
    inner = "" if ann is whole else f" (at {_fmt(ann)})"
    raise AnnotationError(f"{fn_name}(): invalid return annotation {_fmt(whole)}{inner}: {why}")


_RETURN_EXPECTED = (
    "expected None, tp.Numpy, tp.ListNumpy, tp.ListListNumpy, typing.Tuple/List/Dict over them, "
    "tp.Bundle[E] or tp.Callback[T]"
)


def _result_spec(fn_name: str, ann, whole):
    """Top-level result annotation: Bundle[E] or an element annotation."""
    if typing.get_origin(ann) is tp.Bundle:
        (e,) = typing.get_args(ann)
        if not _is_family(e):
            _bad_return(fn_name, whole, ann, "tp.Bundle[E] needs E in tp.Numpy, tp.ListNumpy, tp.ListListNumpy")
        return _RNested(tp._KIND_BY_FAMILY[e])
    return _elem_spec(fn_name, ann, whole)


def _elem_spec(fn_name: str, ann, whole):
    if _is_family(ann):
        return _RLeaf(tp._KIND_BY_FAMILY[ann])
    if isinstance(ann, tp._PlaceholderMeta):
        fam = tp._FAMILY_BY_KIND[ann.kind].__name__
        _bad_return(fn_name, whole, ann, f"placeholders annotate parameters; annotate a returned blob with tp.{fam}")
    if ann is tp.Callback or ann is tp.Bundle:
        _bad_return(fn_name, whole, ann, f"tp.{ann.__name__} needs its type argument, e.g. tp.{ann.__name__}[tp.Numpy]")
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if origin is tp.Callback:
        _bad_return(fn_name, whole, ann, "tp.Callback is only allowed as the outermost return annotation")
    if origin is tp.Bundle:
        _bad_return(fn_name, whole, ann, "tp.Bundle is only allowed as the outermost return annotation (or inside tp.Callback)")
    if origin is tuple:
        if not args or Ellipsis in args:
            _bad_return(fn_name, whole, ann, "Tuple needs a fixed, non-empty list of element annotations")
        return _RTuple([_elem_spec(fn_name, a, whole) for a in args])
    if origin is list:
        if len(args) != 1:
            _bad_return(fn_name, whole, ann, "List needs exactly one element annotation, e.g. List[tp.Numpy]")
        return _RList(_elem_spec(fn_name, args[0], whole))
    if origin is dict:
        if len(args) != 2:
            _bad_return(fn_name, whole, ann, "Dict needs a key type and a value annotation, e.g. Dict[str, tp.Numpy]")
        key, value = args
        if not isinstance(key, type) or typing.get_origin(key) is not None or key is typing.Any:
            _bad_return(fn_name, whole, ann, f"the Dict key annotation must be a plain class such as str or int, got {_fmt(key)}")
        return _RDict(key, _elem_spec(fn_name, value, whole))
    _bad_return(fn_name, whole, ann, _RETURN_EXPECTED)


# --------------------------------------------------------------------------- signature


class JobSignature:
    """A validated job-function signature (see the module docstring for the workflow)."""

    def __init__(
        self,
        fn_name: str,
        param_names: list,
        param_specs: list,
        leaves: list,
        return_annotation,
        result_annotation,
        return_spec,
        is_async: bool,
        legacy_params: bool,
    ):
        self.fn_name = fn_name
        self.param_names = param_names
        self._param_specs = param_specs
        self.leaves = leaves
        self.return_annotation = return_annotation
        self.result_annotation = result_annotation
        self._return_spec = return_spec
        self.is_async = is_async
        self.legacy_params = legacy_params
        self.returns_future = return_annotation is _EMPTY
        self.returns_none = isinstance(return_spec, _RNone)

    def __repr__(self) -> str:
        ret = _fmt(self.return_annotation)
        return f"JobSignature({self.fn_name}({', '.join(l.name for l in self.leaves)}) -> {ret})"

    # -- tracing

    def build_arguments(self, make_blob: Callable[[PlaceholderLeaf], Any]) -> list:
        """Positional arguments for the one tracing call: ``make_blob(leaf)`` per leaf,
        called in ``leaves`` order, nested into tuples as the annotations say."""

        def build(spec):
            if isinstance(spec, PlaceholderLeaf):
                return make_blob(spec)
            return tuple(build(item) for item in spec.items)

        return [build(spec) for spec in self._param_specs]

    def flatten_returns(self, value, is_blob: Callable[[Any], bool]) -> ResultTemplate:
        """Check the traced body's return value against the annotation; see ResultTemplate."""
        f = _Flattener(self.fn_name, self.return_annotation, is_blob)
        root = self._return_spec.flatten(f, value, _TOP)
        return ResultTemplate(root, f.leaves, f.kinds)

    # -- calls

    def flatten_call_args(self, args, kwargs=None, devices: int = 1, split_whole: bool = False) -> list:
        """Validate one call's arguments; one C-contiguous ndarray per leaf (per device for list
        leaves), in order. ``devices``: how many arrays a list (mirrored) argument holds.
        ``split_whole`` (a mirrored job): a ``Numpy`` leaf's array is split into ``devices`` arrays
        of its rows (PlaceholderLeaf.per_device_shape), views of the caller's array."""
        if kwargs:
            names = ", ".join(repr(k) for k in kwargs)
            raise TypeError(
                f"{self.fn_name}() got keyword argument(s) {names}; job functions take positional arguments only"
            )
        n, m = len(self._param_specs), len(args)
        if m != n:
            raise TypeError(
                f"{self.fn_name}() takes {n} positional argument{'s' if n != 1 else ''} "
                f"but {m} {'was' if m == 1 else 'were'} given"
            )
        out = CallArrays()
        for spec, value in zip(self._param_specs, args):
            self._flatten_arg(spec, value, out, devices, split_whole)
        return out

    def _flatten_arg(self, spec, value, out: list, devices: int = 1, split_whole: bool = False) -> None:
        fn = self.fn_name
        if isinstance(spec, _TupleParam):
            n = len(spec.items)
            # A list is accepted as well: the annotation already fixes the structure.
            if not isinstance(value, (tuple, list)) or len(value) != n:
                raise TypeError(
                    f"{fn}(): {spec.where} must be a tuple of {n} value{'s' if n != 1 else ''} "
                    f"({_fmt(spec.annotation)}), got {_describe(value)}"
                )
            for item, v in zip(spec.items, value):
                self._flatten_arg(item, v, out, devices, split_whole)
            return
        leaf: PlaceholderLeaf = spec
        if leaf.kind == "numpy":
            self._append_array(leaf, value, leaf.where, out)
            if split_whole:
                whole = out.pop()
                out.extend(np.split(whole, devices))
            return
        outer_ok = isinstance(value, (list, tuple))
        if not outer_ok or len(value) != devices:
            what = "a list of numpy arrays" if leaf.kind == "list" else "a list of lists of numpy arrays"
            if not outer_ok:
                raise TypeError(
                    f"{fn}(): {leaf.where} must be {what} (tp.{tp._FAMILY_BY_KIND[leaf.kind].__name__}), got {_describe(value)}"
                )
            raise ValueError(
                f"{fn}(): {leaf.where} must be a list of {devices} entr{'y' if devices == 1 else 'ies'} (one per "
                f"device the job is placed on), got {len(value)}: {_describe(value)}"
            )
        if leaf.kind == "list":
            for device, array in enumerate(value):
                self._append_array(leaf, array, f"{leaf.where}[{device}]", out)
            return
        # A tensor list: each device's list holds the same number of tensors, at most the placeholder's
        # rows; they come tensor by tensor, each once per device (a placeholder each).
        for device, tensors in enumerate(value):
            where = f"{leaf.where}[{device}]"
            if not isinstance(tensors, (list, tuple)) or not tensors:
                raise TypeError(f"{fn}(): {where} must be a non-empty list of numpy arrays (a tensor list), got "
                                f"{_describe(tensors)}")
            if len(tensors) != len(value[0]):
                raise NotImplementedError(f"{fn}(): the devices' tensor lists of {leaf.where} hold {len(value[0])} and "
                                          f"{len(tensors)} tensors; Weir compiles a job for one count, the same on each device")
            if len(tensors) > leaf.shape[0]:
                raise ValueError(f"{fn}(): {where} holds {len(tensors)} tensors, more than its placeholder's "
                                 f"{leaf.shape[0]} (the first axis of its shape {leaf.shape})")
        if len(value[0]) > 1:
            out.tensor_list_items[leaf.name] = len(value[0])
        for k in range(len(value[0])):
            for device, tensors in enumerate(value):
                self._append_array(leaf, tensors[k], f"{leaf.where}[{device}][{k}]", out)

    def _append_array(self, leaf, array, where: str, out: list) -> None:
        fn = self.fn_name
        if not isinstance(array, np.ndarray):
            raise TypeError(f"{fn}(): {where} must be a numpy.ndarray, got {_describe(array)}")
        want = leaf.dtype.numpy_dtype
        if array.dtype != want:
            if not (_is_number_dtype(array.dtype) and _is_number_dtype(want)):
                raise TypeError(
                    f"{fn}(): {where} has dtype {_dtype_str(array.dtype)}, but its placeholder expects "
                    f"{leaf.dtype.name} (convert with .astype(numpy.{want.name}))"
                )
            # OneFlow converts a number array to its placeholder's dtype as C casts do (a float to
            # an int truncates); so does Weir, saying so once a call site.
            warnings.warn(f"{fn}(): {where} has dtype {array.dtype.name}; converted to its placeholder's "
                          f"{leaf.dtype.name}", stacklevel=4)
            array = array.astype(want)
        if leaf.kind == "numpy":
            if array.shape != leaf.shape:
                raise ValueError(f"{fn}(): {where} has shape {array.shape}, but its placeholder expects shape {leaf.shape}")
        elif array.ndim != len(leaf.shape) or any(got > most for got, most in zip(array.shape, leaf.shape)):
            # A mirrored placeholder is dynamic, as OneFlow's: its declared shape is the largest.
            raise ValueError(f"{fn}(): {where} has shape {array.shape}, but its placeholder takes arrays of "
                             f"{len(leaf.shape)} axes no larger than {leaf.shape}")
        out.append(np.ascontiguousarray(array))


def parse_signature(fn, localns: Optional[dict] = None, *, require_annotations: bool = False) -> JobSignature:
    """Validate ``fn``'s annotations and return its :class:`JobSignature`.

    Parameters must all be placeholder classes (or ``typing.Tuple`` of them, nested)
    or all be un-annotated with legacy ``flow.FixedTensorDef``-style defaults; no
    ``*args``, ``**kwargs`` or keyword-only parameters.  See the module docstring for the
    return annotations.  Raises :class:`AnnotationError` naming ``fn`` and the problem.
    """
    if not callable(fn):
        raise TypeError(f"a job function must be callable, got {type(fn).__name__}")
    fn_name = getattr(fn, "__name__", None) or repr(fn)
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as e:
        raise AnnotationError(f"cannot read the signature of job function {fn_name}: {e}") from e
    hints = _resolve_hints(fn, fn_name, localns)

    params = list(sig.parameters.values())
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY):
            shown = {p.VAR_POSITIONAL: f"*{p.name}", p.VAR_KEYWORD: f"**{p.name}"}.get(p.kind, p.name)
            raise AnnotationError(
                f"{fn_name}(): parameter '{shown}' is not allowed; job functions take a fixed list "
                "of positional placeholder parameters"
            )
    annotated = [p.name for p in params if p.name in hints]
    if annotated and len(annotated) != len(params):
        missing = ", ".join(repr(p.name) for p in params if p.name not in hints)
        raise AnnotationError(
            f"{fn_name}(): parameters must be all annotated or all un-annotated (legacy "
            f"flow.FixedTensorDef defaults); not annotated: {missing}"
        )
    legacy = bool(params) and not annotated
    if legacy and require_annotations:
        raise AnnotationError(
            f"{fn_name}(): typing check is enabled; annotate the parameters with tp.Numpy.Placeholder(...) "
            "instead of flow.FixedTensorDef defaults"
        )

    specs = []
    for p in params:
        if p.name in hints:
            specs.append(_param_spec(fn_name, p.name, hints[p.name], hints[p.name], ()))
        elif isinstance(p.default, ArgBlobDef):
            ph = p.default.placeholder()
            specs.append(PlaceholderLeaf("", ph.kind, ph.shape, ph.dtype, ph.batch_axis, p.name, ()))
        else:
            raise AnnotationError(
                f"{fn_name}(): parameter '{p.name}' has no annotation; annotate it with "
                "tp.Numpy.Placeholder(shape, dtype=...) (or, legacy, give it a flow.FixedTensorDef(...) default)"
            )

    # Name the leaves.  Plain parameters keep their own (unique) names; Tuple elements get
    # "_i" suffixes, pushed further ("a_0_") in the rare case that collides with another name.
    taken = {s.param for s in specs if isinstance(s, PlaceholderLeaf)}
    leaves: list = []

    def name_leaves(spec):
        if isinstance(spec, _TupleParam):
            return _TupleParam(tuple(name_leaves(i) for i in spec.items), spec.annotation, spec.param, spec.path)
        name = _leaf_name(spec)
        if spec.path:
            while name in taken:
                name += "_"
            taken.add(name)
        leaf = dataclasses.replace(spec, name=name)
        leaves.append(leaf)
        return leaf

    specs = [name_leaves(s) for s in specs]

    ret_ann = hints.get("return", _EMPTY)
    if ret_ann is _EMPTY and require_annotations:
        raise AnnotationError(f"{fn_name}(): typing check is enabled; annotate the return (e.g. -> tp.Numpy or -> None)")
    return_spec, result_ann, is_async = _return_spec(fn_name, ret_ann)
    return JobSignature(
        fn_name=fn_name,
        param_names=[p.name for p in params],
        param_specs=specs,
        leaves=leaves,
        return_annotation=ret_ann,
        result_annotation=result_ann,
        return_spec=return_spec,
        is_async=is_async,
        legacy_params=legacy,
    )


# --------------------------------------------------------------------------- legacy results


class LocalBlob:
    """A pulled result in the legacy (un-annotated) API: ``.numpy()``, ``.numpy_list()``...

    Holds one array per device: one for consistent results, one per device for mirrored ones. A
    returned tensor list's are its tensors, per device (numpy_lists); numpy() gives a device's first.
    """

    __slots__ = ("_arrays", "_lists")

    def __init__(self, arrays, lists=None):
        self._arrays = arrays if isinstance(arrays, list) else [arrays]
        self._lists = lists  # a tensor list's tensors, per device

    @property
    def _array(self) -> np.ndarray:
        return self._arrays[0] if len(self._arrays) == 1 else np.concatenate([np.atleast_1d(a) for a in self._arrays])

    def numpy(self, i: int = 0) -> np.ndarray:
        """The array of device ``i``."""
        if not 0 <= i < len(self._arrays):
            raise IndexError(f"LocalBlob.numpy({i}): the blob has {len(self._arrays)} device(s), index must be in [0, {len(self._arrays)})")
        return self._arrays[i]

    def __getattr__(self, name):
        # Array methods and attributes (loss.mean(), .shape) on the blob's array, as the docs'
        # async_get callbacks use them.
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._array, name)

    def numpy_list(self) -> list:
        """Per-device arrays (mirrored view)."""
        return list(self._arrays)

    def numpy_lists(self) -> list:
        """Per-device tensor lists: ``[[array, ...], ...]`` (one array each but for a tensor list's)."""
        return [list(tensors) for tensors in self._lists] if self._lists is not None else [[a] for a in self._arrays]

    # OneFlow's older names of the same.
    ndarray_list = numpy_list
    ndarray_lists = numpy_lists
    # A job is compiled for its dynamic inputs' actual shapes: every result's shape is its own.
    is_dynamic = False

    def ndarray(self) -> np.ndarray:
        """Deprecated alias of :meth:`numpy`."""
        warnings.warn("LocalBlob.ndarray() is deprecated; use .numpy()", DeprecationWarning, stacklevel=2)
        return self._array

    @property
    def shape(self) -> tuple:
        return tuple(self._array.shape)

    @property
    def dtype(self) -> dtypes.DType:
        return dtypes.from_numpy(self._array.dtype)

    def __array__(self, dtype=None):
        # Lets np.mean(blob) & co. work on legacy results.
        return np.asarray(self._array, dtype=dtype)

    # Indexing and len() as the array's (OneFlow's programs slice results: labels[start:stop]).
    def __getitem__(self, key):
        return self._array[key]

    def __len__(self) -> int:
        return len(self._array)

    def __repr__(self) -> str:
        return f"LocalBlob({self._array!r})"


class LegacyFuture:
    """What a job without return annotation returns: ``.get()`` / ``.async_get(cb)``.

    ``LegacyFuture(wait_fn, template, register_fn=None)``:

    * ``wait_fn()`` blocks until the job's outputs are available and returns one
      ndarray per ``template`` leaf; it is called at most once (``.get()`` caches).
    * ``register_fn(deliver)``, if given, arranges for ``deliver(arrays)`` to be called
      once (e.g. on the runtime's callback thread) when the outputs arrive;
      ``.async_get(cb)`` uses it so that ``cb`` gets the converted result without
      blocking the caller.  Without it, ``.async_get(cb)`` waits and calls ``cb`` inline.
    """

    def __init__(self, wait_fn: Callable[[], list], template: ResultTemplate, register_fn=None):
        self._wait_fn = wait_fn
        self._template = template
        self._register_fn = register_fn
        self._lock = threading.Lock()
        self._done = False
        self._result = None

    def _set(self, arrays):
        with self._lock:
            if not self._done:
                self._result = self._template.build(arrays)
                self._done = True
            return self._result

    def get(self):
        """Block until the results are available; LocalBlob(s) in the returned nesting."""
        with self._lock:
            if self._done:
                return self._result
        return self._set(self._wait_fn())

    def async_get(self, callback: Callable[[Any], Any]) -> None:
        """Arrange for ``callback(result)`` to be called once with what ``get()`` returns."""
        if not callable(callback):
            raise TypeError(f"async_get() needs a callable, got {type(callback).__name__}")
        with self._lock:
            done, result = self._done, self._result
        if done:
            callback(result)
        elif self._register_fn is None:
            callback(self.get())
        else:
            self._register_fn(lambda arrays: callback(self._set(arrays)))

    def __repr__(self) -> str:
        return f"<LegacyFuture {'done' if self._done else 'pending'} {self._template!r}>"


# --------------------------------------------------------------------------- watch


def watch_value_converter(handler, what: str = "flow.watch") -> Callable[[np.ndarray], Any]:
    """Converter from a watched blob's ndarray to the value ``handler`` expects.

    The handler's single positional parameter decides: ``tp.Numpy`` -> the array,
    ``tp.ListNumpy`` -> ``[array]``, ``tp.ListListNumpy`` -> ``[[array]]``, no
    annotation (or a lone ``*args``, e.g. ``print``) -> :class:`LocalBlob`.  Extra
    parameters with defaults are allowed.  Anything else raises ``TypeError`` naming
    ``what`` and the handler.
    """
    hname = getattr(handler, "__qualname__", None) or getattr(handler, "__name__", None) or repr(handler)
    if not callable(handler):
        raise TypeError(f"{what}: handler must be callable (or a str prompt), got {type(handler).__name__}")
    try:
        sig = inspect.signature(handler)
    except (TypeError, ValueError):
        # Builtins without a signature: nothing to inspect, hand them the legacy blob.
        return LocalBlob
    params = list(sig.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in params if p.default is _EMPTY and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    var_pos = [p for p in params if p.kind is p.VAR_POSITIONAL]
    if positional and len(required) <= 1 and (not required or required[0] is positional[0]):
        param = positional[0]
    elif not positional and var_pos and not required:
        param = var_pos[0]
    else:
        raise TypeError(f"{what}: handler {hname} must take exactly one positional parameter; its signature is {sig}")

    ann = param.annotation
    if isinstance(ann, str):
        target = handler if inspect.isfunction(handler) or inspect.ismethod(handler) else getattr(handler, "__call__", handler)
        try:
            ann = typing.get_type_hints(target).get(param.name, _EMPTY)
        except Exception as e:
            raise TypeError(f"{what}: cannot evaluate the annotation {param.annotation!r} of handler {hname}: {e}") from e
    if ann is _EMPTY:
        return LocalBlob
    if ann is tp.Numpy:
        return lambda array: array
    if ann is tp.ListNumpy:
        return lambda array: [array]
    if ann is tp.ListListNumpy:
        return lambda array: [[array]]
    raise TypeError(
        f"{what}: handler {hname} parameter '{param.name}' is annotated {_fmt(ann)}; "
        "expected tp.Numpy, tp.ListNumpy, tp.ListListNumpy or no annotation"
    )
