"""Every op reaches Python through one generic binding, weir._C.add_op(type, inputs, attrs, name): each
op's file reads its attributes by name. The Python wrappers name the ops they add; the registry's other
ops are ones the core adds itself (gradients, optimizer updates)."""

import glob
import os
import re

import numpy as np
import pytest

from weir import _C

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Ops the core adds itself: backward ops, optimizer steps, and what autodiff and the layers build with.
CORE_ONLY = re.compile(r".*_grad(_data|_filter)?$|.*_update$|^(learning_rate|increment|clip_by_global_norm|broadcast_to|reduce_sum_to|dropout)$")


def _builder():
    builder = _C.JobBuilder("by_name", _C.JobType.predict)
    return builder, builder.placeholder("x", [2, 3], _C.DType.float32)


def test_every_op_is_reached_from_python_or_added_by_the_core():
    named = set()
    for path in glob.glob(os.path.join(ROOT, "python", "weir", "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as f:
            named |= set(re.findall(r'"([a-z0-9_]+)"', f.read()))
    ops = set(_C.registered_ops())
    assert len(ops) > 60
    assert sorted(op for op in ops if op not in named and not CORE_ONLY.match(op)) == []


def test_every_op_has_a_cpu_kernel_and_a_cuda_kernel_where_cuda_is_built():
    ops = set(_C.registered_ops())
    assert sorted(ops - set(_C.supported_ops("cpu"))) == []
    cuda = set(_C.supported_ops("gpu"))
    if cuda:  # a build with the CUDA backend (a GPU need not be present)
        assert sorted(ops - cuda) == []


def test_every_unary_kind_is_a_flow_math_or_flow_nn_function():
    import weir as flow

    assert len(_C.unary_kinds) >= 17 and "expm1" in _C.unary_kinds
    # OneFlow's activations (hardsigmoid, hardswish) are under flow.nn, the rest under flow.math.
    assert [kind for kind in _C.unary_kinds
            if not callable(getattr(flow.math, kind, None)) and not callable(getattr(flow.nn, kind, None))] == []
    assert _C.scalar_kinds == ["add", "sub", "rsub", "mul", "div", "rdiv", "pow"]


def test_add_op_converts_python_values():
    builder, x = _builder()
    (y,) = _C.add_op("reduce_sum", [x], {"axes": (np.int64(1),), "keep_dims": True}, "total")
    assert tuple(y.shape) == (2, 1)
    (z,) = _C.add_op("clip_by_value", [x], {"min": 0, "max": None})
    assert tuple(z.shape) == (2, 3)
    (h,) = _C.add_op("one_hot", [builder.placeholder("labels", [4], _C.DType.int32)], {"depth": 3, "dtype": _C.DType.float64})
    assert tuple(h.shape) == (4, 3) and h.dtype == _C.DType.float64


def test_add_op_errors_name_the_op_the_attribute_and_what_it_got():
    _, x = _builder()
    with pytest.raises(ValueError, match=r"^\[reduce_sum\] attribute 'keep_dims': expected a bool, got an int$"):
        _C.add_op("reduce_sum", [x], {"keep_dims": 1})
    with pytest.raises(ValueError, match=r"^\[reduce_sum\] has no attribute 'keepdims' \(its attributes: axes, keep_dims\)$"):
        _C.add_op("reduce_sum", [x], {"keepdims": True})
    with pytest.raises(ValueError, match=r"^\[softmax\] attribute 'axis': expected None, a bool, an int, a float, a str, a "
                                         r"dtype or a list of numbers, got dict$"):
        _C.add_op("softmax", [x], {"axis": {}})
    with pytest.raises(ValueError, match=r"^\[transpose\] attribute 'perm': expected None, .* got str$"):
        _C.add_op("transpose", [x], {"perm": [1, "0"]})
    with pytest.raises(ValueError, match=r"^\[no_such_op\] unknown op type$"):
        _C.add_op("no_such_op", [x], {})


def test_the_files_docs_contributing_names_exist():
    with open(os.path.join(ROOT, "docs", "contributing.md"), encoding="utf-8") as f:
        text = f.read()
    paths = set(re.findall(r"`((?:src|include|python|tests|scripts)/[a-z0-9_/.]+)`", text))
    assert len(paths) >= 12
    assert sorted(p for p in paths if not os.path.exists(os.path.join(ROOT, p))) == []
