"""Tests of Weir's pure-Python typing layer: weir.dtypes, weir.typing,
weir.input_blob_def and weir._signature (no weir._C needed).

Run: cd /work/main && PYTHONPATH=python /usr/bin/python3 -m pytest -q tests/python/test_typing.py
"""

import pickle
import typing
import warnings
from typing import Dict, List, Tuple

import numpy as np
import pytest

from weir import dtypes
from weir import input_blob_def
from weir import typing as tp
from weir._signature import (
    AnnotationError,
    LegacyFuture,
    LocalBlob,
    PlaceholderLeaf,
    ResultTemplate,
    parse_signature,
    watch_value_converter,
)

P2 = tp.Numpy.Placeholder((2,))
P23 = tp.Numpy.Placeholder((2, 3))
PI = tp.Numpy.Placeholder((2,), dtype=dtypes.int32)
L2 = tp.ListNumpy.Placeholder((2,))
LL2 = tp.ListListNumpy.Placeholder((2,))


class TestBlob:
    """Stand-in for the lead's trace-time blob: carries shape/dtype and, for these
    tests, the array the 'runtime' would produce for it."""

    __test__ = False  # not a pytest test class

    def __init__(self, value, name="blob"):
        self.value = np.asarray(value, dtype=np.float32)
        self.shape = self.value.shape
        self.dtype = dtypes.float32
        self.name = name

    def __repr__(self):
        return f"TestBlob({self.name})"


def is_blob(x):
    return isinstance(x, TestBlob)


def blobs(n):
    return [TestBlob(np.full((2,), i, np.float32), f"b{i}") for i in range(n)]


def run_result(fn, value):
    """Flatten ``value`` as ``fn``'s body result and build it from the blobs' arrays."""
    sig = parse_signature(fn)
    template = sig.flatten_returns(value, is_blob)
    return template, template.build([b.value for b in template.leaves])


def simulate(fn, *args):
    """A miniature decorator: trace once, then run an 'identity runtime' in which every
    returned blob must be an input blob and its output is the pushed input array."""
    sig = parse_signature(fn)
    made = {}

    def make_blob(leaf):
        blob = TestBlob(np.zeros(leaf.shape), leaf.name)
        made[id(blob)] = leaf.name
        return blob

    body_value = fn(*sig.build_arguments(make_blob))
    template = sig.flatten_returns(body_value, is_blob)
    pushed = dict(zip((l.name for l in sig.leaves), sig.flatten_call_args(args)))
    outputs = [pushed[made[id(b)]] for b in template.leaves]
    if sig.returns_future:
        return LegacyFuture(lambda: outputs, template)
    if sig.is_async:
        return lambda cb: cb(template.build(outputs))
    return template.build(outputs)


# ---------------------------------------------------------------------------- dtypes


class TestDTypes:
    def test_constants_and_aliases(self):
        assert dtypes.float is dtypes.float32
        assert dtypes.double is dtypes.float64
        assert dtypes.char is dtypes.int8
        expected = {
            "float32": np.float32, "float64": np.float64, "float16": np.float16, "int8": np.int8,
            "int32": np.int32, "int64": np.int64, "uint8": np.uint8, "bool": np.bool_,
        }
        for name, npt in expected.items():
            d = dtypes.as_dtype(name)
            assert d.name == name
            assert d.numpy_dtype == np.dtype(npt)
            assert isinstance(d.numpy_dtype, np.dtype)

    def test_repr(self):
        assert repr(dtypes.float32) == "weir.float32"
        assert repr(dtypes.double) == "weir.float64"
        assert str(dtypes.int64) == "weir.int64"

    def test_from_numpy(self):
        assert dtypes.from_numpy(np.float32) is dtypes.float32
        assert dtypes.from_numpy(np.dtype("int64")) is dtypes.int64
        assert dtypes.from_numpy("uint8") is dtypes.uint8
        assert dtypes.from_numpy(np.bool_) is dtypes.bool_
        with pytest.raises(TypeError, match="complex128"):
            dtypes.from_numpy(np.complex128)
        with pytest.raises(TypeError, match="uint16"):
            dtypes.from_numpy(np.uint16)

    def test_as_dtype(self):
        assert dtypes.as_dtype(dtypes.int32) is dtypes.int32
        assert dtypes.as_dtype("float") is dtypes.float32
        assert dtypes.as_dtype("double") is dtypes.float64
        assert dtypes.as_dtype(np.float64) is dtypes.float64
        assert dtypes.as_dtype(float) is dtypes.float64  # numpy's reading of the builtin
        with pytest.raises(TypeError, match="unknown dtype name 'quux'"):
            dtypes.as_dtype("quux")
        with pytest.raises(TypeError):
            dtypes.as_dtype(None)
        with pytest.raises(TypeError):
            dtypes.as_dtype(object())

    def test_convert_oneflow_dtype_to_numpy_dtype(self):
        assert dtypes.convert_oneflow_dtype_to_numpy_dtype(dtypes.float) == np.float32
        assert dtypes.convert_oneflow_dtype_to_numpy_dtype(dtypes.int32) == np.dtype(np.int32)
        assert dtypes.convert_oneflow_dtype_to_numpy_dtype(dtypes.char) == np.int8

    def test_immutable_and_picklable(self):
        with pytest.raises(AttributeError):
            dtypes.float32.name = "x"
        assert pickle.loads(pickle.dumps(dtypes.int64)) is dtypes.int64


# ---------------------------------------------------------------------------- placeholders


