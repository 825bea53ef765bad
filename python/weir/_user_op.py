"""``flow.user_op_builder``: OneFlow's builder of an op by its registered type name, over Weir's op
registry (the ops of src/graph/ops, their input names and attributes as their files declare them)::

    y = (flow.user_op_builder("my_gather").Op("gather").Input("params", [table]).Input("indices", [ids])
         .Output("out").Attr("axis", 0).Build().InferAndTryRun().RemoteBlobList()[0])

Inputs are matched to the op's input names (an op of one input also takes OneFlow's usual "in"); an
op taking any number of inputs takes them from one ``Input`` call's list. Attributes are the op's own
(names and values as ``weir._C.add_op`` reads them; OneFlow's attribute type names are accepted and
not needed). Unary functions are reached by their names ("relu", "exp", ...). Ops of a custom library
(``flow.config.load_library``) do not exist in Weir: their type is an unknown op.

A few of OneFlow's op types are built from Weir's ops (as fast: each is what OneFlow's kernel
computes, in one or two of Weir's): ``multi_square_sum`` (inputs "x", a list; the sum of every
element's square, shape (1,)), ``reduce_sum_like`` ("x", "like"; x summed over the attribute "axis"
into like's shape), ``split_like`` ("in", "like", a list; `in` cut along "axis" into pieces as long as
each like blob there), ``fused_cast_scale`` ("x", "scalar"; x cast to the dtype of the one-element
"scalar", times it), ``dynamic_loss_scale_schedule`` ("count_not_finite", "loss_scale",
"good_step_counter"; updates the two variables as OneFlow's kernel: a finite step counts one more
good step and after "increment_period" of them multiplies the scale by "multiplier", a non-finite
one divides it, not below 1, and resets the count) and OneFlow 0.2's ``unary`` with the attribute "unary_math_type" ("Abs",
"Sigmoid", "LogSigmoid", ...: the unary function of that name)."""

from __future__ import annotations

import re

import numpy as np

from weir import _C, _context, math as _math, ops as _ops
from weir._blob import Blob, is_blob
from weir._ops_util import op_name

__all__ = ["user_op_builder", "UserOpConfBuilder", "UserOp"]


def user_op_builder(op_name: str) -> "UserOpConfBuilder":
    """A builder of one op named `op_name` (scoped like every op name)."""
    if not isinstance(op_name, str) or not op_name:
        raise TypeError(f"flow.user_op_builder: op_name must be a non-empty str, got {op_name!r}")
    return UserOpConfBuilder(op_name)


