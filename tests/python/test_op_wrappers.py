"""Every Python op wrapper, with its attributes, computes what numpy computes: the wrappers reach the
ops through weir._C.add_op, which reads the attributes by name."""

from typing import Tuple

import numpy as np
import pytest

import weir as flow
import weir.typing as tp


def _x(shape, seed=0, low=-1.0, high=1.0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


def test_array_ops():
    @flow.global_function()
    def job(a: tp.Numpy.Placeholder((2, 3)), b: tp.Numpy.Placeholder((4, 3)),
            labels: tp.Numpy.Placeholder((4,), dtype=flow.int32)) -> Tuple[(tp.Numpy,) * 8]:
        return (flow.reshape(a, (3, -1)), flow.transpose(a, perm=[1, 0]),
                flow.matmul(a, b, transpose_b=True, alpha=0.5), flow.matmul(a, a, transpose_a=True),
                flow.cast(a, flow.int32), flow.identity(a), flow.concat([a, a], axis=1),
                flow.one_hot(labels, depth=5, on_value=3, off_value=-1, dtype=flow.float64))

    a, b = _x((2, 3)), _x((4, 3), seed=1)
    labels = np.array([0, 4, 2, 2], np.int32)
    got = job(a, b, labels)
    want = (a.reshape(3, 2), a.T, 0.5 * a @ b.T, a.T @ a, a.astype(np.int32), a, np.concatenate([a, a], axis=1),
            np.where(np.eye(5)[labels] == 1, 3.0, -1.0))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_math_ops():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3)), y: tp.Numpy.Placeholder((2, 3))) -> Tuple[(tp.Numpy,) * 23]:
        return (x + y, x - 2.0, 2.0 - x, x * y, x / 4.0, 1.0 / y, flow.math.pow(y, 2.0), flow.math.maximum(x, 0.25),
                flow.math.minimum(x, y), flow.math.exp(x), flow.math.log1p(y), flow.math.floor(x * 3),
                flow.math.clip_by_value(x, min_value=-0.5), flow.math.clip_by_value(x, -0.5, 0.5),
                flow.math.relu(x), flow.math.sigmoid(x), flow.math.tanh(x), flow.math.add_n([x, y, x]),
                flow.math.reduce_sum(x, axis=1, keepdims=True), flow.math.reduce_mean(x),
                flow.math.reduce_max(x, axis=[0]), flow.math.reduce_min(x, axis=1), flow.math.argmax(x))

    x, y = _x((2, 3)), _x((2, 3), seed=1, low=0.5, high=2.0)
    want = (x + y, x - 2, 2 - x, x * y, x / 4, 1 / y, y ** 2, np.maximum(x, 0.25), np.minimum(x, y), np.exp(x),
            np.log1p(y), np.floor(x * 3), np.maximum(x, -0.5), np.clip(x, -0.5, 0.5), np.maximum(x, 0),
            1 / (1 + np.exp(-x)), np.tanh(x), x + y + x, x.sum(axis=1, keepdims=True), x.mean(), x.max(axis=0),
            x.min(axis=1), x.argmax(axis=-1).astype(np.int32))
    got = job(x, y)
    assert len(got) == len(want)
    for index, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == np.asarray(w).dtype, index
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=str(index))


def _softmax(z, axis):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_nn_ops():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3, 4)), bias: tp.Numpy.Placeholder((3,)), last: tp.Numpy.Placeholder((4,)),
            labels: tp.Numpy.Placeholder((2,), dtype=flow.int32), probs: tp.Numpy.Placeholder((2, 4)),
            logits: tp.Numpy.Placeholder((2, 4))) -> Tuple[(tp.Numpy,) * 7]:
        return (flow.nn.softmax(x), flow.nn.softmax(x, axis=1), flow.nn.bias_add(x, bias),
                flow.nn.bias_add(x, last, data_format="NHWC"),
                flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits),
                flow.nn.softmax_cross_entropy_with_logits(probs, logits),
                flow.nn.sigmoid_cross_entropy_with_logits(probs, logits))

    x, bias, last = _x((2, 3, 4)), _x((3,), seed=1), _x((4,), seed=2)
    labels = np.array([1, 3], np.int32)
    probs, logits = _softmax(_x((2, 4), seed=3), 1), _x((2, 4), seed=4)
    log_softmax = np.log(_softmax(logits, 1))
    want = (_softmax(x, -1), _softmax(x, 1), x + bias[None, :, None], x + last, -log_softmax[[0, 1], labels],
            -(probs * log_softmax).sum(axis=1),
            np.maximum(logits, 0) - logits * probs + np.log1p(np.exp(-np.abs(logits))))
    for index, (g, w) in enumerate(zip(job(x, bias, last, labels, probs, logits), want)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=str(index))


