"""Dynamic shapes as OneFlow 0.3 has them: a mirrored placeholder (tp.ListNumpy, tp.ListListNumpy)
takes arrays no larger than its declared shape, and the job's ops compute on the actual sizes. Weir
compiles the job again for each new shape (kept for later calls); variables are shared."""

from typing import Tuple

import numpy as np
import pytest
import weir as flow
import weir.typing as tp
from weir import _session


def _variants(job):
    return _session.default_session().variants[job]


def _mirrored():
    config = flow.FunctionConfig()
    config.default_logical_view(flow.scope.mirrored_view())
    return config


def test_ops_see_the_actual_shape_and_calls_of_each_size_alternate():
    @flow.global_function(function_config=_mirrored())
    def job(x: tp.ListNumpy.Placeholder((10, 4))) -> Tuple[tp.ListNumpy, tp.ListNumpy, tp.ListNumpy]:
        return flow.math.reduce_sum(x * 2, axis=0), flow.reshape(x, (-1,)), flow.math.reduce_mean(x)

    rng = np.random.default_rng(0)
    for rows in (10, 3, 7, 3, 10, 1):
        x = rng.random((rows, 4), dtype=np.float32)
        total, flat, mean = job([x])
        np.testing.assert_allclose(total[0], (x * 2).sum(0), rtol=1e-6)
        assert flat[0].shape == (rows * 4,)
        np.testing.assert_allclose(mean[0], x.mean(), rtol=1e-6)
    assert len(_variants(job)) == 3  # 3, 7 and 1 rows; 10 is the declared shape


def test_tensor_lists_and_every_axis_may_shrink():
    @flow.global_function(function_config=_mirrored())
    def job(x: tp.ListListNumpy.Placeholder((4, 5, 6))) -> tp.ListListNumpy:
        return flow.transpose(x, perm=[2, 0, 1])

    x = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    (out,) = job([[x]])
    np.testing.assert_array_equal(out[0], x.transpose(2, 0, 1))


def test_a_train_job_on_smaller_batches_updates_the_same_variables():
    @flow.global_function(type="train", function_config=_mirrored())
    def train(x: tp.ListNumpy.Placeholder((8, 3)), y: tp.ListNumpy.Placeholder((8, 1))) -> tp.ListNumpy:
        w = flow.get_variable("w", (3, 1), initializer=flow.zeros_initializer())
        loss = flow.math.reduce_mean(flow.math.square(flow.matmul(x, w) - y))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    rng = np.random.default_rng(1)
    w_true = np.array([[1.0], [-2.0], [0.5]], np.float32)
    w = np.zeros((3, 1))
    for rows in (8, 5, 8, 2, 5):
        x = rng.random((rows, 3), dtype=np.float32)
        y = (x @ w_true).astype(np.float32)
        loss = train([x], [y])[0]
        np.testing.assert_allclose(loss, np.mean((x @ w - y) ** 2), rtol=1e-5)
        w = w - 0.1 * (2.0 / rows) * x.T @ (x @ w - y)  # the same SGD step in numpy
    np.testing.assert_allclose(flow.get_all_variables()["w"].numpy(), w, rtol=1e-5, atol=1e-6)


def test_two_devices_with_the_same_smaller_shape():
    flow.config.cpu_device_num(2)

    @flow.global_function(function_config=_mirrored())
    def job(x: tp.ListNumpy.Placeholder((6, 2))) -> tp.ListNumpy:
        return flow.math.reduce_sum(x, axis=1)

    a, b = np.ones((4, 2), np.float32), np.full((4, 2), 2, np.float32)
    out = job([a, b])
    np.testing.assert_array_equal(out[0], [2] * 4)
    np.testing.assert_array_equal(out[1], [4] * 4)
    with pytest.raises(NotImplementedError, match=r"argument 'x' have different shapes \(\(4, 2\), \(3, 2\)\)"):
        job([a, b[:3]])


def test_larger_arrays_and_consistent_placeholders_are_refused():
    @flow.global_function(function_config=_mirrored())
    def job(x: tp.ListNumpy.Placeholder((5, 2)), z: tp.Numpy.Placeholder((5, 2))) -> tp.ListNumpy:
        return x + z

    ones = np.ones((5, 2), np.float32)
    with pytest.raises(ValueError, match=r"argument 'x'\[0\] has shape \(6, 2\), but its placeholder takes arrays "
                                         r"of 2 axes no larger than \(5, 2\)"):
        job([np.ones((6, 2), np.float32)], ones)
    with pytest.raises(ValueError, match=r"no larger than \(5, 2\)"):
        job([np.ones((5,), np.float32)], ones)
    with pytest.raises(ValueError, match=r"argument 'z' has shape \(4, 2\), but its placeholder expects shape \(5, 2\)"):
        job([ones], ones[:4])


def test_a_shape_the_body_cannot_take_fails_that_call_only():
    @flow.global_function(function_config=_mirrored())
    def job(x: tp.ListNumpy.Placeholder((4, 3))) -> tp.ListNumpy:
        return flow.reshape(x, (2, 6))  # only the declared size reshapes to (2, 6)

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(job([x])[0], x.reshape(2, 6))
    with pytest.raises(Exception, match=r"job function 'job' .*does not compile"):
        job([x[:3]])
    np.testing.assert_array_equal(job([x])[0], x.reshape(2, 6))


def test_old_shapes_are_released_beyond_the_bound(monkeypatch):
    monkeypatch.setattr("weir._function._MAX_VARIANTS", 3)

    @flow.global_function(function_config=_mirrored())
    def job(x: tp.ListNumpy.Placeholder((16,))) -> tp.ListNumpy:
        return x + 1

    for size in (1, 2, 3, 4, 5, 2):
        np.testing.assert_array_equal(job([np.zeros(size, np.float32)])[0], np.ones(size))
    assert [dict(key)["x"] for key in _variants(job)] == [(4,), (5,), (2,)]


def test_declared_shapes_that_do_not_compile_while_smaller_ones_do():
    # OneFlow's max_dim_size bounds the joined axis of the actual inputs: 2 + 3 rows fit in 6, the
    # declared 4 + 4 would not, so only calls with smaller arrays compile (OneFlow's own concat test).
    @flow.global_function(function_config=_mirrored())
    def join(a: tp.ListNumpy.Placeholder((4, 2)), b: tp.ListNumpy.Placeholder((4, 2))) -> tp.ListNumpy:
        return flow.concat([a, b], axis=0, max_dim_size=6)

    a, b = np.ones((2, 2), np.float32), np.zeros((3, 2), np.float32)
    np.testing.assert_array_equal(join([a], [b])[0], np.concatenate([a, b]))
    with pytest.raises(ValueError, match=r"max_dim_size must be at least the joined axis's length 8, got 6"):
        join([np.ones((4, 2), np.float32)], [np.ones((4, 2), np.float32)])

    # in_top_k's rows must agree, which the declared (15, 10) and (20,) do not; the calls' do.
    @flow.global_function(function_config=_mirrored())
    def top(targets: tp.ListNumpy.Placeholder((20,), dtype=flow.int32),
            predictions: tp.ListNumpy.Placeholder((15, 10))) -> tp.ListNumpy:
        return flow.math.in_top_k(targets, predictions, 1)

    predictions = np.eye(10, dtype=np.float32)[:4]
    np.testing.assert_array_equal(top([np.array([0, 1, 0, 3], np.int32)], [predictions])[0], [1, 1, 0, 1])