class UserOpConfBuilder:
    def __init__(self, name: str):
        self._name = name
        self._type = None
        self._inputs: dict = {}
        self._outputs: list = []
        self._attrs: dict = {}

    def _where(self) -> str:
        return f"flow.user_op_builder({self._name!r})"

    def Op(self, op_type_name: str) -> "UserOpConfBuilder":  # noqa: N802 - OneFlow's names
        if not isinstance(op_type_name, str):
            raise TypeError(f"{self._where()}.Op: the op type must be a str, got {op_type_name!r}")
        self._type = op_type_name
        return self

    def Input(self, input_name: str, input_blob_list) -> "UserOpConfBuilder":  # noqa: N802
        blobs = list(input_blob_list) if isinstance(input_blob_list, (list, tuple)) else None
        if blobs is None or not all(is_blob(b) for b in blobs):
            raise TypeError(f"{self._where()}.Input({input_name!r}): expected a list of blobs, got {input_blob_list!r}")
        if input_name in self._inputs:
            raise ValueError(f"{self._where()}.Input({input_name!r}): given twice")
        self._inputs[input_name] = blobs
        return self

    def Output(self, output_name: str, num: int = 1) -> "UserOpConfBuilder":  # noqa: N802
        if isinstance(num, bool) or not isinstance(num, int) or num < 1:
            raise ValueError(f"{self._where()}.Output({output_name!r}): num must be an int >= 1, got {num!r}")
        self._outputs.append((output_name, num))
        return self

    def Attr(self, attr_name: str, attr_value, attr_type_name=None) -> "UserOpConfBuilder":  # noqa: N802
        # OneFlow 0.3 named the attribute's type ("AttrTypeInt32"); Weir reads the op's own attribute types.
        self._attrs[attr_name] = attr_value
        return self

    SetAttr = Attr

    def Build(self) -> "UserOp":  # noqa: N802
        where = self._where()
        if self._type is None:
            raise ValueError(f"{where}: no op type given (call .Op(type) before .Build())")
        op_type, attrs = self._type, dict(self._attrs)
        if op_type == "unary" and "unary_math_type" in attrs:  # OneFlow 0.2's unary op: "Abs", "LogSigmoid", ...
            math_type = attrs.pop("unary_math_type")
            kind = re.sub(r"(?<!^)(?=[A-Z])", "_", str(math_type)).lower()
            if kind not in _C.unary_kinds:
                raise ValueError(f"{where}: unary_math_type {math_type!r} is not a unary function of Weir; they are "
                                 f"{', '.join(_C.unary_kinds)} (in OneFlow's spelling, e.g. 'Abs', 'LogSigmoid')")
            attrs["kind"] = kind
        if op_type in _COMPOSITES:
            return _CompositeOp(self._name, op_type, _COMPOSITES[op_type], dict(self._inputs), attrs, self._outputs)
        if op_type in _C.unary_kinds:  # a unary function is a kind of the one unary op
            op_type, attrs["kind"] = "unary", self._type
        try:
            count, names = _C.op_inputs(op_type)
        except ValueError:
            raise ValueError(f"{where}: op type {self._type!r} is not registered in Weir (custom op libraries are "
                             f"not supported); weir._C.registered_ops() lists the types") from None
        return UserOp(self._name, op_type, self._order_inputs(count, list(names), where), attrs, self._outputs)

    def _order_inputs(self, count: int, names: list, where: str) -> list:
        given = dict(self._inputs)
        if count == -1:  # any number: one list
            if len(given) > 1:
                raise ValueError(f"{where}: op {self._type!r} takes its inputs as one list, got {sorted(given)}")
            return next(iter(given.values()), [])
        if count == 1 and "in" in given and (not names or names[0] not in given):
            given[names[0] if names else "in"] = given.pop("in")  # OneFlow's usual name for a sole input
        ordered = []
        for index in range(count):
            name = names[index] if index < len(names) else f"input {index}"
            blobs = given.pop(name, None)
            if blobs is None:
                if index >= len(names):
                    raise ValueError(f"{where}: op {self._type!r} takes {count} inputs; name them {names}")
                break  # the rest are optional (an update's trailing slots)
            if len(blobs) != 1:
                raise ValueError(f"{where}: input {name!r} of op {self._type!r} takes one blob, got {len(blobs)}")
            ordered.append(blobs[0])
        if given:
            raise ValueError(f"{where}: op {self._type!r} has no input(s) {sorted(given)}; its inputs are {names}")
        return ordered


class UserOp:
    """A built op: ``InferAndTryRun()`` adds it to the job being traced, ``RemoteBlobList()`` gives its
    outputs, ``SoleOutputBlob()`` its one output."""

    def __init__(self, name, op_type, inputs, attrs, outputs):
        self._name, self._type, self._inputs, self._attrs, self._outputs = name, op_type, inputs, attrs, outputs
        self._blobs = None

    def InferAndTryRun(self) -> "UserOp":  # noqa: N802 - OneFlow's names
        if self._blobs is None:
            name = op_name(self._name)
            if self._inputs:
                job = self._inputs[0]._job
                c_blobs = _C.add_op(self._type, [b._c for b in self._inputs], self._attrs, name)
            else:
                job = _context.current(f"flow.user_op_builder({self._name!r})").builder
                c_blobs = _C.add_source_op(job, self._type, self._attrs, name)
            self._blobs = [Blob(c, job) for c in c_blobs]
            self._check_outputs()
        return self

    def _check_outputs(self) -> None:
        wanted = sum(num for _, num in self._outputs)
        if self._outputs and wanted != len(self._blobs):
            raise ValueError(f"flow.user_op_builder({self._name!r}): op {self._type!r} has {len(self._blobs)} "
                             f"output(s), but {wanted} were declared with .Output")

    def RemoteBlobList(self) -> list:  # noqa: N802
        return list(self.InferAndTryRun()._blobs)

    def SoleOutputBlob(self) -> Blob:  # noqa: N802
        blobs = self.RemoteBlobList()
        if len(blobs) != 1:
            raise ValueError(f"flow.user_op_builder({self._name!r}): op {self._type!r} has {len(blobs)} outputs, not one")
        return blobs[0]