class TestPlaceholders:
    @pytest.mark.parametrize(
        "family,kind", [(tp.Numpy, "numpy"), (tp.ListNumpy, "list"), (tp.ListListNumpy, "listlist")]
    )
    def test_placeholder_is_new_subclass(self, family, kind):
        a = family.Placeholder((4, 5), dtype=dtypes.int32, batch_axis=1)
        b = family.Placeholder((4, 5), dtype=dtypes.int32, batch_axis=1)
        assert isinstance(a, type) and a is not b
        assert issubclass(a, family.Placeholder)
        assert a.shape == (4, 5) and a.dtype is dtypes.int32 and a.batch_axis == 1 and a.kind == kind
        # the other families are not bases of it
        for other in (tp.Numpy, tp.ListNumpy, tp.ListListNumpy):
            if other is not family:
                assert not issubclass(a, other.Placeholder)

    def test_defaults_and_keywords(self):
        p = tp.Numpy.Placeholder(shape=(3,), dtype=dtypes.float)
        assert p.shape == (3,) and p.dtype is dtypes.float32 and p.batch_axis == 0
        q = tp.Numpy.Placeholder((3,))
        assert q.dtype is dtypes.float32 and q.batch_axis == 0

    def test_dtype_forms(self):
        assert tp.Numpy.Placeholder((1,), dtype=np.int64).dtype is dtypes.int64
        assert tp.Numpy.Placeholder((1,), dtype=np.dtype("uint8")).dtype is dtypes.uint8
        assert tp.Numpy.Placeholder((1,), dtype="double").dtype is dtypes.float64

    @pytest.mark.parametrize("family", [tp.Numpy, tp.ListNumpy, tp.ListListNumpy])
    def test_negative_batch_axis_normalised(self, family):
        assert family.Placeholder((2, 3, 4), batch_axis=-1).batch_axis == 2
        assert family.Placeholder((2, 3, 4), batch_axis=-3).batch_axis == 0

    def test_batch_axis_none_only_for_numpy(self):
        assert tp.Numpy.Placeholder((2, 3), batch_axis=None).batch_axis is None
        for family in (tp.ListNumpy, tp.ListListNumpy):
            with pytest.raises(TypeError, match="batch_axis.*None"):
                family.Placeholder((2, 3), batch_axis=None)

    def test_numpy_int_dims_accepted(self):
        p = tp.Numpy.Placeholder((np.int64(3), 4))
        assert p.shape == (3, 4) and all(type(d) is int for d in p.shape)

    @pytest.mark.parametrize(
        "kwargs,exc,pattern",
        [
            (dict(shape=[2, 3]), TypeError, r"shape must be a tuple.*list \[2, 3\].*tuple\(\[2, 3\]\)"),
            (dict(shape=5), TypeError, r"shape must be a tuple.*int 5"),
            (dict(shape=(2, 0)), ValueError, r"shape\[1\] is 0 in \(2, 0\)"),
            (dict(shape=(-1, 3)), ValueError, r"shape\[0\] is -1"),
            (dict(shape=(2.0, 3)), TypeError, r"shape\[0\] is float 2.0"),
            (dict(shape=(True, 3)), TypeError, r"shape\[0\] is bool"),
            (dict(shape=()), ValueError, r"at least one dimension"),
            (dict(shape=(2,), dtype="complex64"), TypeError, r"dtype must be a weir dtype.*complex64"),
            (dict(shape=(2,), dtype=np.complex128), TypeError, r"dtype.*complex128"),
            (dict(shape=(2, 3), batch_axis=2), ValueError, r"batch_axis must be in \[-2, 2\).*got 2"),
            (dict(shape=(2, 3), batch_axis=-3), ValueError, r"batch_axis must be in \[-2, 2\).*got -3"),
            (dict(shape=(2, 3), batch_axis=1.0), TypeError, r"batch_axis must be an int, got float 1.0"),
            (dict(shape=(2, 3), batch_axis=True), TypeError, r"batch_axis must be an int, got bool"),
        ],
    )
    def test_bad_arguments(self, kwargs, exc, pattern):
        with pytest.raises(exc, match=pattern) as info:
            tp.Numpy.Placeholder(**kwargs)
        assert "tp.Numpy.Placeholder()" in str(info.value)

    def test_missing_shape(self):
        with pytest.raises(TypeError, match="shape"):
            tp.ListNumpy.Placeholder()

    def test_concrete_placeholder_not_callable(self):
        with pytest.raises(TypeError, match="annotation, not a value"):
            P2(np.zeros(2))

    def test_repr(self):
        assert repr(tp.ListNumpy.Placeholder((2, 3), dtype=dtypes.int32)) == (
            "tp.ListNumpy.Placeholder(shape=(2, 3), dtype=int32, batch_axis=0)"
        )
        assert repr(tp.Numpy.Placeholder) == "tp.Numpy.Placeholder"

    def test_usable_in_annotations_of_undecorated_functions(self):
        # Annotations run at def time; typing generics must accept placeholder classes.
        def f(
            a: tp.Numpy.Placeholder((2,)),
            b: Tuple[tp.ListNumpy.Placeholder((1,)), Tuple[tp.ListListNumpy.Placeholder((3,))]],
        ) -> tp.Callback[Tuple[tp.Numpy, List[tp.ListNumpy], Dict[int, tp.ListListNumpy]]]:
            pass

        assert f.__annotations__["a"].shape == (2,)

    def test_public_names(self):
        assert sorted(tp.__all__) == ["Bundle", "Callback", "ListListNumpy", "ListNumpy", "Numpy"]
        assert {n for n in vars(tp) if not n.startswith("_")} == set(tp.__all__)

    def test_generics(self):
        assert typing.get_origin(tp.Callback[tp.Numpy]) is tp.Callback
        assert typing.get_args(tp.Bundle[tp.ListNumpy]) == (tp.ListNumpy,)
        assert typing.get_args(tp.Callback[Tuple[tp.Numpy, tp.Numpy]]) == (Tuple[tp.Numpy, tp.Numpy],)


# ---------------------------------------------------------------------------- legacy defs


