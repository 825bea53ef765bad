"""Legacy (July-2020 OneFlow) input definitions: ``flow.FixedTensorDef`` & co.

Old programs declare inputs as default values of un-annotated parameters::

    @flow.global_function(config)
    def train_job(images=flow.FixedTensorDef((100, 1, 28, 28), dtype=flow.float),
                  labels=flow.FixedTensorDef((100,), dtype=flow.int32)):
        ...

Each definition is the deprecated equivalent of a ``weir.typing`` placeholder:

=========================  ===============================
``FixedTensorDef``         ``tp.Numpy.Placeholder``
``MirroredTensorDef``      ``tp.ListNumpy.Placeholder``
``MirroredTensorListDef``  ``tp.ListListNumpy.Placeholder``
=========================  ===============================

Arguments are validated exactly like the placeholders' (shape must be a tuple of
positive ints, ...).  The first construction of each class emits one
``DeprecationWarning`` naming its replacement.  ``name`` is accepted for
compatibility and kept on the object; Weir names the job input after the parameter.
:func:`weir._signature.parse_signature` turns these objects into placeholder leaves
through :meth:`ArgBlobDef.placeholder`.
"""

from __future__ import annotations

import warnings

from weir import dtypes as _dtypes
from weir import typing as _tp

__all__ = ["ArgBlobDef", "FixedTensorDef", "MirroredTensorDef", "MirroredTensorListDef"]

# Classes that already warned: one warning per class per process is enough to point
# users at the new API without flooding training-loop output.
_warned: set = set()


class ArgBlobDef:
    """Base of the legacy definitions; subclasses set ``_family`` and ``_replacement``."""

    _family = None  # one of tp.Numpy / tp.ListNumpy / tp.ListListNumpy
    _replacement = ""

    def __init__(self, shape, dtype=_dtypes.float32, batch_axis=0, name=None):
        cls = type(self)
        if cls not in _warned:
            _warned.add(cls)
            warnings.warn(
                f"flow.{cls.__name__} is deprecated; annotate the parameter with "
                f"{self._replacement}(shape, dtype) instead",
                DeprecationWarning,
                stacklevel=2,
            )
        family = self._family.Placeholder
        # Validate now (naming this class in errors) so that bad arguments fail at the
        # ``def`` line, as the annotations do; then build the equivalent placeholder.
        shape, dtype, batch_axis = _tp._validate_placeholder_args(
            f"flow.{cls.__name__}()", shape, dtype, batch_axis, family._allow_none_batch_axis
        )
        self._placeholder = family(shape, dtype, batch_axis)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"flow.{cls.__name__}(): name must be a str or None, got {name!r}")
        self.name = name

    @property
    def shape(self) -> tuple:
        return self._placeholder.shape

    @property
    def dtype(self) -> _dtypes.DType:
        return self._placeholder.dtype

    @property
    def batch_axis(self):
        return self._placeholder.batch_axis

    @property
    def kind(self) -> str:
        return self._placeholder.kind

    def placeholder(self):
        """The equivalent ``weir.typing`` placeholder class."""
        return self._placeholder

    def __repr__(self) -> str:
        return (
            f"flow.{type(self).__name__}({self.shape!r}, dtype={self.dtype.name}, "
            f"batch_axis={self.batch_axis!r})"
        )


class FixedTensorDef(ArgBlobDef):
    """Deprecated: a consistent input; use ``tp.Numpy.Placeholder``."""

    _family = _tp.Numpy
    _replacement = "tp.Numpy.Placeholder"


class MirroredTensorDef(ArgBlobDef):
    """Deprecated: a mirrored input; use ``tp.ListNumpy.Placeholder``."""

    _family = _tp.ListNumpy
    _replacement = "tp.ListNumpy.Placeholder"


class MirroredTensorListDef(ArgBlobDef):
    """Deprecated: a mirrored tensor-list input; use ``tp.ListListNumpy.Placeholder``."""

    _family = _tp.ListListNumpy
    _replacement = "tp.ListListNumpy.Placeholder"


# The OneFlow of early 2020 called FixedTensorDef input_blob_def: ``x=flow.input_blob_def((10,))``.
_dtypes.make_module_callable(__name__, FixedTensorDef)
