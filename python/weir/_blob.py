"""Blobs: the values flowing through a job function while it is traced (OneFlow's BlobDef).
They carry a shape and a dtype but no data; operators build ops."""

from __future__ import annotations

import numbers
import types

import numpy as np

from weir import _C, _context, dtypes
from weir import distribute as _distribute
from weir import scope as _scope
from weir._signature import cut_to_size

__all__ = ["BlobDef", "Blob", "DynamicBlob", "TensorListBlob", "is_blob", "to_c_dtype", "from_c_dtype", "INVALID_SPLIT_AXIS", "INVALID_BATCH_AXIS"]

# OneFlow's markers of a blob that is not split / has no batch axis (flow.INVALID_SPLIT_AXIS).
INVALID_SPLIT_AXIS = -22
INVALID_BATCH_AXIS = -22


def to_c_dtype(dtype, what: str = "dtype"):
    """The C++ dtype of a weir/numpy dtype or name; TypeError naming `what` if Weir has none."""
    d = dtypes.as_dtype(dtype)
    try:
        return _C.DType.__members__[d.name]
    except KeyError:
        supported = ", ".join(_C.DType.__members__)
        raise TypeError(f"{what}: Weir's kernels support {supported}; got {d.name}") from None


def from_c_dtype(c_dtype) -> dtypes.DType:
    return dtypes.as_dtype(c_dtype.name)


class BlobDef:
    """Base class of every blob (OneFlow's name)."""


class Blob(BlobDef):
    """A value of the job being built: a placeholder, a variable or an op's output."""

    __slots__ = ("_c", "_job", "batch_axis")
    # numpy must not treat blobs as sequences in mixed expressions (np.float32(2) * blob).
    __array_priority__ = 1000

    def __init__(self, c_blob, job, batch_axis=0):
        self._c = c_blob
        self._job = job
        self.batch_axis = batch_axis if c_blob.shape else None
        context = _context.maybe_current()
        if context is not None:
            context.record_op_site(c_blob.name.rpartition("/")[0] or c_blob.name)
            if context.eager is not None:
                context.eager.run(c_blob)  # eager mode: the op runs as it is written

    # --- description
    @property
    def shape(self) -> tuple:
        return self._c.shape

    @property
    def static_shape(self) -> tuple:
        """OneFlow's largest shape of a dynamic blob: here the shape itself (a job is compiled for
        its dynamic inputs' actual shapes)."""
        return self._c.shape

    @property
    def dtype(self) -> dtypes.DType:
        return from_c_dtype(self._c.dtype)

    @property
    def logical_blob_name(self) -> str:
        return self._c.name

    unique_name = logical_blob_name

    @property
    def op_name(self) -> str:
        return self._c.name.split("/")[0]

    @property
    def blob_name(self) -> str:
        return self._c.name.split("/")[-1]

    # A job is compiled for its dynamic inputs' actual shapes, so a blob's shape is static while it is
    # traced (DynamicBlob: a data-dependent size); a blob is one tensor (TensorListBlob: several). How a
    # blob is split is the compiler's choice, made after tracing: OneFlow's "not split" value.
    is_dynamic = False
    is_tensor_list = False
    parallel_size = 1
    split_axis = INVALID_SPLIT_AXIS

    @property
    def distribute(self):
        return _distribute.auto()

    @property
    def parallel_conf(self):
        """OneFlow's placement of the op that made the blob: ``device_tag`` ("cpu" or "gpu", as its
        flow.scope.placement asked) and ``device_name`` (its "machine:devices" ids)."""
        placement = self._c.placement
        if placement is None:  # the job's default placement
            context = _context.maybe_current()
            default = _scope._job_placement(context) if context is not None else _scope.current_scope()
            placement = (default.requested_device_tag, default.machine_device_ids)
        return types.SimpleNamespace(device_tag=placement[0], device_name=list(placement[1]))

    # Layout hints for the consistent view on several devices (flow.distribute): the same values,
    # laid out as asked; the compiler boxes around them.
    def with_distribute(self, distribute):
        hint = {"distribute": _distribute.to_attr(distribute, "with_distribute"), "gradient_distribute": "auto"}
        return type(self)(_C.add_op("parallel_cast", [self._c], hint, "")[0], self._job, self.batch_axis)

    def with_split_distribute(self, axis):
        return self.with_distribute(_distribute.split(axis))

    def with_broadcast_distribute(self):
        return self.with_distribute(_distribute.broadcast())

    def with_gradient_distribute(self, distribute):
        hint = {"distribute": "auto", "gradient_distribute": _distribute.to_attr(distribute, "with_gradient_distribute")}
        return type(self)(_C.add_op("parallel_cast", [self._c], hint, "")[0], self._job, self.batch_axis)

    def numpy(self, index: int = 0):
        """The blob's value, in eager mode (flow.enable_eager_execution): the ops that make it have
        run. In a job being compiled there is no value yet: a RuntimeError says so. `index` is
        OneFlow's device index of a mirrored blob; eager mode runs one device, index 0."""
        if index != 0:
            raise IndexError(f"{self.logical_blob_name}.numpy({index}): eager mode runs on one device, index 0")
        context = _context.maybe_current()
        if context is None or context.eager is None or context.builder is not self._job:
            raise RuntimeError(f"{self.logical_blob_name}.numpy(): blobs have values only in eager mode "
                               "(flow.enable_eager_execution(True)), inside the job function's call")
        return context.eager.value(self._c)

    def __repr__(self) -> str:
        return f"Blob(name={self.logical_blob_name!r}, shape={self.shape}, dtype={self.dtype!r})"

    def __len__(self):
        if not self.shape:
            raise TypeError(f"len() of a 0-d blob {self.logical_blob_name!r}")
        return self.shape[0]

    def __bool__(self):
        raise TypeError(
            f"blob {self.logical_blob_name!r} has no value while the job is traced; "
            "a job function's Python control flow cannot depend on data"
        )

    # --- operators (OneFlow: + - * / % ** @ build math.add/subtract/multiply/divide/mod/pow and matmul, and
    # == != > >= < <= build math.equal, not_equal, ...). The
    # op modules import this one, so they install the functions (install_operators) instead of being
    # imported here.
    def __add__(self, other):
        return _OPERATORS["add"](self, other)

    def __radd__(self, other):
        return _OPERATORS["add"](other, self)

    def __sub__(self, other):
        return _OPERATORS["subtract"](self, other)

    def __rsub__(self, other):
        return _OPERATORS["subtract"](other, self)

    def __mul__(self, other):
        return _OPERATORS["multiply"](self, other)

    def __rmul__(self, other):
        return _OPERATORS["multiply"](other, self)

    def __truediv__(self, other):
        return _OPERATORS["divide"](self, other)

    def __rtruediv__(self, other):
        return _OPERATORS["divide"](other, self)

    def __mod__(self, other):
        return _OPERATORS["mod"](self, other)

    def __rmod__(self, other):
        return _OPERATORS["mod"](other, self)

    def __neg__(self):
        return _OPERATORS["multiply"](self, -1)

    def __pos__(self):
        return self

    def __pow__(self, exponent):
        return _OPERATORS["pow"](self, exponent)

    def __rpow__(self, base):
        return _OPERATORS["pow"](base, self)

    def __matmul__(self, other):
        return _OPERATORS["matmul"](self, other)

    # Comparisons build ops too (int8 1 or 0, OneFlow's), so a blob is hashed by identity.
    def __eq__(self, other):
        return _OPERATORS["equal"](self, other)

    def __ne__(self, other):
        return _OPERATORS["not_equal"](self, other)

    def __gt__(self, other):
        return _OPERATORS["greater"](self, other)

    def __ge__(self, other):
        return _OPERATORS["greater_equal"](self, other)

    def __lt__(self, other):
        return _OPERATORS["less"](self, other)

    def __le__(self, other):
        return _OPERATORS["less_equal"](self, other)

    __hash__ = object.__hash__