class _CompositeOp(UserOp):
    """An op type of OneFlow's that Weir builds from its own ops (see the module's docstring)."""

    def __init__(self, name, op_type, build, inputs, attrs, outputs):
        super().__init__(name, op_type, inputs, attrs, outputs)
        self._build = build

    def InferAndTryRun(self) -> "UserOp":  # noqa: N802 - OneFlow's names
        if self._blobs is None:
            where = f"flow.user_op_builder({self._name!r})"
            self._blobs = list(self._build(_Parts(where, self._type, self._inputs, self._attrs), op_name(self._name)))
            self._check_outputs()
        return self


class _Parts:
    """A composite's inputs and attributes, each refused by name when missing."""

    def __init__(self, where, op_type, inputs, attrs):
        self.where, self.op_type, self.inputs, self.attrs = where, op_type, inputs, attrs

    def blobs(self, name):
        if name not in self.inputs:
            raise ValueError(f"{self.where}: op {self.op_type!r} needs input {name!r}; it was given {sorted(self.inputs)}")
        return self.inputs[name]

    def blob(self, name):
        blobs = self.blobs(name)
        if len(blobs) != 1:
            raise ValueError(f"{self.where}: input {name!r} of op {self.op_type!r} takes one blob, got {len(blobs)}")
        return blobs[0]

    def attr(self, name, default=None):
        return self.attrs.get(name, default)


def _multi_square_sum(parts, name):
    xs = parts.blobs("x")
    if not xs:
        raise ValueError(f"{parts.where}: multi_square_sum needs at least one blob in input 'x'")
    sums = [_math.reduce_sum(_math.square(x)) for x in xs]
    total = sums[0] if len(sums) == 1 else _math.add_n(sums)
    return [_ops.reshape(total, (1,), name=name)]


def _reduce_sum_like(parts, name):
    x, like = parts.blob("x"), parts.blob("like")
    axis = list(parts.attr("axis", []))
    y = _math.reduce_sum(x, axis=axis) if axis else x
    return [_ops.reshape(y, like.shape, name=name)]


def _split_like(parts, name):
    x, likes = parts.blob("in"), parts.blobs("like")
    axis = int(parts.attr("axis", 0))
    axis += len(x.shape) if axis < 0 else 0
    sizes = [like.shape[axis] if 0 <= axis < len(like.shape) else None for like in likes]
    if not 0 <= axis < len(x.shape) or None in sizes or sum(sizes) != x.shape[axis]:
        raise ValueError(f"{parts.where}: split_like cuts 'in' {x.shape} along axis {parts.attr('axis', 0)} into the "
                         f"like blobs' lengths there, which must add up to its length; got like shapes "
                         f"{[like.shape for like in likes]}")
    pieces, begin = [], 0
    for index, size in enumerate(sizes):
        spans = [(None, None, None)] * len(x.shape)
        spans[axis] = (begin, begin + size, 1)
        pieces.append(_ops.slice_v2(x, spans, name=f"{name}_{index}"))
        begin += size
    return pieces


def _fused_cast_scale(parts, name):
    x, scalar = parts.blob("x"), parts.blob("scalar")
    if tuple(scalar.shape) != (1,):
        raise ValueError(f"{parts.where}: fused_cast_scale's 'scalar' must have shape (1,), got {tuple(scalar.shape)}")
    return [_math.multiply(_ops.cast(x, scalar.dtype), scalar, name=name)]


def _dynamic_loss_scale_schedule(parts, name):
    # OneFlow's kernel: a step with no non-finite gradient counts one more good step, and after
    # increment_period of them multiplies the scale (up to float32's largest) and starts counting
    # again; any other step divides it (not below 1) and resets the count. It writes both variables.
    count, scale, good = parts.blob("count_not_finite"), parts.blob("loss_scale"), parts.blob("good_step_counter")
    period, multiplier = int(parts.attr("increment_period", 2000)), float(parts.attr("multiplier", 2.0))
    finite = _math.equal(count, 0)
    counted = good + 1
    period_done = _math.greater_equal(counted, period)
    grown = _ops.where(period_done, _ops.clip_by_value(scale * multiplier, max_value=float(np.finfo(np.float32).max)),
                       scale)
    _ops.assign(scale, _ops.where(finite, grown, _ops.clip_by_value(scale / multiplier, min_value=1.0)))
    zeros = _ops.zeros_like(good)
    _ops.assign(good, _ops.where(finite, _ops.where(period_done, zeros, counted), zeros), name=name)
    return []


_COMPOSITES = {
    "dynamic_loss_scale_schedule": _dynamic_loss_scale_schedule,
    "multi_square_sum": _multi_square_sum,
    "reduce_sum_like": _reduce_sum_like,
    "split_like": _split_like,
    "fused_cast_scale": _fused_cast_scale,
}