def _conv_nchw(x, w, stride, pads, dilation):
    top, bottom, left, right = pads
    x = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    n, c, h, width = x.shape
    o, _, kh, kw = w.shape
    out_h = (h - dilation * (kh - 1) - 1) // stride + 1
    out_w = (width - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, o, out_h, out_w), np.float64)
    for i in range(out_h):
        for j in range(out_w):
            patch = x[:, :, i * stride:i * stride + dilation * (kh - 1) + 1:dilation,
                      j * stride:j * stride + dilation * (kw - 1) + 1:dilation]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out


def _pool_nchw(x, k, stride, pads, reduce, fill):
    top, bottom, left, right = pads
    x = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=np.nan)
    out_h = (x.shape[2] - k) // stride + 1
    out_w = (x.shape[3] - k) // stride + 1
    out = np.zeros(x.shape[:2] + (out_h, out_w))
    for i in range(out_h):
        for j in range(out_w):
            out[:, :, i, j] = reduce(x[:, :, i * stride:i * stride + k, j * stride:j * stride + k], axis=(2, 3))
    return out


def test_image_ops_and_their_padding_forms():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((1, 2, 5, 5)), w: tp.Numpy.Placeholder((3, 2, 3, 3)),
            mean: tp.Numpy.Placeholder((2,)), var: tp.Numpy.Placeholder((2,))) -> Tuple[(tp.Numpy,) * 8]:
        nhwc = flow.transpose(x, perm=[0, 2, 3, 1])
        return (flow.nn.conv2d(x, w, strides=2, padding="SAME"),
                flow.nn.conv2d(x, w, strides=1, padding=((0, 0), (0, 0), (1, 0), (0, 1))),
                flow.nn.conv2d(x, w, strides=1, padding="VALID", dilations=2),
                flow.nn.conv2d(nhwc, flow.transpose(w, perm=[0, 2, 3, 1]), strides=1, padding="VALID", data_format="NHWC"),
                flow.nn.max_pool2d(x, ksize=2, strides=2, padding="VALID"),
                flow.nn.max_pool2d(x, ksize=2, strides=2, padding="VALID", ceil_mode=True),
                flow.nn.avg_pool2d(x, ksize=3, strides=1, padding=1),
                flow.nn.batch_normalization(x, mean, var, None, None, variance_epsilon=1e-3, axis=1))

    x, w = _x((1, 2, 5, 5)), _x((3, 2, 3, 3), seed=1)
    mean, var = _x((2,), seed=2), _x((2,), seed=3, low=0.5, high=1.5)
    got = job(x, w, mean, var)
    want = (_conv_nchw(x, w, 2, (1, 1, 1, 1), 1), _conv_nchw(x, w, 1, (1, 0, 0, 1), 1), _conv_nchw(x, w, 1, (0,) * 4, 2),
            _conv_nchw(x, w, 1, (0,) * 4, 1).transpose(0, 2, 3, 1), _pool_nchw(x, 2, 2, (0,) * 4, np.max, None),
            _pool_nchw(x, 2, 2, (0, 1, 0, 1), np.nanmax, None), _pool_nchw(x, 3, 1, (1,) * 4, np.nanmean, None),
            (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-3))
    assert len(got) == len(want)
    for index, (g, w_) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w_, rtol=1e-4, atol=1e-5, err_msg=str(index))