class DynamicBlob(Blob):
    """A blob of which only a leading block is meant, its extents known only when the job runs:
    OneFlow's dynamic blob, made by flow.argwhere, flow.sync_dynamic_resize and
    flow.tensor_buffer_to_list_of_tensors(dynamic_out=True). `size`, a blob of shape (k,), holds the
    k leading axes' extents (k = 1: the rows). A job returns it cut to its size (in eager mode,
    .numpy() does). No op or watch reads it, as what lies past its size would count;
    flow.cast_to_static_shape gives its whole value, `static`, of its largest shape."""

    __slots__ = ("size", "static")
    is_dynamic = True

    def __init__(self, c_blob, job, size: Blob, static: Blob):
        super().__init__(c_blob, job)
        self.size = size
        self.static = static

    def numpy(self, index: int = 0):
        return cut_to_size(super().numpy(index), self.size.numpy(index), self.logical_blob_name)


class TensorListBlob(BlobDef):
    """A tensor list of several tensors (OneFlow's TensorList): a tp.ListListNumpy placeholder given
    more than one array a list, or flow.tensor_buffer_to_tensor_list's result; each tensor is a blob
    of its own shape, `items`. flow.tensor_list_split and flow.tensor_list_to_tensor_buffer take it,
    and a job returns it (a list of arrays per device); other ops take one blob, not a list. A tensor
    list of one tensor is that tensor's blob."""

    is_tensor_list = True
    is_dynamic = False

    def __init__(self, items, static_shape):
        self.items = list(items)
        self.static_shape = tuple(static_shape)

    @property
    def shape(self) -> tuple:
        return self.static_shape

    @property
    def dtype(self) -> dtypes.DType:
        return self.items[0].dtype

    @property
    def logical_blob_name(self) -> str:
        return self.items[0].logical_blob_name

    def __repr__(self) -> str:
        return f"TensorListBlob({len(self.items)} tensors: {', '.join(str(b.shape) for b in self.items)})"


# The functions Blob's operators call, by operator name; math.py and ops.py install them.
_OPERATORS = {}


def install_operators(**functions):
    """Makes Blob's operators call `functions` (add, subtract, multiply, divide, mod, pow, matmul and the
    comparisons)."""
    _OPERATORS.update(functions)


def is_blob(value) -> bool:
    return isinstance(value, Blob)


def is_scalar(value) -> bool:
    return isinstance(value, (numbers.Number, np.number)) and not isinstance(value, (bool, np.bool_))
