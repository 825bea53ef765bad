"""Eager mode (flow.enable_eager_execution, OneFlow's): a job function's body runs at each call, each
op as it is written (a one-op job: compiled, run, released), so blobs have values inside the body;
predict functions return those values, train functions then run the step they built once."""

import time
from typing import Tuple

import numpy as np
import pytest

import weir as flow
import weir.typing as tp


def test_eager_mode_is_off_by_default_and_switches():
    assert flow.eager_execution_enabled() is False
    flow.enable_eager_execution()
    assert flow.eager_execution_enabled() is True
    flow.enable_eager_execution(False)
    assert flow.eager_execution_enabled() is False
    with pytest.raises(ValueError, match=r"flow.enable_eager_execution: expected True or False, got 'yes'"):
        flow.enable_eager_execution("yes")


def test_ops_run_as_written_so_python_reads_their_values_and_branches_on_them():
    flow.enable_eager_execution(True)
    seen = []

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3))) -> Tuple[tp.Numpy, tp.Numpy]:
        y = flow.math.relu(x - 1.0)
        seen.append(y.numpy())
        if y.numpy().sum() > 5:  # data-dependent control flow: the body runs at every call
            y = y * 10.0
        return y, flow.math.reduce_sum(y, axis=1)

    small = np.array([[1, 2, 3], [0, 2, 1]], np.float32)
    big = np.array([[1, 2, 3], [0, 5, 1]], np.float32)
    y, total = job(small)
    np.testing.assert_array_equal(seen[0], [[0, 1, 2], [0, 1, 0]])
    np.testing.assert_array_equal(y, [[0, 1, 2], [0, 1, 0]])
    np.testing.assert_array_equal(total, [3, 1])
    y, total = job(big)
    np.testing.assert_array_equal(y, [[0, 10, 20], [0, 40, 0]])
    np.testing.assert_array_equal(total, [30, 40])


def _train(steps):
    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((8, 3)), labels: tp.Numpy.Placeholder((8,), dtype=flow.int32)) -> tp.Numpy:
        hidden = flow.layers.dense(x, 6, activation=flow.math.tanh, name="hidden",
                                   kernel_initializer=flow.random_normal_initializer(seed=1))
        logits = flow.layers.dense(hidden, 4, name="out", kernel_initializer=flow.random_normal_initializer(seed=2))
        loss = flow.math.reduce_mean(flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
        flow.optimizer.Adam(flow.optimizer.PiecewiseConstantScheduler([], [0.05])).minimize(loss)
        return loss

    rng = np.random.default_rng(3)
    x = rng.normal(size=(8, 3)).astype(np.float32)
    labels = rng.integers(0, 4, 8).astype(np.int32)
    losses = [float(train(x, labels)) for _ in range(steps)]
    return losses, {name: value.numpy() for name, value in flow.get_all_variables().items()}


def test_a_train_function_trains_eagerly_as_it_does_compiled():
    lazy_losses, lazy_variables = _train(5)
    flow.clear_default_session()
    flow.enable_eager_execution(True)
    eager_losses, eager_variables = _train(5)
    np.testing.assert_allclose(eager_losses, lazy_losses, rtol=1e-6)
    assert eager_losses[-1] < eager_losses[0]
    assert eager_variables.keys() == lazy_variables.keys()
    for name, value in lazy_variables.items():
        np.testing.assert_allclose(eager_variables[name], value, rtol=1e-5, atol=1e-7, err_msg=name)


def test_watches_see_values_at_once_and_gradients_in_the_step():
    flow.enable_eager_execution(True)
    values, grads = [], []

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(3,), initializer=flow.constant_initializer(2.0))
        y = x * w
        flow.watch(y, values.append)
        assert len(values) == 1  # called as the watch is written, in the body
        flow.watch_diff(w, grads.append)
        loss = flow.math.reduce_sum(y * y)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(loss)
        return loss

    x = np.array([1.0, 2.0, 3.0], np.float32)
    assert float(train(x)) == pytest.approx(4 * 14)
    np.testing.assert_array_equal(values[0], 2 * x)
    np.testing.assert_allclose(grads[0], 2 * (2 * x) * x)  # d sum((x w)^2) / dw