class TestLegacyDefs:
    @pytest.fixture(autouse=True)
    def reset_warned(self, monkeypatch):
        monkeypatch.setattr(input_blob_def, "_warned", set())

    def test_kinds_and_attributes(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f = input_blob_def.FixedTensorDef((2, 3), dtype=dtypes.int32, batch_axis=-1)
            m = input_blob_def.MirroredTensorDef((4,))
            ml = input_blob_def.MirroredTensorListDef((5,), name="x")
        assert (f.shape, f.dtype, f.batch_axis, f.kind) == ((2, 3), dtypes.int32, 1, "numpy")
        assert (m.kind, ml.kind, ml.name) == ("list", "listlist", "x")
        assert issubclass(f.placeholder(), tp.Numpy.Placeholder)
        assert issubclass(ml.placeholder(), tp.ListListNumpy.Placeholder)
        assert "FixedTensorDef((2, 3), dtype=int32" in repr(f)

    def test_deprecation_warning_once_per_class(self):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            input_blob_def.FixedTensorDef((1,))
            input_blob_def.FixedTensorDef((2,))
            input_blob_def.MirroredTensorDef((1,))
        msgs = [str(w.message) for w in rec if issubclass(w.category, DeprecationWarning)]
        assert len(msgs) == 2
        assert "FixedTensorDef" in msgs[0] and "tp.Numpy.Placeholder" in msgs[0]
        assert "MirroredTensorDef" in msgs[1] and "tp.ListNumpy.Placeholder" in msgs[1]

    def test_validation_names_the_def(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(TypeError, match=r"flow.FixedTensorDef\(\): shape must be a tuple"):
                input_blob_def.FixedTensorDef([1, 2])
            with pytest.raises(TypeError, match="batch_axis"):
                input_blob_def.MirroredTensorDef((1, 2), batch_axis=None)
            assert input_blob_def.FixedTensorDef((1, 2), batch_axis=None).batch_axis is None

    def test_legacy_signature(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")

            def job(
                images=input_blob_def.FixedTensorDef((4, 2), dtype=dtypes.float),
                labels=input_blob_def.MirroredTensorDef((4,), dtype=dtypes.int32),
                tl=input_blob_def.MirroredTensorListDef((3,)),
            ):
                return images

        sig = parse_signature(job)
        assert sig.legacy_params and sig.returns_future and not sig.is_async
        assert [(l.name, l.kind, l.shape, l.dtype) for l in sig.leaves] == [
            ("images", "numpy", (4, 2), dtypes.float32),
            ("labels", "list", (4,), dtypes.int32),
            ("tl", "listlist", (3,), dtypes.float32),
        ]
        x = np.ones((4, 2), np.float32)
        future = simulate(job, x, [np.zeros(4, np.int32)], [[np.zeros(3, np.float32)]])
        blob = future.get()
        assert isinstance(blob, LocalBlob) and blob.numpy() is x

    def test_legacy_mixed_or_missing(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            d = input_blob_def.FixedTensorDef((1,))

        def mixed(a: P2, b=d):
            pass

        def no_default(a):
            pass

        def bad_default(a=3):
            pass

        with pytest.raises(AnnotationError, match=r"mixed\(\): parameters must be all annotated.*'b'"):
            parse_signature(mixed)
        with pytest.raises(AnnotationError, match=r"no_default\(\): parameter 'a' has no annotation"):
            parse_signature(no_default)
        with pytest.raises(AnnotationError, match=r"bad_default\(\): parameter 'a' has no annotation"):
            parse_signature(bad_default)

    def test_require_annotations(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            d = input_blob_def.FixedTensorDef((1,))

        def legacy(a=d) -> tp.Numpy:
            pass

        def no_return(a: P2):
            pass

        parse_signature(legacy)
        parse_signature(no_return)
        with pytest.raises(AnnotationError, match="typing check"):
            parse_signature(legacy, require_annotations=True)
        with pytest.raises(AnnotationError, match=r"no_return\(\): typing check"):
            parse_signature(no_return, require_annotations=True)


# ---------------------------------------------------------------------------- parameters


class TestParameters:
    def test_leaves_and_build_arguments(self):
        def job(
            images: tp.Numpy.Placeholder((4, 1, 2, 2)),
            pair: Tuple[tp.ListNumpy.Placeholder((3,), dtype=dtypes.int64), tp.Numpy.Placeholder((1,))],
            nested: Tuple[P2, Tuple[PI, tp.ListListNumpy.Placeholder((5,))]],
        ) -> None:
            pass

        sig = parse_signature(job)
        assert sig.fn_name == "job" and sig.param_names == ["images", "pair", "nested"]
        assert [l.name for l in sig.leaves] == ["images", "pair_0", "pair_1", "nested_0", "nested_1_0", "nested_1_1"]
        assert [l.kind for l in sig.leaves] == ["numpy", "list", "numpy", "numpy", "numpy", "listlist"]
        assert sig.leaves[1].dtype is dtypes.int64 and sig.leaves[4].dtype is dtypes.int32
        assert sig.leaves[4].param == "nested" and sig.leaves[4].path == (1, 0)
        assert isinstance(sig.leaves[0], PlaceholderLeaf)

        calls = []

        def make_blob(leaf):
            calls.append(leaf.name)
            return f"<{leaf.name}>"

        args = sig.build_arguments(make_blob)
        assert calls == [l.name for l in sig.leaves]  # depth-first, call order
        assert args == ["<images>", ("<pair_0>", "<pair_1>"), ("<nested_0>", ("<nested_1_0>", "<nested_1_1>"))]
        assert isinstance(args[1], tuple) and isinstance(args[2][1], tuple)

    def test_builtin_tuple_and_no_params(self):
        def job(x: tuple[P2, P23]) -> tp.Numpy:
            pass

        def nothing() -> tp.Numpy:
            pass

        assert [l.name for l in parse_signature(job).leaves] == ["x_0", "x_1"]
        sig = parse_signature(nothing)
        assert sig.leaves == [] and sig.build_arguments(lambda l: 1) == [] and sig.flatten_call_args(()) == []
        assert not sig.legacy_params

    def test_leaf_names_unique(self):
        def job(a: Tuple[P2, P2], a_0: P2, a_1: P2) -> None:
            pass

        names = [l.name for l in parse_signature(job).leaves]
        assert len(set(names)) == 4
        assert names[2:] == ["a_0", "a_1"]  # plain parameters keep their own names

    @pytest.mark.parametrize(
        "ann,pattern",
        [
            (tp.Numpy, r"tp.Numpy.Placeholder\(shape, dtype=...\)"),
            (tp.ListNumpy, r"tp.ListNumpy.Placeholder\(shape"),
            (tp.Numpy.Placeholder, r"tp.Numpy.Placeholder\(shape"),
            (int, r"invalid annotation int"),
            (np.ndarray, r"invalid annotation ndarray"),
            (List[P2], r"invalid annotation List\[tp.Numpy.Placeholder"),
            (Tuple[P2, ...], r"fixed, non-empty"),
            (Tuple[()], r"fixed, non-empty"),
            (Tuple[P2, int], r"\(element int\)"),
            (Tuple[P2, tp.Numpy], r"\(element tp.Numpy\)"),
            (typing.Optional[P2], r"invalid annotation"),
            (tp.Callback[tp.Numpy], r"invalid annotation tp.Callback\[tp.Numpy\]"),
            (5, r"invalid annotation 5 for"),  # not even a type: get_type_hints fails, raw path
        ],
    )
    def test_invalid_parameter_annotations(self, ann, pattern):
        def my_job(x: P2, y: ann) -> None:
            pass

        with pytest.raises(AnnotationError, match=pattern) as info:
            parse_signature(my_job)
        msg = str(info.value)
        assert msg.startswith("my_job(): ") and "parameter 'y'" in msg
        assert isinstance(info.value, TypeError) and isinstance(info.value, NotImplementedError)

    def test_variadic_and_keyword_only_rejected(self):
        def star(x: P2, *rest: P2) -> None:
            pass

        def kw(x: P2, **rest: P2) -> None:
            pass

        def kwonly(x: P2, *, y: P2) -> None:
            pass

        with pytest.raises(AnnotationError, match=r"star\(\): parameter '\*rest'"):
            parse_signature(star)
        with pytest.raises(AnnotationError, match=r"kw\(\): parameter '\*\*rest'"):
            parse_signature(kw)
        with pytest.raises(AnnotationError, match=r"kwonly\(\): parameter 'y'"):
            parse_signature(kwonly)

    def test_string_annotations_future_import(self):
        src = (
            "from __future__ import annotations\n"
            "def job(x: tp.Numpy.Placeholder((N, 3)), y: Tuple[tp.ListNumpy.Placeholder((2,)), P2])"
            " -> tp.Callback[Dict[int, tp.Numpy]]:\n"
            "    return {1: x}\n"
        )
        ns = {"tp": tp, "Tuple": Tuple, "Dict": Dict, "N": 7, "P2": P2}
        exec(compile(src, "<future>", "exec"), ns)
        assert isinstance(ns["job"].__annotations__["x"], str)
        sig = parse_signature(ns["job"])
        assert [(l.name, l.shape, l.kind) for l in sig.leaves] == [
            ("x", (7, 3), "numpy"), ("y_0", (2,), "list"), ("y_1", (2,), "numpy")
        ]
        assert sig.is_async and sig.result_annotation == Dict[int, tp.Numpy]

    def test_string_annotations_local_names(self):
        def job(x: "LocalP") -> "tp.Numpy":
            pass

        with pytest.raises(AnnotationError, match=r"job\(\): cannot evaluate its annotations.*LocalP"):
            parse_signature(job)
        LocalP = tp.Numpy.Placeholder((9,))
        sig = parse_signature(job, localns={"LocalP": LocalP})
        assert sig.leaves[0].shape == (9,)

    def test_not_callable(self):
        with pytest.raises(TypeError):
            parse_signature(3)


# ---------------------------------------------------------------------------- call arguments


def _job_one(images: tp.Numpy.Placeholder((2, 3)), labels: tp.Numpy.Placeholder((2,), dtype=dtypes.int32)) -> tp.Numpy:
    pass


class TestCallArgs:
    def test_returns_contiguous_arrays_in_leaf_order(self):
        sig = parse_signature(_job_one)
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        b = np.array([1, 2], np.int32)
        out = sig.flatten_call_args((a, b))
        assert out[0] is a and out[1] is b  # already contiguous: no copy

        nc = np.arange(12, dtype=np.float32).reshape(3, 4)[:2, :3]
        assert not nc.flags.c_contiguous
        (got, _) = sig.flatten_call_args((nc, b))
        assert got.flags.c_contiguous and np.array_equal(got, nc)
        fortran = np.asfortranarray(a)
        assert sig.flatten_call_args((fortran, b))[0].flags.c_contiguous

    def test_wrong_argument_count(self):
        sig = parse_signature(_job_one)
        a = np.zeros((2, 3), np.float32)
        with pytest.raises(TypeError) as info:
            sig.flatten_call_args((a,))
        assert str(info.value) == "_job_one() takes 2 positional arguments but 1 was given"
        with pytest.raises(TypeError, match=r"takes 2 positional arguments but 3 were given"):
            sig.flatten_call_args((a, a, a))

        def single(x: P2) -> None:
            pass

        with pytest.raises(TypeError, match=r"single\(\) takes 1 positional argument but 0 were given"):
            parse_signature(single).flatten_call_args(())

    def test_keyword_arguments_rejected(self):
        sig = parse_signature(_job_one)
        with pytest.raises(TypeError, match=r"_job_one\(\) got keyword argument\(s\) 'labels'"):
            sig.flatten_call_args((np.zeros((2, 3), np.float32),), {"labels": np.zeros(2, np.int32)})

    def test_a_number_array_of_another_dtype_is_converted_saying_so(self):
        sig = parse_signature(_job_one)
        with pytest.warns(UserWarning) as caught:
            images, labels = sig.flatten_call_args((np.full((2, 3), 2.5), np.array([1.9, -1.9])))  # float64
        assert images.dtype == np.float32 and labels.dtype == np.int32
        np.testing.assert_array_equal(images, np.full((2, 3), 2.5, np.float32))
        np.testing.assert_array_equal(labels, [1, -1])  # a float to an int truncates, as OneFlow's conversion
        messages = [str(w.message) for w in caught]
        assert any("_job_one()" in m and "'images'" in m and "float64" in m and "float32" in m for m in messages)
        assert any("'labels' has dtype float64; converted to its placeholder's int32" in m for m in messages)

    def test_an_array_that_is_not_numbers_names_argument_and_both_dtypes(self):
        sig = parse_signature(_job_one)
        with pytest.raises(TypeError) as info:
            sig.flatten_call_args((np.full((2, 3), "a"), np.zeros(2, np.int32)))
        msg = str(info.value)
        assert "_job_one()" in msg and "'images'" in msg and "str32" in msg and "float32" in msg

    def test_byte_swapped_dtype_is_shown(self):
        sig = parse_signature(_job_one)
        swapped = np.zeros((2, 3), dtype=np.dtype(np.float32).newbyteorder())
        with pytest.raises(TypeError, match=r"dtype [<>]f4"):
            sig.flatten_call_args((swapped, np.zeros(2, np.int32)))

    def test_shape_mismatch_names_both_shapes(self):
        sig = parse_signature(_job_one)
        with pytest.raises(ValueError) as info:
            sig.flatten_call_args((np.zeros((3, 2), np.float32), np.zeros(2, np.int32)))
        msg = str(info.value)
        assert "_job_one()" in msg and "'images'" in msg and "(3, 2)" in msg and "(2, 3)" in msg

    def test_non_ndarray(self):
        sig = parse_signature(_job_one)
        with pytest.raises(TypeError, match=r"'images' must be a numpy.ndarray, got a list of 2 values"):
            sig.flatten_call_args(([[0.0] * 3] * 2, np.zeros(2, np.int32)))
        with pytest.raises(TypeError, match=r"'labels' must be a numpy.ndarray, got int 3"):
            sig.flatten_call_args((np.zeros((2, 3), np.float32), 3))

    def test_list_numpy(self):
        def job(x: tp.ListNumpy.Placeholder((2,), dtype=dtypes.int32)) -> tp.ListNumpy:
            pass

        sig = parse_signature(job)
        a = np.array([1, 2], np.int32)
        assert sig.flatten_call_args(([a],))[0] is a
        assert sig.flatten_call_args(((a,),))[0] is a
        with pytest.raises(ValueError, match=r"'x' must be a list of 1 entry \(one per device the job is placed on\), got 2: .*list of 2"):
            sig.flatten_call_args(([a, a],))
        with pytest.raises(ValueError, match="a list of 1 entry"):
            sig.flatten_call_args(([],))
        # A session of two devices takes one array per device, in device order.
        b = np.array([3, 4], np.int32)
        both = sig.flatten_call_args(([a, b],), devices=2)
        assert both[0] is a and both[1] is b
        with pytest.raises(ValueError, match=r"'x' must be a list of 2 entries \(one per device the job is placed on\), got 1"):
            sig.flatten_call_args(([a],), devices=2)
        with pytest.raises(TypeError, match=r"'x' must be a list of numpy arrays \(tp.ListNumpy\), got a numpy.ndarray"):
            sig.flatten_call_args((a,))
        with pytest.warns(UserWarning, match=r"argument 'x'\[0\] has dtype float64; converted"):
            assert sig.flatten_call_args(([a.astype(np.float64)],))[0].dtype == a.dtype
        with pytest.raises(ValueError, match=r"argument 'x'\[0\] has shape \(3,\).*\(2,\)"):
            sig.flatten_call_args(([np.zeros(3, np.int32)],))

    def test_list_list_numpy(self):
        def job(x: LL2) -> tp.ListListNumpy:
            pass

        sig = parse_signature(job)
        a = np.zeros(2, np.float32)
        assert sig.flatten_call_args(([[a]],))[0] is a
        with pytest.raises(TypeError, match=r"'x'\[0\] must be a non-empty list of numpy arrays"):
            sig.flatten_call_args(([a],))
        b = np.ones(1, np.float32)
        both = sig.flatten_call_args(([[a, b]],))  # a tensor list of two tensors: one after the other
        assert both[0] is a and both[1] is b and both.tensor_list_items == {"x": 2}
        with pytest.raises(ValueError, match=r"'x'\[0\] holds 3 tensors, more than its placeholder's 2"):
            sig.flatten_call_args(([[a, a, a]],))
        with pytest.raises(TypeError, match=r"'x'\[0\] must be a non-empty list of numpy arrays"):
            sig.flatten_call_args(([[]],))
        with pytest.raises(ValueError, match=r"'x' must be a list of 1 entry"):
            sig.flatten_call_args(([[a], [a]],))
        with pytest.raises(ValueError, match=r"'x'\[0\]\[0\] has shape"):
            sig.flatten_call_args(([[np.zeros(5, np.float32)]],))

    def test_tuple_parameters(self):
        def job(p: Tuple[P2, Tuple[PI, L2]]) -> None:
            pass

        sig = parse_signature(job)
        f = np.zeros(2, np.float32)
        i = np.zeros(2, np.int32)
        out = sig.flatten_call_args(((f, (i, [f])),))
        assert out[0] is f and out[1] is i and out[2] is f
        assert len(sig.flatten_call_args(([f, [i, [f]]],))) == 3  # lists accepted for tuples
        with pytest.raises(TypeError, match=r"argument 'p' must be a tuple of 2 values .*got a tuple of 3"):
            sig.flatten_call_args(((f, (i, [f]), f),))
        with pytest.raises(TypeError, match=r"argument 'p' must be a tuple of 2 values.*got a numpy.ndarray"):
            sig.flatten_call_args((f,))
        with pytest.raises(TypeError, match=r"argument 'p'\[1\]\[0\] has dtype str32.*expects int32"):
            sig.flatten_call_args(((f, (np.array(["x"]), [f])),))


# ---------------------------------------------------------------------------- return annotations

VALID_RETURNS = [
    None,
    tp.Numpy,
    tp.ListNumpy,
    tp.ListListNumpy,
    Tuple[tp.Numpy],
    Tuple[tp.Numpy, tp.ListNumpy, tp.ListListNumpy],
    List[tp.Numpy],
    List[tp.ListListNumpy],
    Dict[str, tp.Numpy],
    Dict[int, tp.ListNumpy],
    Tuple[List[tp.Numpy], Dict[str, Tuple[tp.Numpy, tp.ListNumpy]]],
    List[Dict[str, List[tp.Numpy]]],
    tuple[tp.Numpy, list[tp.Numpy], dict[str, tp.Numpy]],
    tp.Bundle[tp.Numpy],
    tp.Bundle[tp.ListNumpy],
    tp.Bundle[tp.ListListNumpy],
]


class TestReturnAnnotations:
    @pytest.mark.parametrize("ann", VALID_RETURNS, ids=repr)
    def test_valid(self, ann):
        def job(x: P2) -> ann:
            pass

        sig = parse_signature(job)
        assert not sig.is_async and not sig.returns_future
        assert sig.returns_none == (ann is None)

    @pytest.mark.parametrize("ann", VALID_RETURNS, ids=repr)
    def test_valid_callback(self, ann):
        def job(x: P2) -> tp.Callback[ann]:
            pass

        sig = parse_signature(job)
        assert sig.is_async and not sig.returns_future
        assert sig.result_annotation == ann

    def test_absent_is_legacy_future(self):
        def job(x: P2):
            pass

        sig = parse_signature(job)
        assert sig.returns_future and not sig.is_async and not sig.returns_none

    @pytest.mark.parametrize(
        "ann,pattern",
        [
            (int, r"invalid return annotation int: expected None, tp.Numpy"),
            (np.ndarray, r"invalid return annotation ndarray"),
            (P2, r"placeholders annotate parameters; annotate a returned blob with tp.Numpy"),
            (L2, r"annotate a returned blob with tp.ListNumpy"),
            (tp.Callback, r"tp.Callback needs its type argument"),
            (tp.Bundle, r"tp.Bundle needs its type argument"),
            (tp.Bundle[List[tp.Numpy]], r"tp.Bundle\[E\] needs E in"),
            (tp.Bundle[int], r"tp.Bundle\[E\] needs E in"),
            (Tuple[()], r"Tuple needs a fixed, non-empty"),
            (Tuple[tp.Numpy, ...], r"Tuple needs a fixed, non-empty"),
            (typing.Tuple, r"Tuple needs a fixed, non-empty"),
            (typing.List, r"List needs exactly one"),
            (typing.Dict, r"Dict needs a key type"),
            (Dict[List[int], tp.Numpy], r"Dict key annotation must be a plain class.*List\[int\]"),
            (Dict[typing.Any, tp.Numpy], r"Dict key annotation must be a plain class"),
            (Dict[str, int], r"\(at int\)"),
            (typing.Optional[tp.Numpy], r"invalid return annotation"),
            (typing.Union[tp.Numpy, tp.ListNumpy], r"invalid return annotation"),
            (Tuple[tp.Numpy, tp.Callback[tp.Numpy]], r"Callback is only allowed as the outermost"),
            (List[tp.Bundle[tp.Numpy]], r"Bundle is only allowed as the outermost"),
            (tp.Callback[tp.Callback[tp.Numpy]], r"Callback is only allowed as the outermost"),
            (tp.Callback[int], r"invalid return annotation tp.Callback\[int\] \(at int\)"),
            (tp.Callback[P2], r"placeholders annotate parameters"),
            ("tp.Numpy.Placeholder((2,))", r"placeholders annotate parameters"),  # string form
        ],
        ids=repr,
    )
    def test_invalid(self, ann, pattern):
        def bad_job(x: P2) -> ann:
            pass

        with pytest.raises(AnnotationError, match=pattern) as info:
            parse_signature(bad_job)
        assert str(info.value).startswith("bad_job(): invalid return annotation")
        assert isinstance(info.value, NotImplementedError)


# ---------------------------------------------------------------------------- results


def _job_returning(ann):
    def job(x: P2) -> ann:
        pass

    return job


def _legacy_job(x: P2):
    pass


class TestResults:
    def test_none(self):
        template, value = run_result(_job_returning(None), None)
        assert value is None and template.leaves == []

    def test_callback_none(self):
        template, value = run_result(_job_returning(tp.Callback[None]), None)
        assert value is None and template.leaves == []

    @pytest.mark.parametrize(
        "ann,convert",
        [(tp.Numpy, lambda a: a), (tp.ListNumpy, lambda a: [a]), (tp.ListListNumpy, lambda a: [[a]])],
    )
    def test_single_leaf(self, ann, convert):
        (b,) = blobs(1)
        for fn in (_job_returning(ann), _job_returning(tp.Callback[ann])):
            template, value = run_result(fn, b)
            assert template.leaves == [b]
            expected = convert(b.value)
            assert type(value) is type(expected)
            inner = value
            while isinstance(inner, list):
                assert len(inner) == 1
                inner = inner[0]
            assert inner is b.value

    def test_tuple(self):
        b0, b1, b2 = blobs(3)
        template, value = run_result(
            _job_returning(Tuple[tp.Numpy, tp.ListNumpy, tp.ListListNumpy]), (b0, b1, b2)
        )
        assert type(value) is tuple and len(value) == 3
        assert value[0] is b0.value and value[1] == [b1.value] and value[2] == [[b2.value]]
        assert template.leaf_kinds == ["numpy", "list", "listlist"]

    def test_list_and_empty_list(self):
        bs = blobs(3)
        template, value = run_result(_job_returning(List[tp.Numpy]), list(bs))
        assert type(value) is list and [v is b.value for v, b in zip(value, bs)] == [True] * 3
        template, value = run_result(_job_returning(List[tp.Numpy]), [])
        assert value == [] and template.leaves == []

    def test_dict_keys_and_order(self):
        b0, b1 = blobs(2)
        template, value = run_result(_job_returning(Dict[str, tp.ListNumpy]), {"z": b0, "a": b1})
        assert list(value) == ["z", "a"] and value["z"][0] is b0.value and value["a"] == [b1.value]
        template, value = run_result(_job_returning(Dict[int, Tuple[tp.Numpy, tp.Numpy]]), {256: (b0, b1), 3: (b1, b0)})
        assert value[256][0] is b0.value and value[3][0] is b1.value and type(value[3]) is tuple

    def test_nested(self):
        b0, b1, b2, b3 = blobs(4)
        ann = Tuple[List[tp.Numpy], Dict[str, Tuple[tp.Numpy, tp.ListNumpy]]]
        template, value = run_result(_job_returning(ann), ([b0, b1], {"k": (b2, b3)}))
        assert template.leaves == [b0, b1, b2, b3]
        assert type(value) is tuple and type(value[0]) is list and type(value[1]["k"]) is tuple
        assert value[0][1] is b1.value and value[1]["k"][1] == [b3.value]

    def test_callback_unwraps_result_annotation(self):
        b0, b1 = blobs(2)
        template, value = run_result(_job_returning(tp.Callback[Tuple[tp.Numpy, tp.Numpy]]), (b0, b1))
        assert type(value) is tuple and len(value) == 2
        assert value[0] is b0.value and value[1] is b1.value

    @pytest.mark.parametrize(
        "ann,convert,kind",
        [
            (tp.Bundle[tp.Numpy], lambda a: a, "numpy"),
            (tp.Bundle[tp.ListNumpy], lambda a: [a], "list"),
            (tp.Bundle[tp.ListListNumpy], lambda a: [[a]], "listlist"),
            (tp.Callback[tp.Bundle[tp.ListNumpy]], lambda a: [a], "list"),
        ],
    )
    def test_bundle_preserves_nesting(self, ann, convert, kind):
        b0, b1, b2, b3 = blobs(4)
        returned = {256: (b0, [b1, {"x": b2, (1, 2): b3}]), "s": [], "t": ()}
        template, value = run_result(_job_returning(ann), returned)
        assert template.leaves == [b0, b1, b2, b3] and template.leaf_kinds == [kind] * 4
        assert list(value) == [256, "s", "t"]
        assert type(value[256]) is tuple and type(value[256][1]) is list and type(value[256][1][1]) is dict
        assert value["s"] == [] and value["t"] == ()

        def same(x, y):
            return x is y if isinstance(y, np.ndarray) else type(x) is type(y) and all(map(same, x, y))

        assert same(value[256][0], convert(b0.value))
        assert same(value[256][1][1][(1, 2)], convert(b3.value))
        # a lone blob is fine too
        _, single = run_result(_job_returning(ann), b1)
        assert same(single, convert(b1.value))

    def test_repeated_blobs_keep_every_occurrence(self):
        (b,) = blobs(1)
        template, value = run_result(_job_returning(Tuple[tp.Numpy, tp.Numpy, tp.ListNumpy]), (b, b, b))
        assert template.leaves == [b, b, b]
        assert value[0] is b.value and value[1] is b.value and value[2][0] is b.value
        template, value = run_result(_job_returning(tp.Bundle[tp.Numpy]), [b, (b, {"k": b})])
        assert len(template.leaves) == 3

    def test_unannotated_gives_local_blobs(self):
        b0, b1, b2 = blobs(3)
        template, value = run_result(_legacy_job, (b0, [b1, {"k": b2}]))
        assert template.leaf_kinds == ["local"] * 3
        assert type(value) is tuple and type(value[1]) is list and type(value[1][1]) is dict
        assert isinstance(value[0], LocalBlob) and value[0].numpy() is b0.value
        assert value[1][1]["k"].numpy() is b2.value
        template, value = run_result(_legacy_job, b0)
        assert isinstance(value, LocalBlob)
        template, value = run_result(_legacy_job, None)  # a legacy job returning nothing
        assert value is None and template.leaves == []

    def test_build_checks_array_count(self):
        b0, b1 = blobs(2)
        template = parse_signature(_job_returning(Tuple[tp.Numpy, tp.Numpy])).flatten_returns((b0, b1), is_blob)
        assert isinstance(template, ResultTemplate)
        with pytest.raises(ValueError, match="expected 2 arrays, got 1"):
            template.build([b0.value])
        # the template is reusable: one build per call
        first = template.build([b0.value, b1.value])
        second = template.build([b1.value, b0.value])
        assert first[0] is b0.value and second[0] is b1.value

    @pytest.mark.parametrize(
        "ann,returned,pattern",
        [
            (None, "BLOB", r"return value must be None per its return annotation None, but the job returned TestBlob"),
            (tp.Numpy, None, r"return value must be a blob \(tp.Numpy\).*returned None"),
            (tp.ListNumpy, "ARRAY", r"must be a blob \(tp.ListNumpy\).*numpy.ndarray"),
            (tp.Numpy, ("BLOB",), r"must be a blob \(tp.Numpy\).*a tuple of 1 value$"),
            (Tuple[tp.Numpy, tp.Numpy], ("BLOB",), r"must be a tuple of 2 values per its return annotation Tuple\[tp.Numpy, tp.Numpy\], but the job returned a tuple of 1 value"),
            (Tuple[tp.Numpy, tp.Numpy], ["BLOB", "BLOB"], r"must be a tuple of 2 values.*a list of 2 values"),
            (Tuple[tp.Numpy, tp.Numpy], ("BLOB", 3), r"return value\[1\] must be a blob.*int 3"),
            (List[tp.Numpy], ("BLOB",), r"must be a list per.*a tuple of 1 value"),
            (List[tp.Numpy], ["BLOB", None], r"return value\[1\] must be a blob"),
            (Dict[str, tp.Numpy], ["BLOB"], r"must be a dict with str keys"),
            (Dict[str, tp.Numpy], {1: "BLOB"}, r"key 1 has type int, but its return annotation Dict\[str, tp.Numpy\] requires str keys"),
            (Dict[int, tp.Numpy], {True: "BLOB"}, r"key True has type bool.*requires int keys"),
            (Dict[str, List[tp.Numpy]], {"a": ["BLOB", "x"]}, r"return value\['a'\]\[1\] must be a blob"),
            (tp.Bundle[tp.Numpy], {"a": ["BLOB", 1.5]}, r"return value\['a'\]\[1\] must be a blob or a list/tuple/dict of blobs.*float 1.5"),
            (tp.Bundle[tp.Numpy], None, r"must be a blob or a list/tuple/dict of blobs.*None"),
            (tp.Callback[tp.Numpy], [], r"must be a blob \(tp.Numpy\) per its return annotation tp.Callback\[tp.Numpy\]"),
        ],
        ids=repr,
    )
    def test_mismatches(self, ann, returned, pattern):
        def sub(x):
            if x == "BLOB":
                return TestBlob([0.0, 0.0])
            if x == "ARRAY":
                return np.zeros(2)
            if isinstance(x, (list, tuple)):
                return type(x)(sub(v) for v in x)
            if isinstance(x, dict):
                return {k: sub(v) for k, v in x.items()}
            return x

        def my_job(x: P2) -> ann:
            pass

        with pytest.raises(TypeError, match=pattern) as info:
            parse_signature(my_job).flatten_returns(sub(returned), is_blob)
        assert str(info.value).startswith("my_job(): ")

    def test_unannotated_mismatch(self):
        with pytest.raises(TypeError, match=r"_legacy_job\(\): return value\[0\] must be a blob or a list/tuple/dict of blobs \(un-annotated"):
            parse_signature(_legacy_job).flatten_returns(("s",), is_blob)


# ---------------------------------------------------------------------------- legacy objects


class TestLocalBlobAndFuture:
    def test_local_blob(self):
        a = np.arange(4, dtype=np.int32).reshape(2, 2)
        lb = LocalBlob(a)
        assert lb.numpy() is a and lb.numpy(0) is a
        assert len(lb.numpy_list()) == 1 and lb.numpy_list()[0] is a
        assert lb.numpy_lists()[0][0] is a
        assert lb.shape == (2, 2) and lb.dtype is dtypes.int32
        assert np.asarray(lb, dtype=np.float64).dtype == np.float64 and float(np.mean(lb)) == 1.5
        with pytest.raises(IndexError, match=r"1 device\(s\)"):
            lb.numpy(1)
        assert lb[1, 0] == 2 and (lb[:, 1] == [1, 3]).all() and len(lb) == 2  # indexed as its array
        # A mirrored result: one array per device; numpy() is device 0's, np.asarray the concatenation.
        two = LocalBlob([a, a + 4])
        assert two.numpy(1)[0, 0] == 4 and len(two.numpy_list()) == 2
        assert np.asarray(two).shape == (4, 2)
        with pytest.warns(DeprecationWarning, match="ndarray"):
            assert lb.ndarray() is a
        assert "LocalBlob(array(" in repr(lb)

    def _template(self):
        b0, b1 = blobs(2)
        return parse_signature(_legacy_job).flatten_returns((b0, [b1]), is_blob), (b0.value, b1.value)

    def test_get_is_cached(self):
        template, arrays = self._template()
        calls = []

        def wait():
            calls.append(1)
            return list(arrays)

        fut = LegacyFuture(wait, template)
        r1 = fut.get()
        r2 = fut.get()
        assert r1 is r2 and calls == [1]
        assert type(r1) is tuple and r1[0].numpy() is arrays[0] and r1[1][0].numpy() is arrays[1]

    def test_async_get_with_register(self):
        template, arrays = self._template()
        registered = []
        got = []
        fut = LegacyFuture(lambda: pytest.fail("must not block"), template, registered.append)
        fut.async_get(got.append)
        assert got == [] and len(registered) == 1  # nothing delivered yet
        registered[0](list(arrays))
        assert len(got) == 1 and got[0][1][0].numpy() is arrays[1]
        assert fut.get() is got[0]  # delivered result is cached for get()

    def test_delivery_after_get_keeps_first_result(self):
        template, arrays = self._template()
        registered, got = [], []
        fut = LegacyFuture(lambda: list(arrays), template, registered.append)
        fut.async_get(got.append)
        first = fut.get()  # the caller blocked before the runtime delivered
        registered[0](list(arrays))
        assert got[0] is first  # one result object, whichever path built it

    def test_async_get_without_register_and_after_get(self):
        template, arrays = self._template()
        fut = LegacyFuture(lambda: list(arrays), template)
        got = []
        fut.async_get(got.append)
        assert len(got) == 1 and got[0][0].numpy() is arrays[0]
        fut.async_get(got.append)  # already done: immediate
        assert got[1] is got[0]
        with pytest.raises(TypeError, match="callable"):
            fut.async_get(3)


# ---------------------------------------------------------------------------- whole pipeline


class TestPipeline:
    def test_identity_jobs(self):
        def job(
            a: tp.Numpy.Placeholder((2,)),
            b: tp.ListNumpy.Placeholder((3,), dtype=dtypes.int32),
            c: tp.ListListNumpy.Placeholder((1,)),
        ) -> Tuple[tp.Numpy, tp.ListNumpy, tp.ListListNumpy, tp.Numpy]:
            return a, b, c, a

        a = np.ones(2, np.float32)
        b = np.arange(3, dtype=np.int32)
        c = np.zeros(1, np.float32)
        ra, rb, rc, ra2 = simulate(job, a, [b], [[c]])
        assert ra is a and ra2 is a and rb[0] is b and rc[0][0] is c

    def test_callback_job(self):
        def job(x: P2) -> tp.Callback[Dict[str, tp.ListNumpy]]:
            return {"x": x}

        x = np.ones(2, np.float32)
        got = []
        simulate(job, x)(got.append)
        assert len(got) == 1 and list(got[0]) == ["x"] and got[0]["x"][0] is x

    def test_none_job(self):
        def job(x: P2) -> None:
            pass

        assert simulate(job, np.ones(2, np.float32)) is None


# ---------------------------------------------------------------------------- watch


def _h_numpy(x: tp.Numpy):
    pass


def _h_list(x: tp.ListNumpy):
    pass


def _h_listlist(x: tp.ListListNumpy):
    pass


def _h_none(x):
    pass


def _h_string(x: "tp.ListNumpy"):
    pass


class TestWatch:
    A = np.arange(3, dtype=np.float32)

    def test_typed_handlers(self):
        assert watch_value_converter(_h_numpy)(self.A) is self.A
        v = watch_value_converter(_h_list)(self.A)
        assert type(v) is list and len(v) == 1 and v[0] is self.A
        v = watch_value_converter(_h_listlist)(self.A)
        assert type(v[0]) is list and v[0][0] is self.A
        v = watch_value_converter(_h_string)(self.A)
        assert type(v) is list and v[0] is self.A

    def test_untyped_handlers(self):
        for handler in (_h_none, lambda blob: None, print):
            v = watch_value_converter(handler)(self.A)
            assert isinstance(v, LocalBlob) and v.numpy() is self.A

    def test_handler_shapes(self):
        class Obj:
            def method(self, x: tp.Numpy):
                pass

            def __call__(self, x: tp.ListNumpy):
                pass

        def with_default(x: tp.Numpy, prefix="p"):
            pass

        assert watch_value_converter(Obj().method)(self.A) is self.A
        assert watch_value_converter(Obj())(self.A)[0] is self.A
        assert watch_value_converter(with_default)(self.A) is self.A

    @pytest.mark.parametrize(
        "handler,pattern",
        [
            (lambda: None, r"must take exactly one positional parameter"),
            (lambda a, b: None, r"must take exactly one positional parameter; its signature is \(a, b\)"),
            (lambda *, x: None, r"must take exactly one positional parameter"),
        ],
    )
    def test_bad_arity(self, handler, pattern):
        with pytest.raises(TypeError, match=r"flow.watch_diff: handler .*" + pattern):
            watch_value_converter(handler, what="flow.watch_diff")

    @pytest.mark.parametrize("ann", [int, P2, List[tp.Numpy], tp.Callback[tp.Numpy], np.ndarray])
    def test_bad_annotation(self, ann):
        def my_handler(value: ann):
            pass

        with pytest.raises(TypeError, match=r"flow.watch: handler .*my_handler parameter 'value' is annotated .*expected tp.Numpy"):
            watch_value_converter(my_handler)

    def test_not_callable(self):
        with pytest.raises(TypeError, match="flow.watch: handler must be callable"):
            watch_value_converter(3)