def test_a_distribute_hint_changes_no_value():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> Tuple[tp.Numpy, tp.Numpy]:
        return x.with_distribute(flow.distribute.split(0)), x.with_gradient_distribute(flow.distribute.broadcast())

    x = _x((4, 3))
    for got in job(x):
        np.testing.assert_array_equal(got, x)


def test_a_wrapper_given_a_bad_attribute_names_it():
    with pytest.raises(ValueError, match=r"flow.nn.conv2d: padding must be 'SAME', 'VALID' or explicit pads, got 'FULL'"):
        @flow.global_function()
        def job(x: tp.Numpy.Placeholder((1, 2, 5, 5)), w: tp.Numpy.Placeholder((3, 2, 3, 3))) -> tp.Numpy:
            return flow.nn.conv2d(x, w, strides=1, padding="FULL")

        job(_x((1, 2, 5, 5)), _x((3, 2, 3, 3)))


def test_slices_as_python_slices():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 5, 3))) -> Tuple[(tp.Numpy,) * 5]:
        return (flow.slice_v2(x, [(1, None, 2), (None, None, -1)]),
                flow.slice_v2(x, [(-3, -1, None), (4, 0, -2), (0, 10, 1)]),
                flow.slice(x, [1, None, -2], [2, -1, 1]), flow.slice_v2(x, [(3, 1, 1)]),
                flow.slice_v2(flow.cast(x, flow.int64), [(None, None, -3)]))

    x = np.arange(60, dtype=np.float32).reshape(4, 5, 3)
    got = job(x)
    want = (x[1::2, ::-1], x[-3:-1, 4:0:-2, 0:10], x[1:3, :, -2:-1], x[3:1], x[::-3].astype(np.int64))
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_a_bad_slice_names_the_argument():
    with pytest.raises(ValueError, match=r"flow.slice_v2: slice_tup_list\[1\] has step 0"):
        @flow.global_function()
        def job(x: tp.Numpy.Placeholder((4, 5))) -> tp.Numpy:
            return flow.slice_v2(x, [(None, None, None), (0, 2, 0)])

        job(np.zeros((4, 5), np.float32))


def test_mod_is_floor_modulo_for_floats_and_integers():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3)), y: tp.Numpy.Placeholder((3,)),
            i: tp.Numpy.Placeholder((4,), dtype=flow.int32)) -> Tuple[(tp.Numpy,) * 5]:
        return x % y, flow.math.mod(x, 0.75), 5.0 % y, i % 3, flow.math.mod(i, -3)

    x = np.array([[2.5, -2.5, 7.0], [-0.5, 4.25, -6.0]], np.float32)
    y = np.array([2.0, 1.5, -4.0], np.float32)
    i = np.array([7, -7, 0, 5], np.int32)
    got = job(x, y, i)
    want = (np.mod(x, y), np.mod(x, np.float32(0.75)), np.mod(np.float32(5.0), y), np.mod(i, 3), np.mod(i, -3))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_integer_mod_by_zero_fails_the_call():
    @flow.global_function()
    def job(i: tp.Numpy.Placeholder((2,), dtype=flow.int32), j: tp.Numpy.Placeholder((2,), dtype=flow.int32)) -> tp.Numpy:
        return i % j

    with pytest.raises(Exception, match=r"\[mod\] integer modulo by zero"):
        job(np.array([1, 2], np.int32), np.array([1, 0], np.int32))
    np.testing.assert_array_equal(job(np.array([5, -5], np.int32), np.array([3, 3], np.int32)), [2, 1])


def test_docs_python_md_lists_every_function_of_each_module():
    import pathlib
    import re

    from weir import advanced, data, experimental, image, layers, losses, math, nn, ops, quantization, random
    from weir.data import ofrecord
    from weir.keras import activations

    section = pathlib.Path(__file__).resolve().parents[2].joinpath("docs", "python.md").read_text()
    section = section.split("## The API", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`([A-Za-z_0-9]+)`", section))
    for module in (ops, math, nn, layers, losses, data, image, random, ofrecord, activations, experimental, quantization,
                   advanced):
        missing = sorted(set(module.__all__) - listed)
        assert not missing, f"docs/python.md's API section does not list {module.__name__}: {missing}"