def test_variables_are_shared_with_compiled_jobs_and_assign_writes_them():
    flow.enable_eager_execution(True)

    @flow.global_function()
    def bump(step: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        v = flow.get_variable("v", shape=(2,), initializer=flow.ones_initializer())
        before = flow.identity(v)  # runs now: the value before the assign
        flow.assign(v, v + step)
        return before

    np.testing.assert_array_equal(bump(np.array([1, 2], np.float32)), [1, 1])
    np.testing.assert_array_equal(bump(np.array([1, 2], np.float32)), [2, 3])
    flow.enable_eager_execution(False)

    @flow.global_function()
    def read() -> tp.Numpy:
        return flow.get_variable("v", shape=(2,), initializer=flow.ones_initializer())

    np.testing.assert_array_equal(read(), [3, 5])


def test_an_op_that_fails_raises_at_its_line_and_the_session_goes_on():
    flow.enable_eager_execution(True)
    reached = []

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((3,)), i: tp.Numpy.Placeholder((2,), dtype=flow.int32)) -> tp.Numpy:
        picked = flow.gather(x, i)
        reached.append(True)  # after the gather: not reached when it fails
        return picked

    with pytest.raises(Exception, match=r"index 7"):
        job(np.arange(3, dtype=np.float32), np.array([0, 7], np.int32))
    assert not reached
    np.testing.assert_array_equal(job(np.arange(3, dtype=np.float32), np.array([2, 0], np.int32)), [2, 0])


def test_callback_and_future_results_and_what_eager_mode_refuses():
    flow.enable_eager_execution(True)

    @flow.global_function()
    def later(x: tp.Numpy.Placeholder((2,))) -> tp.Callback[tp.Numpy]:
        return x * 2.0

    got = []
    later(np.ones(2, np.float32))(got.append)
    np.testing.assert_array_equal(got[0], [2, 2])

    config = flow.FunctionConfig()
    config.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(function_config=config)
    def mirrored(x: tp.ListNumpy.Placeholder((4,))) -> tp.ListNumpy:
        y = x * 2.0
        np.testing.assert_array_equal(y.numpy(0), [2, 4, 6])  # its array's 3 elements: a dynamic blob
        return y

    np.testing.assert_array_equal(mirrored([np.array([1, 2, 3], np.float32)])[0], [2, 4, 6])
    flow.clear_default_session()
    flow.config.cpu_device_num(2)
    with pytest.raises(NotImplementedError, match=r"mirrored: eager mode runs mirrored-view job functions placed on "
                                                  r"one device; this one is placed on 2"):
        mirrored([np.ones(4, np.float32)] * 2)
    flow.enable_eager_execution(False)

    @flow.global_function()
    def lazy(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        return flow.math.relu(x).numpy()

    with pytest.raises(Exception, match=r"blobs have values only in eager mode"):
        lazy(np.ones(2, np.float32))


def test_what_an_op_costs_eagerly():
    # Each op is a job of its own: compiled, called once and released. Printed, for docs/python.md.
    flow.enable_eager_execution(True)

    @flow.global_function()
    def chain(x: tp.Numpy.Placeholder((4,))) -> tp.Numpy:
        for _ in range(20):
            x = flow.math.tanh(x)
        return x

    chain(np.ones(4, np.float32))
    start = time.perf_counter()
    result = chain(np.ones(4, np.float32))
    per_op = (time.perf_counter() - start) / 20
    expected = np.ones(4, np.float32)
    for _ in range(20):
        expected = np.tanh(expected)
    np.testing.assert_allclose(result, expected, rtol=1e-6)
    print(f"eager: {per_op * 1e3:.2f} ms an op")


def test_a_compiled_job_that_only_assigns_runs():
    # Regression: a predict job whose body only assigned (returning None) was taken for an empty body
    # and never ran; the variable did not even exist.
    @flow.global_function()
    def bump(step: tp.Numpy.Placeholder((2,))) -> None:
        v = flow.get_variable("v", shape=(2,), initializer=flow.ones_initializer())
        flow.assign(v, v + step)

    bump(np.array([1, 2], np.float32))
    bump(np.array([1, 2], np.float32))
    np.testing.assert_array_equal(flow.get_all_variables()["v"].numpy(), [3, 5])
