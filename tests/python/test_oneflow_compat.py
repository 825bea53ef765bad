"""Behaviour OneFlow's own op tests rely on: names, reductions over no axis, grouped NHWC convolutions
on the CPU, option checks and the module-level queries (each was a wrong result or a refusal that
OneFlow does not make); int8, the comparisons, reverse, constant_like, squared_difference and
broadcast_to_compatible_with, gather and unsorted_segment_sum (each was missing)."""

import math
from typing import List, Tuple

import numpy as np
import pytest

import weir as flow
import weir.typing as tp


@pytest.fixture(autouse=True)
def _fresh_session():
    flow.clear_default_session()
    yield
    flow.clear_default_session()


def test_a_parameter_may_share_its_name_with_a_variable():
    # OneFlow names placeholder ops Input_<n>, so the parameter's name is free for the body.
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        v = flow.get_variable("x", shape=(3,), dtype=flow.float, initializer=flow.constant_initializer(2.0))
        return x + v

    np.testing.assert_array_equal(job(np.array([1, 2, 3], np.float32)), [3, 4, 5])
    assert sorted(flow.get_all_variables()) == ["x"]


def test_op_names_in_the_body_stay_unique():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        v = flow.get_variable("x", shape=(3,), dtype=flow.float, initializer=flow.zeros_initializer())
        return flow.math.relu(x + v, name="x")

    with pytest.raises(ValueError, match="op name 'x' is already used"):
        job(np.ones(3, np.float32))


@pytest.mark.parametrize("reduce", ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min"])
def test_a_reduction_over_an_empty_axis_list_returns_its_input(reduce):
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return getattr(flow.math, reduce)(x, axis=[])

    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(job(data), data)


def _conv_nhwc_reference(x, w, groups):
    """SAME padding, stride 1: x (N,H,W,C), w (out,kh,kw,C/groups)."""
    n, h, wd, c = x.shape
    out, kh, kw, cg = w.shape
    pad_h, pad_w = (kh - 1) // 2, (kw - 1) // 2
    padded = np.pad(x, ((0, 0), (pad_h, kh - 1 - pad_h), (pad_w, kw - 1 - pad_w), (0, 0)))
    y = np.zeros((n, h, wd, out), np.float64)
    per_group = out // groups
    for o in range(out):
        first = (o // per_group) * cg
        for i in range(h):
            for j in range(wd):
                y[:, i, j, o] = np.tensordot(padded[:, i:i + kh, j:j + kw, first:first + cg], w[o], axes=3)
    return y


def test_grouped_nhwc_convolutions_run_on_the_cpu():
    x = np.random.default_rng(0).standard_normal((2, 5, 5, 8)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((6, 3, 3, 4)).astype(np.float32)

    @flow.global_function()
    def job(images: tp.Numpy.Placeholder((2, 5, 5, 8)), weight: tp.Numpy.Placeholder((6, 3, 3, 4))) -> tp.Numpy:
        return flow.nn.conv2d(images, weight, strides=1, padding="SAME", data_format="NHWC", groups=2)

    np.testing.assert_allclose(job(x, w), _conv_nhwc_reference(x, w, 2), rtol=1e-4, atol=1e-4)


def test_rmsprop_accepts_epsilon_zero():
    @flow.global_function(type="train")
    def job() -> tp.Numpy:
        w = flow.get_variable("w", shape=(3,), dtype=flow.float, initializer=flow.constant_initializer(1.0))
        loss = flow.math.reduce_sum(w * w)
        flow.optimizer.RMSProp(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), epsilon=0).minimize(loss)
        return loss

    assert job() == pytest.approx(3.0)
    w = flow.get_all_variables()["w"].numpy()
    # One step: mean_square = 0.01 * g^2, so the step is lr * g / sqrt(0.01 g^2) = 1.
    np.testing.assert_allclose(w, [0.0, 0.0, 0.0], atol=1e-5)


def test_concat_checks_max_dim_size():
    @flow.global_function()
    def fits(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.concat([x, x], axis=1, max_dim_size=6)

    assert fits(np.ones((2, 3), np.float32)).shape == (2, 6)

    flow.clear_default_session()

    @flow.global_function()
    def too_long(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.concat([x, x], axis=-1, max_dim_size=5)

    with pytest.raises(ValueError, match="max_dim_size must be at least the joined axis's length 6, got 5"):
        too_long(np.ones((2, 3), np.float32))


def test_add_loss_outside_a_job_is_not_implemented():
    with pytest.raises(NotImplementedError, match="inside a job function"):
        flow.losses.add_loss(None)


def test_function_config_knows_oneflows_options(capsys):
    config = flow.FunctionConfig()
    with pytest.raises(AttributeError, match="has no option 'no_such_option'"):
        config.no_such_option(True)
    with pytest.raises(AttributeError, match="has no option 'train.no_such_rate'"):
        config.train.no_such_rate(0.1)
    config.cudnn_conv_heuristic_search_algo(False)
    config.cudnn_conv_heuristic_search_algo(True)
    notices = capsys.readouterr().err
    assert notices.count("FunctionConfig.cudnn_conv_heuristic_search_algo") == 1
    assert "has no effect in Weir" in notices
    assert config.flags["cudnn_conv_heuristic_search_algo"] is True


def test_int8_is_stored_moved_cast_and_returned():
    data = np.array([[-128, -1, 0], [1, 64, 127]], np.int8)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3), dtype=flow.int8)) -> tp.Numpy:
        joined = flow.concat([flow.transpose(x, perm=[1, 0]), flow.reshape(x, (3, 2))], axis=1)  # (3, 4)
        return flow.slice_v2(joined, [(None, None, -1), (1, 3, 1)])

    out = job(data)
    assert out.dtype == np.int8
    expected = np.concatenate([data.T, data.reshape(3, 2)], axis=1)[::-1, 1:3]
    np.testing.assert_array_equal(out, expected)

    flow.clear_default_session()

    @flow.global_function()
    def casts(x: tp.Numpy.Placeholder((4,))) -> tp.Numpy:
        return flow.cast(flow.cast(x, flow.int8), flow.float32)

    # Float to int8 truncates toward zero and saturates, as every float-to-integer cast does here.
    np.testing.assert_array_equal(casts(np.array([1.7, -2.9, 300.0, -300.0], np.float32)), [1, -2, 127, -128])


def test_an_int8_variable_is_saved_and_loaded(tmp_path):
    @flow.global_function()
    def job() -> tp.Numpy:
        return flow.get_variable("codes", shape=(3,), dtype=flow.int8, initializer=flow.constant_initializer(-5))

    np.testing.assert_array_equal(job(), np.full(3, -5, np.int8))
    flow.checkpoint.save(str(tmp_path / "model"))
    flow.clear_default_session()

    @flow.global_function()
    def again() -> tp.Numpy:
        return flow.get_variable("codes", shape=(3,), dtype=flow.int8, initializer=flow.zeros_initializer())

    flow.load_variables(flow.checkpoint.get(str(tmp_path / "model")))
    out = again()
    assert out.dtype == np.int8
    np.testing.assert_array_equal(out, np.full(3, -5, np.int8))


def test_comparisons_build_int8_ops_with_broadcasting():
    a = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    b = np.array([2, 5, 3], np.float32)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3)), y: tp.Numpy.Placeholder((3,))) -> List[tp.Numpy]:
        return [x == y, x != y, x > y, x >= y, x < y, x <= y, 3 < x, x == 2, flow.math.greater(x, y)]

    outs = job(a, b)
    expected = [a == b, a != b, a > b, a >= b, a < b, a <= b, 3 < a, a == 2, a > b]
    for out, want in zip(outs, expected):
        assert out.dtype == np.int8
        np.testing.assert_array_equal(out, want.astype(np.int8))


def test_blobs_stay_hashable_by_identity():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        y = x + 1
        seen = {x: "x", y: "y"}
        assert seen[x] == "x" and seen[y] == "y" and y in [y]
        return y

    np.testing.assert_array_equal(job(np.zeros(3, np.float32)), np.ones(3))


def test_reverse_constant_like_and_squared_difference():
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3, 4))) -> List[tp.Numpy]:
        return [flow.reverse(x, 1), flow.reverse(x, [0, -1]), flow.constant_like(x, 2.5),
                flow.constant_like(x, 7, dtype=flow.int32), flow.math.squared_difference(x, flow.reverse(x, 2))]

    flipped, both, filled, ints, squared = job(data)
    np.testing.assert_array_equal(flipped, data[:, ::-1])
    np.testing.assert_array_equal(both, data[::-1, :, ::-1])
    np.testing.assert_array_equal(filled, np.full((2, 3, 4), 2.5, np.float32))
    assert ints.dtype == np.int32 and (ints == 7).all()
    np.testing.assert_array_equal(squared, (data - data[:, :, ::-1]) ** 2)
    with pytest.raises(ValueError, match="axis 3 is out of range"):
        flow.clear_default_session()

        @flow.global_function()
        def bad(x: tp.Numpy.Placeholder((2, 3, 4))) -> tp.Numpy:
            return flow.reverse(x, 3)

        bad(data)


def test_broadcast_to_compatible_with_and_its_gradient():
    @flow.global_function(type="train")
    def job(a: tp.Numpy.Placeholder((4, 1)), b: tp.Numpy.Placeholder((1, 3))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(3,), dtype=flow.float, initializer=flow.constant_initializer(1.0))
        wide = flow.broadcast_to_compatible_with(w, [a, b])  # (4, 3)
        loss = flow.math.reduce_sum(wide * a)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1.0]), momentum=0).minimize(loss)
        return wide

    a = np.arange(1, 5, dtype=np.float32).reshape(4, 1)
    out = job(a, np.zeros((1, 3), np.float32))
    np.testing.assert_array_equal(out, np.ones((4, 3), np.float32))
    # d loss / d w[j] = sum_i a[i] = 10: the broadcast's gradient sums dy back over the rows.
    np.testing.assert_allclose(flow.get_all_variables()["w"].numpy(), np.full(3, 1 - 10.0), rtol=1e-6)


_ACTIVATIONS = {
    # name: (weir call, numpy reference)
    "leaky_relu": (lambda x: flow.nn.leaky_relu(x, alpha=0.1), lambda x: np.where(x > 0, x, 0.1 * x)),
    "elu": (lambda x: flow.nn.elu(x, alpha=0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(x))),
    "relu6": (flow.nn.relu6, lambda x: np.clip(x, 0, 6)),
    "hardtanh": (lambda x: flow.nn.hardtanh(x, -2.0, 2.5), lambda x: np.clip(x, -2.0, 2.5)),
    "hardsigmoid": (flow.nn.hardsigmoid, lambda x: np.clip(x / 6 + 0.5, 0, 1)),
    "hardswish": (flow.nn.hardswish, lambda x: x * np.clip(x / 6 + 0.5, 0, 1)),
    "mish": (flow.nn.mish, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    "swish": (lambda x: flow.nn.swish(x, beta=1.5), lambda x: x / (1 + np.exp(-1.5 * x))),
    "logsoftmax": (lambda x: flow.nn.logsoftmax(x, axis=0),
                   lambda x: x - np.max(x) - np.log(np.sum(np.exp(x - np.max(x))))),
}
# Away from every kink (0, ±3, 6, the hardtanh bounds), so the finite differences are exact enough.
_POINTS = np.array([-7.0, -3.5, -2.6, -1.3, -0.4, 0.3, 1.1, 2.2, 2.9, 3.7, 6.6], np.float64)


@pytest.mark.parametrize("name", sorted(_ACTIVATIONS))
def test_activations_and_their_gradients_match_numpy(name):
    weir_fn, reference = _ACTIVATIONS[name]

    @flow.global_function(type="train")
    def job() -> tp.Numpy:
        w = flow.get_variable("w", shape=_POINTS.shape, dtype=flow.double,
                              initializer=flow.constant_initializer(0.0))
        y = weir_fn(w)
        # The loss weighs each element differently, so a wrong cross-element term would show.
        weights = flow.constant(np.arange(1, _POINTS.size + 1, dtype=np.float64), dtype=flow.double)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1.0]), momentum=0).minimize(
            flow.math.reduce_sum(y * weights))
        return y

    flow.load_variables({"w": _POINTS.copy()})
    np.testing.assert_allclose(job(), reference(_POINTS), rtol=1e-10, atol=1e-12)
    gradient = _POINTS - flow.get_all_variables()["w"].numpy()  # SGD with lr 1
    weights = np.arange(1, _POINTS.size + 1, dtype=np.float64)
    eps = 1e-6
    numeric = np.array([(np.dot(weights, reference(_POINTS + eps * e)) - np.dot(weights, reference(_POINTS - eps * e)))
                        / (2 * eps) for e in np.eye(_POINTS.size)])
    np.testing.assert_allclose(gradient, numeric, rtol=1e-5, atol=1e-7)


def test_range_is_pythons_as_a_blob():
    @flow.global_function()
    def job() -> List[tp.Numpy]:
        return [flow.range(10), flow.range(1, 10, 3, dtype=flow.int64), flow.range(5, 0, -2, dtype=flow.int32)]

    ten, stepped, down = job()
    assert ten.dtype == np.int64 and stepped.dtype == np.int64 and down.dtype == np.int32
    np.testing.assert_array_equal(ten, np.arange(10))
    np.testing.assert_array_equal(stepped, [1, 4, 7])
    np.testing.assert_array_equal(down, [5, 3, 1])
    with pytest.raises(TypeError, match="delta must be an int, got 0.5"):
        flow.range(0, 4, 0.5)
    assert list(range(3)) == [0, 1, 2]  # the builtin is untouched


def test_stack_identity_n_and_broadcast_like():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = -a

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3)), y: tp.Numpy.Placeholder((2, 3)),
            column: tp.Numpy.Placeholder((2,))) -> List[tp.Numpy]:
        like = flow.zeros((2, 4, 3))
        return [flow.stack([x, y]), flow.stack([x, y], axis=-1), *flow.identity_n([x, y]),
                flow.broadcast_like(flow.reshape(column, (2, 1, 1)), like, broadcast_axes=(1, 2)),
                flow.broadcast_like(column, like, broadcast_axes=[-2, -1]), flow.cast_to_static_shape(x),
                flow.ones((2, 2), dtype=flow.int8)]

    column = np.array([5, 7], np.float32)
    first, last, same_x, same_y, wide, wide_too, static, ones = job(a, b, column)
    assert ones.dtype == np.int8 and (ones == 1).all()
    np.testing.assert_array_equal(first, np.stack([a, b]))
    np.testing.assert_array_equal(last, np.stack([a, b], axis=-1))
    np.testing.assert_array_equal(same_x, a)
    np.testing.assert_array_equal(same_y, b)
    np.testing.assert_array_equal(wide, np.broadcast_to(column.reshape(2, 1, 1), (2, 4, 3)))
    np.testing.assert_array_equal(wide_too, wide)
    np.testing.assert_array_equal(static, a)


def test_sparse_cross_entropy_and_its_gradient():
    probabilities = np.array([[0.3, 0.7], [0.4, 0.6], [0.5, 0.5], [0.1, 0.9], [0.2, 0.8]], np.float64)
    labels = np.array([0, 1, 1, 0, 1], np.int32)

    @flow.global_function(type="train")
    def job(label: tp.Numpy.Placeholder((5, 1), dtype=flow.int32)) -> tp.Numpy:
        p = flow.get_variable("p", shape=(5, 2), dtype=flow.double, initializer=flow.constant_initializer(0.5))
        loss = flow.nn.sparse_cross_entropy(labels=label, prediction=p)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1.0]), momentum=0).minimize(loss)
        return loss

    flow.load_variables({"p": probabilities.copy()})
    np.testing.assert_allclose(job(labels.reshape(5, 1)), -np.log(probabilities[np.arange(5), labels]), rtol=1e-12)
    # d/dp of -log p[label] is -1/p there and 0 elsewhere, over the loss's 5 elements.
    expected = probabilities.copy()
    expected[np.arange(5), labels] += 1 / probabilities[np.arange(5), labels] / 5
    np.testing.assert_allclose(flow.get_all_variables()["p"].numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_is_numpys_take(axis):
    params = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    indices = np.array([[1, 0], [1, 1]], np.int64) if axis != 0 else np.array([1, 0, 1], np.int32)

    @flow.global_function()
    def job(p: tp.Numpy.Placeholder((2, 3, 4)),
            i: tp.Numpy.Placeholder(indices.shape, dtype=flow.int64 if axis != 0 else flow.int32)) -> tp.Numpy:
        return flow.gather(p, i, axis=axis)

    np.testing.assert_array_equal(job(params, indices), np.take(params, indices, axis=axis))


def test_gather_refuses_an_index_out_of_range_and_a_bad_batch_dims():
    @flow.global_function()
    def job(p: tp.Numpy.Placeholder((3, 2)), i: tp.Numpy.Placeholder((2,), dtype=flow.int32)) -> tp.Numpy:
        return flow.gather(p, i)

    with pytest.raises(Exception, match=r"\[gather\] index 3 at position 1 is outside \[0, 3\)"):
        job(np.zeros((3, 2), np.float32), np.array([0, 3], np.int32))
    with pytest.raises(ValueError, match="flow.gather: batch_dims must be an int >= 0, got -1"):
        @flow.global_function()
        def batched(p: tp.Numpy.Placeholder((3, 2)), i: tp.Numpy.Placeholder((3, 1), dtype=flow.int32)) -> tp.Numpy:
            return flow.gather(p, i, batch_dims=-1)
        batched(np.zeros((3, 2), np.float32), np.zeros((3, 1), np.int32))


def test_an_embedding_lookup_trains_only_the_rows_it_read():
    table = np.arange(12, dtype=np.float64).reshape(4, 3)
    ids = np.array([2, 0, 2], np.int32)

    @flow.global_function(type="train")
    def job(i: tp.Numpy.Placeholder((3,), dtype=flow.int32)) -> tp.Numpy:
        embedding = flow.get_variable("embedding", shape=(4, 3), dtype=flow.double, initializer=flow.zeros_initializer())
        loss = flow.math.reduce_sum(flow.gather(embedding, i))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum=0).minimize(loss)
        return loss

    flow.load_variables({"embedding": table.copy()})
    assert job(ids) == pytest.approx(table[ids].sum())
    expected = table.copy()
    np.add.at(expected, ids, -0.5)  # row 2 read twice: its gradient is 2
    np.testing.assert_array_equal(flow.get_all_variables()["embedding"].numpy(), expected)


def test_unsorted_segment_sum_and_its_like_form():
    data = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    ids = np.array([2, 0, 2], np.int32)
    expected = np.zeros((2, 4, 2), np.float32)
    for n, segment in enumerate(ids):
        expected[:, segment] += data[:, n]

    @flow.global_function()
    def job(d: tp.Numpy.Placeholder((2, 3, 2)), i: tp.Numpy.Placeholder((3,), dtype=flow.int32),
            like: tp.Numpy.Placeholder((5, 4))) -> List[tp.Numpy]:
        return [flow.math.unsorted_segment_sum(d, i, num_segments=4, axis=1),
                flow.math.unsorted_segment_sum_like(d, i, like, axis=1)]

    plain, like = job(data, ids, np.zeros((5, 4), np.float32))
    np.testing.assert_array_equal(plain, expected)
    np.testing.assert_array_equal(like, expected)


def _train_scaled(optimizer_kwargs, steps=3):
    """Variables after `steps` SGD steps on a fixed batch, with the optimizer's extra keywords."""
    flow.clear_default_session()
    x = np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)

    @flow.global_function(type="train")
    def job(inputs: tp.Numpy.Placeholder((2, 2))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(2, 2), dtype=flow.float, initializer=flow.constant_initializer(0.25))
        loss = flow.math.reduce_mean(flow.math.square(flow.matmul(inputs, w) - 1.0))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0,
                           **optimizer_kwargs).minimize(loss)
        return loss

    for _ in range(steps):
        job(x)
    return flow.get_all_variables()["w"].numpy()


def test_loss_scale_policies_are_accepted_and_a_static_one_scales():
    plain = _train_scaled({})
    # A power-of-two scale and its inverse change no bit in float32.
    np.testing.assert_array_equal(_train_scaled({"loss_scale_policy": flow.optimizer.loss_scale.static_loss_scale(1024.0)}),
                                  plain)
    np.testing.assert_array_equal(_train_scaled({"loss_scale_factor": 1024.0}), plain)
    np.testing.assert_array_equal(_train_scaled({"loss_scale_policy": None}), plain)


def _dynamic_run(make_optimizer, batches, period=2):
    """Trains on each batch in turn under dynamic loss scaling (initial scale 2^10, `period`, multiplier
    2; None: no loss scaling); after each step: the variables, the optimizer's slots and the loss-scale
    variables."""
    flow.clear_default_session()

    @flow.global_function(type="train")
    def job(inputs: tp.Numpy.Placeholder((2, 2))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(2, 2), dtype=flow.float, initializer=flow.constant_initializer(0.25))
        b = flow.get_variable("b", shape=(2,), dtype=flow.float, initializer=flow.constant_initializer(0.5))
        loss = flow.math.reduce_mean(flow.math.square(flow.matmul(inputs, w) + b - 1.0))
        policy = None if period is None else flow.optimizer.loss_scale.dynamic_loss_scale(
            initial_loss_scale=1024.0, increment_period=period, multiplier=2.0)
        make_optimizer(policy).minimize(loss)
        return loss

    states = []
    for batch in batches:
        job(batch)
        states.append({name: value.numpy().copy() for name, value in flow.get_all_variables().items()})
    return states


_FINITE = np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)
_NOT_FINITE = {"inf": np.array([[np.inf, -2.0], [0.5, 3.0]], np.float32),
               "nan": np.array([[1.0, np.nan], [0.5, 3.0]], np.float32)}


@pytest.mark.parametrize("kind", ["inf", "nan"])
@pytest.mark.parametrize("name", ["SGD", "Momentum", "Adam", "RMSProp", "LAMB", "LARS"])
def test_dynamic_loss_scale_skips_a_step_whose_gradients_are_not_finite(name, kind):
    scheduler = flow.optimizer.PiecewiseConstantScheduler([], [0.1])
    make = {"SGD": lambda p: flow.optimizer.SGD(scheduler, momentum=0, loss_scale_policy=p),
            "Momentum": lambda p: flow.optimizer.SGD(scheduler, momentum=0.9, loss_scale_policy=p),
            "Adam": lambda p: flow.optimizer.Adam(scheduler, do_bias_correction=True, loss_scale_policy=p),
            "RMSProp": lambda p: flow.optimizer.RMSProp(scheduler, loss_scale_policy=p),
            "LAMB": lambda p: flow.optimizer.LAMB(scheduler, loss_scale_policy=p),
            "LARS": lambda p: flow.optimizer.LARS(scheduler, lars_coefficient=0.1, loss_scale_policy=p)}[name]
    states = _dynamic_run(make, [_FINITE, _NOT_FINITE[kind], _FINITE, _FINITE, _FINITE], period=2)
    scale, good, skipped = ("System-Train-LossScale-job", "System-Train-LossScaleGoodSteps-job",
                            "System-Train-SkippedSteps-job")
    # The skipped step leaves every variable and slot as it was; only the schedule's variables move.
    schedule = {scale, good, skipped, "System-Train-TrainStep-job"}
    for variable in states[0]:
        if variable not in schedule:
            np.testing.assert_array_equal(states[1][variable], states[0][variable], err_msg=variable)
            assert np.all(np.isfinite(states[4][variable])), variable
    assert not np.array_equal(states[2]["w"], states[1]["w"])  # the next finite step trains
    assert [s[scale][0] for s in states] == [1024.0, 512.0, 512.0, 1024.0, 1024.0]
    assert [s[good][0] for s in states] == [1, 0, 1, 0, 1]
    assert [s[skipped][0] for s in states] == [0, 1, 1, 1, 1]
    assert [s["System-Train-TrainStep-job"][0] for s in states] == [1, 2, 3, 4, 5]


def test_dynamic_loss_scale_trains_finite_steps_as_unscaled_training_does():
    # Power-of-two scales and their inverses change no bit in float32: the same variables, step by step.
    scheduler = flow.optimizer.PiecewiseConstantScheduler([], [0.1])
    make = lambda p: flow.optimizer.Adam(scheduler, loss_scale_policy=p)  # noqa: E731
    scaled = _dynamic_run(make, [_FINITE] * 4, period=1)
    plain = _dynamic_run(make, [_FINITE] * 4, period=None)
    for step in range(4):
        for name in ("w", "b", "w-m", "w-v"):
            np.testing.assert_array_equal(scaled[step][name], plain[step][name], err_msg=name)
    # period 1: the scale doubles after every finite step.
    assert [s["System-Train-LossScale-job"][0] for s in scaled] == [2048.0, 4096.0, 8192.0, 16384.0]


def test_dynamic_loss_scale_is_refused_with_bad_settings_naming_them():
    flow.clear_default_session()

    @flow.global_function(type="train")
    def job(inputs: tp.Numpy.Placeholder((2, 2))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(2, 2), dtype=flow.float, initializer=flow.constant_initializer(0.25))
        loss = flow.math.reduce_mean(flow.matmul(inputs, w))
        policy = flow.optimizer.loss_scale.dynamic_loss_scale(initial_loss_scale=0.5)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), loss_scale_policy=policy).minimize(loss)
        return loss

    with pytest.raises(Exception, match="initial_loss_scale.*>= 1 and finite.*0.5"):
        job(_FINITE)
    flow.clear_default_session()


def test_loss_scale_policies_check_their_arguments():
    loss_scale = flow.optimizer.loss_scale
    scheduler = flow.optimizer.PiecewiseConstantScheduler([], [0.1])
    with pytest.raises(ValueError, match="loss_scale_factor must be > 0, got 0"):
        loss_scale.static_loss_scale(0)
    with pytest.raises(ValueError, match="multiplier must be > 1, got 1"):
        loss_scale.dynamic_loss_scale(multiplier=1)
    with pytest.raises(ValueError, match="increment_period must be >= 1"):
        loss_scale.dynamic_loss_scale(increment_period=0)
    with pytest.raises(ValueError, match="Adam: give loss_scale_factor or loss_scale_policy, not both"):
        flow.optimizer.Adam(scheduler, loss_scale_factor=2.0, loss_scale_policy=loss_scale.static_loss_scale(2.0))
    with pytest.raises(TypeError, match="loss_scale_policy must come from flow.optimizer.loss_scale, got 2.0"):
        flow.optimizer.RMSProp(scheduler, loss_scale_policy=2.0)
    for optimizer in (flow.optimizer.SGD, flow.optimizer.Adam, flow.optimizer.AdamW, flow.optimizer.RMSProp,
                      flow.optimizer.LAMB):
        optimizer(scheduler, loss_scale_policy=loss_scale.static_loss_scale(4.0))


def test_adamw_decays_only_the_variables_its_patterns_pick():
    # BERT's AdamW: weight_decay_excludes=["bias", "LayerNorm", "layer_norm"]. With a zero gradient the
    # update is the decay alone: p -= lr * weight_decay * p.
    @flow.global_function(type="train")
    def job(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        with flow.scope.namespace("encoder"):
            kernel = flow.get_variable("dense_kernel", shape=(2,), dtype=flow.float, initializer=flow.ones_initializer())
            bias = flow.get_variable("dense_bias", shape=(2,), dtype=flow.float, initializer=flow.ones_initializer())
            gamma = flow.get_variable("LayerNorm_gamma", shape=(2,), dtype=flow.float, initializer=flow.ones_initializer())
        loss = flow.math.reduce_sum((kernel + bias + gamma) * x)
        flow.optimizer.AdamW(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), weight_decay=0.25,
                             weight_decay_excludes=["bias", "LayerNorm", "layer_norm"]).minimize(loss)
        return loss

    job(np.zeros(2, np.float32))
    variables = flow.get_all_variables()
    picked = {name: variables[f"encoder-{name}"].numpy()[0] for name in ("dense_kernel", "dense_bias", "LayerNorm_gamma")}
    assert picked == {"dense_kernel": 0.875, "dense_bias": 1.0, "LayerNorm_gamma": 1.0}
    with pytest.raises(ValueError, match="give weight_decay_includes or weight_decay_excludes, not both"):
        flow.optimizer.AdamW(0.1, weight_decay=0.1, weight_decay_includes="a", weight_decay_excludes="b")


def _gelu(x):
    import math
    return np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))(x)


@pytest.mark.parametrize("name,reference,low,high", [
    ("tan", np.tan, -1.2, 1.2), ("asin", np.arcsin, -0.9, 0.9), ("acos", np.arccos, -0.9, 0.9),
    ("atan", np.arctan, -2, 2), ("sinh", np.sinh, -2, 2), ("cosh", np.cosh, -2, 2), ("asinh", np.arcsinh, -2, 2),
    ("acosh", np.arccosh, 1.1, 3), ("atanh", np.arctanh, -0.9, 0.9),
    ("erf", lambda x: np.vectorize(__import__("math").erf)(x), -2, 2),
    ("erfc", lambda x: np.vectorize(__import__("math").erfc)(x), -2, 2),
    ("log_sigmoid", lambda x: -np.logaddexp(0, -x), -5, 5), ("gelu", _gelu, -3, 3),
])
def test_the_unary_math_functions_match_numpy(name, reference, low, high):
    x = np.random.default_rng(0).uniform(low, high, size=(3, 4))

    @flow.global_function()
    def job(v: tp.Numpy.Placeholder((3, 4), dtype=flow.double)) -> tp.Numpy:
        return getattr(flow.math, name)(v)

    np.testing.assert_allclose(job(x), reference(x), rtol=1e-12, atol=1e-15)


def test_reciprocal_no_nan_is_zero_at_zero():
    @flow.global_function()
    def job(v: tp.Numpy.Placeholder((4,))) -> tp.Numpy:
        return flow.math.reciprocal_no_nan(v)

    np.testing.assert_array_equal(job(np.array([-2, 0, 0.5, 4], np.float32)), [-0.5, 0, 2, 0.25])


def test_moments_are_the_mean_and_the_population_variance():
    x = np.random.default_rng(1).normal(size=(2, 3, 4))

    @flow.global_function()
    def job(v: tp.Numpy.Placeholder((2, 3, 4), dtype=flow.double)) -> List[tp.Numpy]:
        kept = flow.nn.moments(v, [1, 2], keepdims=True)
        mean, variance = flow.nn.moments(v, [0, -1])
        return [kept[0], kept[1], mean, variance]

    kept_mean, kept_variance, mean, variance = job(x)
    np.testing.assert_allclose(kept_mean, x.mean(axis=(1, 2), keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(kept_variance, x.var(axis=(1, 2), keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(mean, x.mean(axis=(0, 2)), rtol=1e-12)
    np.testing.assert_allclose(variance, x.var(axis=(0, 2)), rtol=1e-12)


def test_layer_norm_normalizes_each_example_and_trains_gamma_and_beta():
    x = np.random.default_rng(2).normal(size=(4, 3, 5))
    w = np.random.default_rng(3).normal(size=(4, 3, 5))

    @flow.global_function(type="train")
    def job(v: tp.Numpy.Placeholder((4, 3, 5), dtype=flow.double),
            weights: tp.Numpy.Placeholder((4, 3, 5), dtype=flow.double)) -> tp.Numpy:
        y = flow.layers.layer_norm(v, begin_norm_axis=1, begin_params_axis=-1, epsilon=1e-5)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1.0]), momentum=0).minimize(
            flow.math.reduce_sum(y * weights))
        return y

    normalized = (x - x.mean(axis=(1, 2), keepdims=True)) / np.sqrt(x.var(axis=(1, 2), keepdims=True) + 1e-5)
    np.testing.assert_allclose(job(x, w), normalized, rtol=1e-10, atol=1e-12)
    # The loss is a sum (one element): lr 1 moves beta by -sum(w) and gamma by -sum(w * normalized)
    # over every axis but the parameters' last one.
    variables = flow.get_all_variables()
    np.testing.assert_allclose(variables["LayerNorm-beta"].numpy(), -w.sum(axis=(0, 1)), rtol=1e-10)
    np.testing.assert_allclose(variables["LayerNorm-gamma"].numpy(), 1 - (w * normalized).sum(axis=(0, 1)), rtol=1e-10)


def test_matmul_of_rank_3_and_4_multiplies_the_last_two_axes():
    rng = np.random.default_rng(4)
    a3, b3 = rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 5, 3))
    a4, b4 = rng.normal(size=(2, 3, 4, 6)), rng.normal(size=(2, 3, 6, 5))

    @flow.global_function()
    def job(x3: tp.Numpy.Placeholder((2, 4, 3), dtype=flow.double), y3: tp.Numpy.Placeholder((2, 5, 3), dtype=flow.double),
            x4: tp.Numpy.Placeholder((2, 3, 4, 6), dtype=flow.double),
            y4: tp.Numpy.Placeholder((2, 3, 6, 5), dtype=flow.double)) -> List[tp.Numpy]:
        return [flow.matmul(x3, y3, transpose_b=True), flow.matmul(x4, y4, alpha=2.0)]

    three, four = job(a3, b3, a4, b4)
    np.testing.assert_allclose(three, a3 @ b3.transpose(0, 2, 1), rtol=1e-12)
    np.testing.assert_allclose(four, 2.0 * (a4 @ b4), rtol=1e-12)


def test_where_is_numpys_with_broadcasting_and_its_gradient():
    condition = np.array([[1], [0], [1]], np.int8)
    x = np.arange(4, dtype=np.float64)
    y = -np.ones((3, 4))

    @flow.global_function(type="train")
    def job(c: tp.Numpy.Placeholder((3, 1), dtype=flow.int8), a: tp.Numpy.Placeholder((3, 4), dtype=flow.double)) -> tp.Numpy:
        v = flow.get_variable("v", shape=(4,), dtype=flow.double, initializer=flow.constant_initializer(0.0))
        out = flow.where(c, v + flow.constant(x, dtype=flow.double), a)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1.0]), momentum=0).minimize(
            flow.math.reduce_sum(out))
        return out

    np.testing.assert_array_equal(job(condition, y), np.where(condition, x, y))
    # d/dv of the sum: the rows where the condition holds, 2 of them.
    np.testing.assert_array_equal(flow.get_all_variables()["v"].numpy(), -2.0 * np.ones(4))

    @flow.global_function()
    def scalars(c: tp.Numpy.Placeholder((3,), dtype=flow.int32), a: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return flow.where(c, a, 0.5)

    np.testing.assert_array_equal(scalars(np.array([0, 2, 0], np.int32), np.ones(3, np.float32)), [0.5, 1, 0.5])

    @flow.global_function()
    def argwhere(c: tp.Numpy.Placeholder((3,), dtype=flow.int32)) -> tp.Numpy:
        return flow.where(c)  # without x and y: argwhere

    np.testing.assert_array_equal(argwhere(np.array([0, 2, 5], np.int32)), [[1], [2]])


@pytest.mark.parametrize("lazy", [True, False])
def test_lazy_adam_leaves_the_rows_a_batch_did_not_read(lazy):
    @flow.global_function(type="train")
    def job(ids: tp.Numpy.Placeholder((2,), dtype=flow.int32)) -> tp.Numpy:
        table = flow.get_variable("table", shape=(4, 2), dtype=flow.double, initializer=flow.constant_initializer(1.0))
        loss = flow.math.reduce_sum(flow.gather(table, ids))
        optimizer = flow.optimizer.LazyAdam if lazy else flow.optimizer.Adam
        kwargs = {} if lazy else {"do_bias_correction": True}
        optimizer(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), **kwargs).minimize(loss)
        return loss

    job(np.array([0, 1], np.int32))
    first = flow.get_all_variables()["table"].numpy().copy()
    job(np.array([2, 2], np.int32))
    second = flow.get_all_variables()["table"].numpy()
    # Row 2 is read twice in the second step (gradient 2), at train step 1 (t = 2) with no earlier moments.
    # (The learning rate reaches the update as a float32.)
    m, v = 0.1 * 2, 0.001 * 4
    rate = 0.1 * np.sqrt(1 - 0.999 ** 2) / (1 - 0.9 ** 2)
    np.testing.assert_allclose(second[2], 1 - rate * m / (np.sqrt(v) + 1e-8), rtol=1e-7)
    np.testing.assert_array_equal(second[3], [1, 1])
    if lazy:
        np.testing.assert_array_equal(second[:2], first[:2])  # their moments did not move them again
    else:
        assert np.all(second[:2] < first[:2])  # Adam's moments keep moving rows without a gradient


def test_parallel_cast_keeps_the_values_and_lays_them_out_as_asked():
    flow.config.cpu_device_num(2)
    func_config = flow.FunctionConfig()
    func_config.default_logical_view(flow.scope.consistent_view())
    x = np.arange(12, dtype=np.float32).reshape(4, 3)

    @flow.global_function(type="train", function_config=func_config)
    def job(inputs: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        v = flow.get_variable("v", shape=(4, 3), dtype=flow.float, initializer=flow.constant_initializer(1.0))
        y = flow.parallel_cast(inputs * v, distribute=flow.distribute.split(0),
                               gradient_distribute=flow.distribute.broadcast())
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1.0]), momentum=0).minimize(
            flow.math.reduce_sum(y))
        return y

    np.testing.assert_array_equal(job(x), x)
    np.testing.assert_array_equal(flow.get_all_variables()["v"].numpy(), 1 - x)
    with pytest.raises(TypeError, match="flow.parallel_cast: distribute: expected flow.distribute"):
        @flow.global_function()
        def bad(inputs: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
            return flow.parallel_cast(inputs, distribute="split(0)")
        bad(x)


def _loss_job(fn, *shapes):
    """A predict job of two or three float32 placeholders returning fn(*blobs)."""
    flow.clear_default_session()
    if len(shapes) == 2:
        @flow.global_function()
        def pair(a: tp.Numpy.Placeholder(shapes[0]), b: tp.Numpy.Placeholder(shapes[1])) -> tp.Numpy:
            return fn(a, b)
        return pair

    @flow.global_function()
    def triple(a: tp.Numpy.Placeholder(shapes[0]), b: tp.Numpy.Placeholder(shapes[1]),
               c: tp.Numpy.Placeholder(shapes[2])) -> tp.Numpy:
        return fn(a, b, c)
    return triple


def test_the_batch_losses_give_oneflows_documented_values():
    # The values OneFlow's own docs give for these inputs.
    three = np.array([[1, 1, 1], [2, 2, 2], [7, 7, 7]], np.float32)
    fours = np.full((3, 3), 4, np.float32)
    ranks = np.arange(1, 10, dtype=np.float32).reshape(3, 3)
    twos, threes = np.full((3, 3), 2, np.float32), np.full((3, 3), 3, np.float32)
    labels = np.array([[0, 1, 0], [1, 0, 0], [0, 0, 1]], np.float32)
    cases = [
        (lambda x, y: flow.nn.L1Loss(x, y), (three, fours), 2.6666667),
        (lambda x, y: flow.nn.L1Loss(x, y, reduction="sum"), (three, fours), 24.0),
        (lambda x, y: flow.nn.MSELoss(x, y), (three, fours), 7.3333335),
        (lambda x, y: flow.nn.MSELoss(x, y, reduction="sum"), (three, fours), 66.0),
        # (3.3908320 exactly; ln(1 - σ(9)) cancels in float32, on OneFlow too: its docs give 3.390836)
        (lambda x, y: flow.nn.BCELoss(x, y), (ranks, labels), 3.390832),
        (lambda a, b, t: flow.nn.MarginRankingLoss(a, b, t, margin=1.0), (ranks, twos, threes), 0.5555556),
        (lambda a, p, n: flow.nn.TripletMarginLoss(a, p, n, margin=1.0, p=2.0), (ranks, twos, threes), 1.8449262),
    ]
    for fn, inputs, expected in cases:
        job = _loss_job(fn, *(x.shape for x in inputs))
        np.testing.assert_allclose(job(*inputs), expected, rtol=1e-5)
    job = _loss_job(lambda x, y: flow.nn.L1Loss(x, y, reduction="none"), (3, 3), (3, 3))
    np.testing.assert_array_equal(job(three, fours), np.abs(fours - three))
    with pytest.raises(ValueError, match="reduction must be 'none', 'mean' or 'sum', got 'avg'"):
        _loss_job(lambda x, y: flow.nn.MSELoss(x, y, reduction="avg"), (3, 3), (3, 3))(three, fours)
    with pytest.raises(ValueError, match="input and target must have one shape"):
        _loss_job(lambda x, y: flow.nn.L1Loss(x, y), (3, 3), (3, 1))(three, fours[:, :1])


@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), ([0, 2], True), (-1, True)])
def test_the_composite_reductions_match_numpy_and_train(axis, keepdims):
    x = np.random.default_rng(5).normal(size=(2, 3, 4)) * 3
    numpy_axis = tuple(axis) if isinstance(axis, list) else axis

    @flow.global_function()
    def job(v: tp.Numpy.Placeholder((2, 3, 4), dtype=flow.double)) -> List[tp.Numpy]:
        return [flow.math.reduce_variance(v, axis, keepdims), flow.math.reduce_std(v, axis, keepdims),
                flow.math.reduce_euclidean_norm(v, axis, keepdims), flow.math.reduce_logsumexp(v, axis, keepdims)]

    variance, std, norm, logsumexp = job(x)
    np.testing.assert_allclose(variance, np.var(x, axis=numpy_axis, keepdims=keepdims), rtol=1e-12)
    np.testing.assert_allclose(std, np.std(x, axis=numpy_axis, keepdims=keepdims), rtol=1e-12)
    np.testing.assert_allclose(norm, np.sqrt(np.sum(x * x, axis=numpy_axis, keepdims=keepdims)), rtol=1e-12)
    peak = np.max(x, axis=numpy_axis, keepdims=True)
    expected = np.log(np.sum(np.exp(x - peak), axis=numpy_axis, keepdims=True)) + peak
    if not keepdims:
        expected = np.squeeze(expected, axis=numpy_axis) if numpy_axis is not None else expected.reshape(())
    np.testing.assert_allclose(logsumexp, expected, rtol=1e-12)


def test_reduce_logsumexp_neither_overflows_nor_loses_its_gradient():
    @flow.global_function(type="train")
    def job(v: tp.Numpy.Placeholder((3,), dtype=flow.double)) -> tp.Numpy:
        w = flow.get_variable("w", shape=(3,), dtype=flow.double, initializer=flow.zeros_initializer())
        out = flow.math.reduce_logsumexp(v + w)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1.0]), momentum=0).minimize(out)
        return out

    x = np.array([1000.0, 1000.0, 0.0])
    assert job(x) == pytest.approx(1000 + np.log(2))
    # d logsumexp / dx is the softmax: (0.5, 0.5, e^-1000 / 2).
    np.testing.assert_allclose(flow.get_all_variables()["w"].numpy(), [-0.5, -0.5, 0.0], atol=1e-12)


def test_conv2d_transpose_upsamples_as_oneflows_and_trains():
    # OneFlow's docs: a (1, 32, 32, 32) input, a 3x3 kernel, stride 2, SAME -> (1, 32, 64, 64).
    @flow.global_function(type="train")
    def job(x: tp.Numpy.Placeholder((1, 4, 8, 8))) -> tp.Numpy:
        weight = flow.get_variable("deconv-weight", shape=(4, 2, 3, 3), dtype=flow.float,
                                   initializer=flow.random_normal_initializer(stddev=0.1, seed=1))
        out = flow.nn.conv2d_transpose(value=x, filter=weight, output_shape=(1, 2, 16, 16), strides=2, padding="SAME")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(
            flow.math.reduce_mean(flow.math.square(out - 1.0)))
        return out

    x = np.random.default_rng(6).normal(size=(1, 4, 8, 8)).astype(np.float32)
    first = job(x)
    assert first.shape == (1, 2, 16, 16)
    losses = [np.mean((job(x) - 1.0) ** 2) for _ in range(20)]
    assert losses[-1] < np.mean((first - 1.0) ** 2) and losses[-1] < losses[0]
    with pytest.raises(ValueError, match=r"gives height 8, but value \(1, 4, 7, 8\) has 7"):
        @flow.global_function()
        def mismatched(v: tp.Numpy.Placeholder((1, 4, 7, 8)), w: tp.Numpy.Placeholder((4, 2, 3, 3))) -> tp.Numpy:
            return flow.nn.conv2d_transpose(v, w, output_shape=(1, 2, 16, 16), strides=2, padding="SAME")
        mismatched(np.zeros((1, 4, 7, 8), np.float32), np.zeros((4, 2, 3, 3), np.float32))


@pytest.mark.parametrize("value", [0, 1.5, -np.inf])  # -inf: no NaN where 0 meets it (max pooling pads so)
def test_pad_is_numpys_constant_pad_and_its_gradient_is_the_interior(value):
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    weights = np.random.default_rng(7).normal(size=(5, 4))
    paddings = ((1, 2), (0, 1))

    @flow.global_function(type="train")
    def job(w: tp.Numpy.Placeholder((5, 4), dtype=flow.double)) -> tp.Numpy:
        v = flow.get_variable("v", shape=(2, 3), dtype=flow.double, initializer=flow.zeros_initializer())
        out = flow.pad(v + flow.constant(x, dtype=flow.double), paddings, constant_value=value)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1.0]), momentum=0).minimize(
            flow.math.reduce_sum(out * w))
        return out

    np.testing.assert_array_equal(job(weights), np.pad(x, paddings, constant_values=value))
    np.testing.assert_array_equal(flow.get_all_variables()["v"].numpy(), -weights[1:3, 0:3])
    with pytest.raises(ValueError, match=r"flow.pad: paddings must be 2 pairs of non-negative ints"):
        @flow.global_function()
        def bad(u: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
            return flow.pad(u, ((1, 1),))
        bad(np.zeros((2, 3), np.float32))


def _dim_scatter_add(src, dim, index, shape):
    out = np.zeros(shape)
    for position in np.ndindex(*src.shape):
        target = list(position)
        target[dim] = index[position]
        out[tuple(target)] += src[position]
    return out


@pytest.mark.parametrize("input_shape,index_shape,dim,dtype,index_dtype", [
    ((2, 2), (2, 2), 1, np.float32, np.int32),
    ((2, 2), (2, 2), 0, np.float64, np.int64),
    ((8, 3, 2), (4, 3, 2), 0, np.float32, np.int64),
    ((3, 5, 4), (3, 2, 4), -2, np.float64, np.int32),
    ((4, 6), (3, 2), 1, np.float64, np.int32),  # fewer rows than input: take_along_axis on input[:3]
])
def test_dim_gather_is_take_along_axis_and_its_gradient_scatters_back(input_shape, index_shape, dim, dtype, index_dtype):
    rng = np.random.default_rng(7)
    x = rng.random(input_shape).astype(dtype)
    index = rng.integers(0, input_shape[dim], index_shape).astype(index_dtype)
    fdtype = flow.float32 if dtype == np.float32 else flow.float64
    grads = []

    @flow.global_function(type="train")
    def job(p: tp.Numpy.Placeholder(input_shape, dtype=fdtype),
            i: tp.Numpy.Placeholder(index_shape, dtype=flow.int32 if index_dtype == np.int32 else flow.int64)) -> tp.Numpy:
        v = flow.get_variable("v", shape=input_shape, dtype=fdtype, initializer=flow.zeros_initializer())
        x_plus = v + p
        y = flow.dim_gather(x_plus, dim, i)
        flow.watch_diff(x_plus, grads.append)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1e-3]), momentum=0).minimize(y)
        return y

    y = job(x, index)
    sliced = x[tuple(slice(0, n) if d != dim % len(input_shape) else slice(None) for d, n in enumerate(index_shape))]
    np.testing.assert_array_equal(y, np.take_along_axis(sliced, index, dim))
    np.testing.assert_allclose(grads[0], _dim_scatter_add(np.ones(index_shape), dim % len(input_shape), index, input_shape))


def test_dim_gather_refuses_bad_arguments_and_an_index_out_of_range():
    @flow.global_function()
    def job(p: tp.Numpy.Placeholder((2, 3)), i: tp.Numpy.Placeholder((2, 2), dtype=flow.int32)) -> tp.Numpy:
        return flow.dim_gather(p, 1, i, name="picked")

    with pytest.raises(Exception, match=r"\[gather\] index -1 at position 3 is outside \[0, 6\)"):
        job(np.zeros((2, 3), np.float32), np.array([[0, 2], [1, 3]], np.int32))
    with pytest.raises(ValueError, match=r"flow.dim_gather: dim must be an int in \[-2, 2\) for input of shape \(2, 3\), got 2"):
        @flow.global_function()
        def bad_dim(p: tp.Numpy.Placeholder((2, 3)), i: tp.Numpy.Placeholder((2, 2), dtype=flow.int32)) -> tp.Numpy:
            return flow.dim_gather(p, 2, i)
        bad_dim(np.zeros((2, 3), np.float32), np.zeros((2, 2), np.int32))
    with pytest.raises(ValueError, match=r"index must have input's rank 2 .* input \(2, 3\), index \(3, 2\)"):
        @flow.global_function()
        def too_many_rows(p: tp.Numpy.Placeholder((2, 3)), i: tp.Numpy.Placeholder((3, 2), dtype=flow.int32)) -> tp.Numpy:
            return flow.dim_gather(p, 1, i)
        too_many_rows(np.zeros((2, 3), np.float32), np.zeros((3, 2), np.int32))
    with pytest.raises(TypeError, match="flow.dim_gather: index must be int32 or int64, got float32"):
        @flow.global_function()
        def float_index(p: tp.Numpy.Placeholder((2, 3)), i: tp.Numpy.Placeholder((2, 2))) -> tp.Numpy:
            return flow.dim_gather(p, 1, i)
        float_index(np.zeros((2, 3), np.float32), np.zeros((2, 2), np.float32))


def _dim_scatter(src, dim, index, base, adds):
    out = base.astype(np.float64)
    for position in np.ndindex(*index.shape):
        target = list(position)
        target[dim] = index[position]
        out[tuple(target)] = out[tuple(target)] + src[position] if adds else src[position]
    return out


@pytest.mark.parametrize("op,adds,onto_like", [("dim_scatter_add", True, True), ("dim_scatter_update", False, True),
                                               ("dim_scatter_add_like", True, False),
                                               ("dim_scatter_update_like", False, False)])
@pytest.mark.parametrize("input_shape,index_shape,like_shape,dim,dtype", [
    ((2, 2), (2, 2), (2, 2), 1, np.float32),
    ((3, 4), (3, 4), (5, 4), 0, np.float64),
    ((3, 5, 2), (2, 2, 2), (2, 3, 2), -2, np.float32),  # input larger than index: its leading block scatters
    ((2, 3), (2, 3), (2, 4), 1, np.int32),  # an integer scatter between casts: the gradient flows as int32
])
def test_dim_scatter_ops_match_numpy_and_their_gradients_gather_back(op, adds, onto_like, input_shape, index_shape,
                                                                      like_shape, dim, dtype):
    rng = np.random.default_rng(11)
    rank = len(like_shape)
    axis = dim % rank
    src = rng.integers(0, 50, input_shape).astype(np.float32)
    like = rng.integers(0, 50, like_shape).astype(np.float32)
    # Distinct targets along dim per line, so that an update has one writer per place (duplicates: see below).
    index = np.argsort(rng.random(like_shape), axis=axis)
    index = index[tuple(slice(0, n) for n in index_shape)].astype(np.int32)
    fdtype = {np.float32: flow.float32, np.float64: flow.float64, np.int32: flow.float32}[dtype]
    grads = {}

    @flow.global_function(type="train")
    def job(p: tp.Numpy.Placeholder(input_shape, dtype=fdtype), i: tp.Numpy.Placeholder(index_shape, dtype=flow.int32),
            base: tp.Numpy.Placeholder(like_shape, dtype=fdtype)) -> tp.Numpy:
        v = flow.get_variable("v", shape=input_shape, dtype=fdtype, initializer=flow.zeros_initializer())
        w = flow.get_variable("w", shape=like_shape, dtype=fdtype, initializer=flow.zeros_initializer())
        x, b = v + p, w + base
        if dtype == np.int32:
            y = flow.cast(getattr(flow, op)(dim, i, flow.cast(x, flow.int32), flow.cast(b, flow.int32)), flow.float32)
        else:
            y = getattr(flow, op)(dim, i, x, b)
        flow.watch_diff(x, lambda d: grads.setdefault("x", d.numpy()))
        flow.watch_diff(b, lambda d: grads.setdefault("like", d.numpy()))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1e-3]), momentum=0).minimize(y * y)
        return y

    fnp = np.float64 if dtype == np.float64 else np.float32
    y = job(src.astype(fnp), index, like.astype(fnp))
    expected = _dim_scatter(src, axis, index, like if onto_like else np.zeros(like_shape), adds)
    np.testing.assert_allclose(y, expected)
    dy = 2 * expected
    reached = tuple(slice(0, n) for n in index_shape)
    np.testing.assert_allclose(grads["x"][reached], np.take_along_axis(dy, index, axis))
    beyond = np.ones(input_shape, bool)
    beyond[reached] = False
    np.testing.assert_array_equal(grads["x"][beyond], 0)  # input's elements that index does not reach
    if onto_like:  # the base's gradient: dy, but where an update replaced it
        written = _dim_scatter(np.ones(index_shape), axis, index, np.zeros(like_shape), False) > 0
        np.testing.assert_allclose(grads["like"], dy if adds else np.where(written, 0, dy))
    else:
        np.testing.assert_array_equal(grads["like"], np.zeros(like_shape))


def test_dim_scatter_update_lets_the_last_duplicate_win_and_refuses_bad_arguments():
    @flow.global_function()
    def job(p: tp.Numpy.Placeholder((2, 3)), i: tp.Numpy.Placeholder((2, 3), dtype=flow.int64),
            base: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.dim_scatter_update(1, i, p, base)

    src = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = job(src, np.array([[0, 0, 0], [2, 1, 2]], np.int64), np.full((2, 3), -1, np.float32))
    np.testing.assert_array_equal(y, [[2, -1, -1], [-1, 4, 5]])
    with pytest.raises(Exception, match="outside"):
        job(src, np.array([[0, 3, 0], [0, 0, 0]], np.int64), np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"flow.dim_scatter_add_like: dim must be an int in \[-2, 2\) for like of "
                                         r"shape \(2, 3\), got 2"):
        @flow.global_function()
        def bad_dim(p: tp.Numpy.Placeholder((2, 3)), i: tp.Numpy.Placeholder((2, 3), dtype=flow.int32)) -> tp.Numpy:
            return flow.dim_scatter_add_like(2, i, p, p)
        bad_dim(src, np.zeros((2, 3), np.int32))
    with pytest.raises(ValueError, match=r"flow.dim_scatter_add: index must have like's rank 2, .* index \(3, 3\), "
                                         r"input \(2, 3\), like \(2, 3\)"):
        @flow.global_function()
        def too_many_rows(p: tp.Numpy.Placeholder((2, 3)), i: tp.Numpy.Placeholder((3, 3), dtype=flow.int32)) -> tp.Numpy:
            return flow.dim_scatter_add(1, i, p, p)
        too_many_rows(src, np.zeros((3, 3), np.int32))
    with pytest.raises(TypeError, match="flow.dim_scatter_update_like: input is float32 but like is int32"):
        @flow.global_function()
        def mixed(p: tp.Numpy.Placeholder((2, 3)), i: tp.Numpy.Placeholder((2, 3), dtype=flow.int32)) -> tp.Numpy:
            return flow.dim_scatter_update_like(1, i, p, i)
        mixed(src, np.zeros((2, 3), np.int32))


@pytest.mark.parametrize("loss_scale_factor", [None, 4])  # a static scale multiplies the integer seed
def test_an_integer_loss_trains_and_integer_blobs_have_integer_gradients(loss_scale_factor):
    """OneFlow's rule: d loss / d loss is one in the loss's dtype, ops pass integer gradients, and a
    cast turns them back into floating ones on the way to the variables."""
    grads = {}

    @flow.global_function(type="train")
    def job(x: tp.Numpy.Placeholder((2, 3)), mask: tp.Numpy.Placeholder((1, 3), dtype=flow.int8)) -> tp.Numpy:
        v = flow.get_variable("v", shape=(1,), initializer=flow.zeros_initializer())
        xi = flow.cast(x + v, flow.int8)
        out = flow.masked_fill(xi * xi, mask, 7)  # an int8 loss
        flow.watch_diff(xi, lambda d: grads.setdefault("xi", d.numpy()))
        flow.watch_diff(x, lambda d: grads.setdefault("x", d.numpy()))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum=0,
                           loss_scale_factor=loss_scale_factor).minimize(out)
        return out

    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    out = job(x, np.array([[0, 1, 0]], np.int8))
    assert out.dtype == np.int8
    np.testing.assert_array_equal(out, [[1, 7, 9], [16, 7, 36]])
    assert grads["xi"].dtype == np.int8
    scale = loss_scale_factor or 1  # watch_diff sees the scaled gradients, as OneFlow's; updates divide it out
    np.testing.assert_array_equal(grads["xi"], np.array([[2, 0, 6], [8, 0, 12]]) * scale)
    np.testing.assert_array_equal(grads["x"], np.array([[2, 0, 6], [8, 0, 12]]) * scale)
    # SGD moved v by -0.5 * the sum of x's gradient (28), over the loss's 6 elements.
    np.testing.assert_allclose(flow.get_all_variables()["v"].numpy(), [-0.5 * 28 / 6], rtol=1e-6)


def _np_fake_quantize(x, scale, zero_point, bits, scheme, formula):
    if formula == "cambricon":
        step, upper = 2.0 ** scale, 2.0 ** (bits - 1) - 1
        return np.clip(np.rint(x / step), -upper, upper) * step
    if scheme == "symmetric":
        upper = 2.0 ** (bits - 1) - 1
        return np.clip(np.rint(x / scale), -upper, upper) * scale
    return (np.clip(np.rint(x / scale + zero_point), 0, 2.0 ** bits - 1) - zero_point) * scale


@pytest.mark.parametrize("bits", [8, 3])
@pytest.mark.parametrize("scheme,formula,per_layer", [("symmetric", "google", True), ("symmetric", "google", False),
                                                      ("affine", "google", True), ("affine", "google", False),
                                                      ("symmetric", "cambricon", True), ("affine", "cambricon", False)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_min_max_observer_and_fake_quantization_match_numpy_and_pass_the_gradient_straight_through(
        bits, scheme, formula, per_layer, dtype):
    rng = np.random.default_rng(3)
    x = (rng.random((6, 5, 4)) - 0.4).astype(dtype)
    fdtype = flow.float32 if dtype == np.float32 else flow.float64
    grads = []

    @flow.global_function(type="train")
    def job(p: tp.Numpy.Placeholder((6, 5, 4), dtype=fdtype)) -> tp.Numpy:
        v = flow.get_variable("v", shape=(6, 5, 4), dtype=fdtype, initializer=flow.zeros_initializer())
        x_plus = v + p
        scale, zero_point = flow.quantization.min_max_observer(x_plus, bits, scheme, formula, per_layer)
        out = flow.quantization.fake_quantization(x_plus, scale, zero_point, bits, scheme, formula)
        flow.watch_diff(x_plus, grads.append)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1e-3]), momentum=0).minimize(out * x_plus)
        return flow.concat([flow.reshape(out, [-1]), flow.reshape(scale, [-1]), flow.reshape(zero_point, [-1])], 0)

    result = job(x)
    channels = 1 if per_layer or formula == "cambricon" else 6
    rows = x.reshape(channels, -1)
    if formula == "cambricon":
        scale, zero_point = np.floor(np.log2(np.abs(x).max())) - (bits - 2), np.zeros(1)
        scale = np.array([scale])
    elif scheme == "symmetric":
        scale, zero_point = np.abs(rows).max(1) / (2.0 ** (bits - 1) - 1), np.zeros(channels)
    else:
        scale = (rows.max(1) - rows.min(1)) / (2.0 ** bits - 1)
        zero_point = -rows.min(1) / scale
    out = np.concatenate([_np_fake_quantize(r, s, z, bits, scheme, formula)
                          for r, s, z in zip(rows, scale, zero_point)])
    tolerance = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(result[-2 * channels:], np.concatenate([scale, zero_point]), rtol=tolerance * 10)
    # A value whose x / scale lands within rounding of a half may round the other way in float32.
    assert np.mean(np.abs(result[:x.size] - out)) < 1e-5
    # d sum(q(x) * x) / dx with q' taken as 1: q(x) + x.
    np.testing.assert_allclose(grads[0].reshape(-1), result[:x.size] + x.reshape(-1), rtol=tolerance * 10)


def test_fake_quantization_rounds_half_to_even_and_clamps_to_its_grid():
    # Row 0: scale 0.5, zero point 1; row 1: scale 2, zero point 0.5; cambricon's shift -1: steps of 0.5.
    xs = np.array([[-3, -0.25, 0.75, 2.2], [-9, 1, 3, 7.5]])

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 4), dtype=flow.float64), scale: tp.Numpy.Placeholder((2,), dtype=flow.float64),
            zero_point: tp.Numpy.Placeholder((2,), dtype=flow.float64),
            shift: tp.Numpy.Placeholder((1,), dtype=flow.float64)) -> tp.Numpy:
        fq = flow.quantization.fake_quantization
        return flow.stack([fq(x, scale, zero_point, 3), fq(x, scale, zero_point, 2, "affine"),
                           fq(x, shift, shift, 3, "symmetric", "cambricon")], 0)

    out = job(xs, np.array([0.5, 2]), np.array([1, 0.5]), np.array([-1.0]))
    # 3 bits symmetric: integers in [-3, 3]; x / scale rounded half to even (-0.5 -> -0, 1.5 -> 2).
    np.testing.assert_array_equal(out[0], [[-1.5, -0, 1, 1.5], [-6, 0, 4, 6]])
    # 2 bits affine: round(x / scale + zero point) in [0, 3], minus the zero point, times scale.
    np.testing.assert_array_equal(out[1], [[-0.5, -0.5, 0.5, 1], [-1, 1, 3, 5]])
    # cambricon, 3 bits: steps of 2^-1, integers in [-3, 3].
    np.testing.assert_array_equal(out[2], [[-1.5, -0, 1, 1.5], [-1.5, 1, 1.5, 1.5]])


@pytest.mark.parametrize("scheme,formula", [("symmetric", "google"), ("affine", "google"), ("symmetric", "cambricon")])
def test_moving_average_observer_updates_its_statistics_in_train_jobs_only(scheme, formula):
    rng = np.random.default_rng(5)
    momentum = 0.9

    @flow.global_function(type="train")
    def train(p: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        v = flow.get_variable("v", shape=(4, 3), initializer=flow.zeros_initializer())
        scale, zero_point = flow.quantization.moving_average_min_maxObserver(p, 8, scheme, formula, momentum,
                                                                             name="observer")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1e-3]), momentum=0).minimize(v * p)
        return flow.concat([scale, zero_point], 0)

    @flow.global_function()
    def predict(p: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        scale, zero_point = flow.quantization.moving_average_min_maxObserver(p, 8, scheme, formula, momentum,
                                                                             name="observer")
        return flow.concat([scale, zero_point], 0)

    high = low = 0.0
    for _ in range(3):
        x = (rng.random((4, 3)) - 0.3).astype(np.float32)
        top, bottom = (np.abs(x).max(), np.abs(x).max()) if scheme == "symmetric" else (x.max(), x.min())
        high = top if high == 0 else high * momentum + top * (1 - momentum)
        low = bottom if low == 0 else low * momentum + bottom * (1 - momentum)
        if formula == "cambricon":
            expected = [np.floor(np.log2(high)) - 6, 0]
        elif scheme == "symmetric":
            expected = [high / 127, 0]
        else:
            expected = [(high - low) / 255, -low / ((high - low) / 255)]
        np.testing.assert_allclose(train(x), expected, rtol=1e-5)
    variables = flow.get_all_variables()
    np.testing.assert_allclose(variables["observer-moving_max"].numpy(), [high], rtol=1e-6)
    np.testing.assert_allclose(variables["observer-moving_min"].numpy(), [low], rtol=1e-6)
    # A predict job reads the statistics without moving them.
    np.testing.assert_allclose(predict(np.full((4, 3), 100, np.float32)), expected, rtol=1e-5)
    np.testing.assert_allclose(flow.get_all_variables()["observer-moving_max"].numpy(), [high], rtol=1e-6)


def _qat_config(symmetric=True, per_channel=False, backend="", stop=1000):
    config = flow.FunctionConfig()
    config.enable_qat(True)
    config.qat.symmetric(symmetric)
    config.qat.per_channel_weight_quantization(per_channel)
    if stop is not None:
        config.qat.moving_min_max_stop_update_after_iters(stop)
    config.qat.target_backend(backend)
    return config


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("per_channel", [True, False])
def test_quantization_aware_training_fake_quantizes_what_an_int8_backend_would(symmetric, per_channel):
    # x -> conv2d -> bias_add -> relu -> reshape -> matmul: the first call's moving statistics are the
    # call's own ranges, so the job computes what the same ops with min_max observers compute.
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    scheme = "symmetric" if symmetric else "affine"
    fq = flow.quantization.fake_quantization

    def variables():
        w = flow.get_variable("w", shape=(4, 3, 3, 3), initializer=flow.random_normal_initializer(seed=1))
        b = flow.get_variable("b", shape=(4,), initializer=flow.random_normal_initializer(seed=2))
        d = flow.get_variable("d", shape=(100, 3), initializer=flow.random_normal_initializer(seed=3))
        return w, b, d

    @flow.global_function(type="train", function_config=_qat_config(symmetric, per_channel))
    def qat(p: tp.Numpy.Placeholder((2, 3, 5, 5))) -> tp.Numpy:
        w, b, d = variables()
        y = flow.nn.relu(flow.nn.bias_add(flow.nn.conv2d(p, w, 1, "SAME"), b))
        out = flow.matmul(flow.reshape(y, (2, 100)), d)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(out)
        return out

    @flow.global_function()
    def by_hand(p: tp.Numpy.Placeholder((2, 3, 5, 5))) -> tp.Numpy:
        w, b, d = variables()

        def quantized(blob, per_layer=True):
            scale, zero_point = flow.quantization.min_max_observer(blob, 8, scheme, "google", per_layer)
            return fq(blob, scale, zero_point, 8, scheme), scale

        px, px_scale = quantized(p)
        qw, w_scale = quantized(w, not per_channel)
        conv = flow.nn.conv2d(px, qw, 1, "SAME")
        # The bias on the accumulator's grid: scale = input scale × weight scale, zero point 0.
        qb = fq(b, px_scale * w_scale, flow.zeros_like(w_scale), 8, scheme)
        y = quantized(flow.nn.relu(flow.nn.bias_add(conv, qb)))[0]  # after the conv chain
        out = flow.matmul(flow.reshape(y, (2, 100)), quantized(d, not per_channel)[0])
        return quantized(out)[0]  # after the matmul: the job's output too

    np.testing.assert_allclose(qat(x), by_hand(x), rtol=1e-5, atol=1e-5)
    names = sorted(name for name in flow.get_all_variables() if "fake-quant" in name)
    # Moving statistics for the input, the relu's output and the matmul's; a zero point for the bias.
    assert len([n for n in names if n.endswith("-fake-quant-moving-max")]) == 3, names
    assert len([n for n in names if n.endswith("-fake-quant-zp")]) == 1, names


@pytest.mark.parametrize("backend", ["", "cambricon"])
@pytest.mark.parametrize("use_bias", [True, False])
def test_quantization_aware_training_leaves_ops_under_a_scope_with_it_off(backend, use_bias):
    # OneFlow's own QAT test: conv1 quantized, conv2 built under scope.config(quantization_aware_training=False).
    @flow.global_function(type="train", function_config=_qat_config(backend=backend))
    def train(x: tp.Numpy.Placeholder((2, 3, 4, 5))) -> tp.Numpy:
        y = flow.layers.conv2d(x, 4, 3, 1, "SAME", use_bias=use_bias, name="conv1")
        with flow.experimental.scope.config(quantization_aware_training=False):
            z = flow.layers.conv2d(y, 4, 3, 1, "SAME", use_bias=use_bias, name="conv2")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [5]), momentum=0).minimize(z)
        return z

    assert np.isfinite(train(np.ones((2, 3, 4, 5), np.float32))).all()
    moving = sorted(name[:-len("-fake-quant-observer-fake-quant-moving-max")] for name in flow.get_all_variables()
                    if name.endswith("-fake-quant-moving-max"))
    conv1_out = "conv1-bias_add-out" if use_bias else "conv1-out"
    # Google quantizes conv1's input and what conv1 passes on (conv2 reads it); cambricon only the
    # inputs of the ops it runs in int8, so conv2's (its scope is off) stays as it is.
    assert moving == (["x"] if backend == "cambricon" else sorted(["x", conv1_out])), moving


def test_quantization_aware_training_refuses_what_it_cannot_do():
    def run(config):
        @flow.global_function(type="train", function_config=config)
        def train(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
            w = flow.get_variable("w", shape=(3, 4), initializer=flow.ones_initializer())
            out = flow.matmul(x, w)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(out)
            return out
        train(np.ones((2, 3), np.float32))

    with pytest.raises(ValueError, match=r"\[quantization_aware_training\] job 'train': target_backend must be \"\" or "
                                         r"\"cambricon\", got \"tensorrt\""):
        run(_qat_config(backend="tensorrt"))
    flow.clear_default_session()
    with pytest.raises(ValueError, match="moving_min_max_stop_update_after_iters is not set, and 'x' needs a "
                                         "moving-average observer"):
        run(_qat_config(stop=None))
    with pytest.raises(TypeError, match="quantization_aware_training must be a bool"):
        with flow.experimental.scope.config(quantization_aware_training="no"):
            pass


def test_quantization_refuses_bad_arguments():
    with pytest.raises(ValueError, match=r"flow.quantization.min_max_observer: quantization_bit must be an int in "
                                         r"\[2, 8\], got 9"):
        @flow.global_function()
        def bits(p: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
            return flow.quantization.min_max_observer(p, 9)[0]
        bits(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="quantization_scheme must be 'symmetric' or 'affine', got 'asymmetric'"):
        @flow.global_function()
        def scheme(p: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
            scale, zero_point = flow.quantization.min_max_observer(p)
            return flow.quantization.fake_quantization(p, scale, zero_point, 8, "asymmetric")
        scheme(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"\[fake_quantization\] scale must be \(1,\) or \(x.shape\[0\],\) = "
                                         r"\(2,\) for x \(2,3\), got \(3\)"):
        @flow.global_function()
        def channels(p: tp.Numpy.Placeholder((2, 3)), s: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
            return flow.quantization.fake_quantization(p, s, s)
        channels(np.zeros((2, 3), np.float32), np.ones(3, np.float32))
    with pytest.raises(TypeError, match="flow.quantization.fake_quantization: input must be float32 or float64, got int32"):
        @flow.global_function()
        def integers(p: tp.Numpy.Placeholder((2, 3), dtype=flow.int32)) -> tp.Numpy:
            return flow.quantization.fake_quantization(p, p, p)
        integers(np.zeros((2, 3), np.int32))


def test_l2_normalize_xdivy_xlogy_and_their_gradients():
    x = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 0.0]])
    y = np.array([[2.0, 0.0, 0.0], [1.0, 0.5, 4.0]])
    grads = {}

    @flow.global_function(type="train")
    def job(a: tp.Numpy.Placeholder((2, 3), dtype=flow.double), b: tp.Numpy.Placeholder((2, 3), dtype=flow.double)
            ) -> List[tp.Numpy]:
        v = flow.get_variable("v", shape=(2, 3), dtype=flow.double, initializer=flow.zeros_initializer())
        xa, yb = v + a, v + b
        flow.watch_diff(xa, lambda g: grads.setdefault("x", g.numpy()))
        flow.watch_diff(yb, lambda g: grads.setdefault("y", g.numpy()))
        normalized = flow.math.l2_normalize(xa, axis=1, epsilon=1e-6)
        divided = flow.math.xdivy(xa, yb)
        logged = flow.math.xlogy(xa, yb)
        loss = flow.math.reduce_sum(normalized * 2 + divided + logged)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(loss)
        return [normalized, divided, logged]

    normalized, divided, logged = job(x, y)
    np.testing.assert_allclose(normalized, [[0.6, 0.8, 0.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(divided, [[1.5, np.inf, 0.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(logged, [[3 * np.log(2.0), -np.inf, 0.0], [0.0, 0.0, 0.0]])
    # Row 0 of the normalization: d/dx of 2·x/|x| summed is 2(1 − x·Σx/|x|²)/|x|; row 1 is below
    # epsilon, where the norm is the constant sqrt(epsilon).
    norm = 5.0
    expected = 2 * (1 - x[0] * x[0].sum() / norm**2) / norm
    expected_x = np.zeros_like(x)
    expected_x[0] = expected + [1 / 2.0 + np.log(2.0), 0, 0]  # x/y and x·log y where x != 0
    expected_x[0, 1] = np.nan  # 4 / 0 and 4·log 0: their gradients are infinite
    expected_x[1] = 2 / np.sqrt(1e-6)
    got = grads["x"]
    np.testing.assert_allclose(got[0, [0, 2]], expected_x[0, [0, 2]], rtol=1e-12)
    np.testing.assert_allclose(got[1], expected_x[1], rtol=1e-9)
    # Where x is 0, neither xdivy nor xlogy passes a gradient to y, and none is a NaN.
    assert np.all(np.isfinite(grads["y"][:, 2])) and np.all(grads["y"][1] == 0)
    np.testing.assert_allclose(grads["y"][0, 0], -3 / 4 + 3 / 2)


def test_reduce_any_all_in_top_k_and_tril():
    @flow.global_function()
    def job(m: tp.Numpy.Placeholder((2, 3), dtype=flow.int32), p: tp.Numpy.Placeholder((3, 4)),
            t: tp.Numpy.Placeholder((3,), dtype=flow.int64)) -> List[tp.Numpy]:
        return [flow.math.reduce_any(m, axis=1), flow.math.reduce_all(m, axis=1), flow.math.reduce_all(m),
                flow.math.in_top_k(t, p, 2), flow.math.tril(p, diagonal=1, fill_value=-1.0)]

    m = np.array([[0, 2, 0], [1, 1, -3]], np.int32)
    p = np.array([[0.1, 0.9, 0.5, 0.5], [0.3, 0.2, 0.1, 0.0], [0.5, 0.5, 0.5, 0.6]], np.float32)
    t = np.array([2, 2, 0], np.int64)
    any_, all_, all_of_all, top, lower = job(m, p, t)
    np.testing.assert_array_equal(any_, [1, 1])
    np.testing.assert_array_equal(all_, [0, 1])
    assert all_of_all == 0 and any_.dtype == np.int8
    # Row 0: class 2 ties with class 3 for second place (in); row 1: two score higher (out); row 2:
    # only class 3 scores higher than class 0 (in, ties included).
    np.testing.assert_array_equal(top, [1, 0, 1])
    np.testing.assert_array_equal(lower, np.where(np.tril(np.ones((3, 4)), 1) == 1, p, -1.0))
    # A row with an infinite or NaN prediction cannot say: 0, as TensorFlow's and OneFlow's kernels give
    # (OneFlow's test found Weir answering 1 here).
    p[0, 3], p[2, 1] = np.inf, np.nan
    _, _, _, top, _ = job(m, p, t)
    np.testing.assert_array_equal(top, [0, 0, 0])


def test_count_not_finite_counts_inf_and_nan():
    @flow.global_function()
    def job(a: tp.Numpy.Placeholder((2, 3)), b: tp.Numpy.Placeholder((4,), dtype=flow.double)) -> List[tp.Numpy]:
        return [flow.count_not_finite(a), flow.multi_count_not_finite([a, b])]

    a = np.array([[1, np.inf, np.nan], [-np.inf, 0, 2]], np.float32)
    b = np.array([np.nan, 1e308, -1e308, 3], np.float64)
    one, both = job(a, b)
    assert one.shape == (1,) and one.dtype == np.int64 and one[0] == 3
    assert both[0] == 4


def test_the_modules_oneflow_programs_import_by_path():
    import weir.core.operator.op_conf_pb2 as op_conf_util
    import weir.python.framework.distribute as distribute_util

    assert (op_conf_util.kNone, op_conf_util.kTanH, op_conf_util.kSigmoid, op_conf_util.kRelu) == (0, 1, 2, 3)
    assert distribute_util.split(1) is flow.distribute.split(1)
    assert distribute_util.broadcast() is flow.distribute.broadcast()


def test_concat_takes_values_and_the_fused_batch_norm_layers_are_bn_then_relu():
    x = np.array([[1.0, -2.0], [3.0, 0.5], [-1.0, 4.0], [2.0, 2.0]])
    addend = np.array([[0.5, 0.5], [-10.0, 0.0], [0.0, 0.0], [1.0, -1.0]])

    @flow.global_function()
    def job(a: tp.Numpy.Placeholder((4, 2), dtype=flow.double), b: tp.Numpy.Placeholder((4, 2), dtype=flow.double)
            ) -> List[tp.Numpy]:
        return [flow.concat(values=[a, b], axis=1),
                flow.layers.batch_normalization(a, axis=1, training=False, name="plain"),
                flow.layers.batch_normalization_relu(a, axis=1, training=False, name="bn_relu"),
                flow.layers.batch_normalization_add_relu(a, addend=b, axis=1, training=False, name="bn_add_relu")]

    joined, plain, bn_relu, bn_add_relu = job(x, addend)
    np.testing.assert_array_equal(joined, np.concatenate([x, addend], axis=1))
    np.testing.assert_allclose(bn_relu, np.maximum(plain, 0))
    np.testing.assert_allclose(bn_add_relu, np.maximum(plain + addend, 0))
    with pytest.raises(TypeError, match="flow.concat: give the blobs as inputs or as values"):
        @flow.global_function()
        def both(a: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
            return flow.concat([a], values=[a])
        both(np.zeros(2, np.float32))


def test_atan2_in_every_quadrant_and_on_the_axes_with_its_gradient():
    x = np.array([1.0, 1.0, -1.0, -1.0, 0.0, 0.0, 2.0, -2.0, 0.0, 0.5])
    y = np.array([1.0, -1.0, -1.0, 1.0, 1.0, -1.0, 0.0, 0.0, 0.0, -3.0])
    grads = {}

    @flow.global_function(type="train")
    def job(a: tp.Numpy.Placeholder((10,), dtype=flow.double), b: tp.Numpy.Placeholder((10,), dtype=flow.double)
            ) -> tp.Numpy:
        v = flow.get_variable("v", shape=(10,), dtype=flow.double, initializer=flow.zeros_initializer())
        xa, yb = v + a, v + b
        flow.watch_diff(xa, lambda g: grads.setdefault("x", g.numpy()))
        flow.watch_diff(yb, lambda g: grads.setdefault("y", g.numpy()))
        angle = flow.math.atan2(xa, yb)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(angle)
        return angle

    np.testing.assert_allclose(job(x, y), np.arctan2(x, y), rtol=1e-12, atol=1e-15)
    off_axis = ~((x == 0) & (y <= 0))
    r2 = np.where(off_axis, x**2 + y**2, 1.0)
    np.testing.assert_allclose(grads["x"][off_axis], (y / r2)[off_axis], rtol=1e-9)
    np.testing.assert_allclose(grads["y"][off_axis], (-x / r2)[off_axis], rtol=1e-9)
    assert np.all(np.isfinite(grads["x"])) and np.all(np.isfinite(grads["y"]))


def test_floordiv_rounds_toward_negative_infinity():
    @flow.global_function()
    def job(a: tp.Numpy.Placeholder((4,)), b: tp.Numpy.Placeholder((4,)),
            i: tp.Numpy.Placeholder((4,), dtype=flow.int32), j: tp.Numpy.Placeholder((4,), dtype=flow.int32)
            ) -> List[tp.Numpy]:
        return [flow.math.floordiv(a, b), flow.math.floordiv(i, j)]

    a, b = np.array([7.0, -7.0, 7.5, -0.5], np.float32), np.array([2.0, 2.0, -2.0, 3.0], np.float32)
    i, j = np.array([7, -7, 7, -6], np.int32), np.array([2, 2, -2, 3], np.int32)
    floats, ints = job(a, b, i, j)
    np.testing.assert_array_equal(floats, np.floor(a / b))
    np.testing.assert_array_equal(ints, i // j)
    with pytest.raises(ValueError, match="flow.math.floordiv: x and y must have one shape and dtype"):
        @flow.global_function()
        def mismatched(a: tp.Numpy.Placeholder((4,)), b: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
            return flow.math.floordiv(a, b)
        mismatched(a, b[:2])


def test_bce_with_logits_and_kl_divergence_losses_match_oneflows_examples():
    logits = np.array([[1.2, 0.2, -0.3], [0.7, 0.6, -2]], np.float32)
    target = np.array([[0, 1, 0], [1, 0, 1]], np.float32)

    @flow.global_function()
    def bce(x: tp.Numpy.Placeholder((2, 3)), t: tp.Numpy.Placeholder((2, 3)), w: tp.Numpy.Placeholder((2, 3)),
            p: tp.Numpy.Placeholder((3,))) -> List[tp.Numpy]:
        return [flow.nn.BCEWithLogitsLoss(x, t, w, p, reduction="mean"),
                flow.nn.BCEWithLogitsLoss(x, t, reduction="none"), flow.nn.BCELoss(x, t, reduction="none")]

    weighted, plain, via_sigmoid = bce(logits, target, np.full((2, 3), 2, np.float32),
                                       np.array([1.2, 1.3, 1.4], np.float32))
    np.testing.assert_allclose(weighted, 2.4314096, rtol=1e-6)  # OneFlow's docstring example
    np.testing.assert_allclose(plain, via_sigmoid, rtol=1e-5)
    big = np.array([[80.0, -80.0, 0.0]], np.float32)  # stable where σ(x) rounds to 0 or 1

    @flow.global_function()
    def extreme(x: tp.Numpy.Placeholder((1, 3)), t: tp.Numpy.Placeholder((1, 3))) -> tp.Numpy:
        return flow.nn.BCEWithLogitsLoss(x, t, reduction="none")

    np.testing.assert_allclose(extreme(big, np.array([[0, 1, 1]], np.float32)), [[80.0, 80.0, np.log(2.0)]], rtol=1e-6)

    inputs = np.array([[0.1, 0.2, 0.7], [0.8, 0.9, 0.5], [0.5, 0.15, 0.35]], np.float32)
    targets = np.array([[0.3, 0.1, 0.6], [-0.3, 0.4, 0.4], [0.35, 0.25, 0.4]], np.float32)

    @flow.global_function()
    def kl(x: tp.Numpy.Placeholder((3, 3)), t: tp.Numpy.Placeholder((3, 3))) -> List[tp.Numpy]:
        return [flow.nn.KLDivLoss(x, t, reduction="none"), flow.nn.KLDivLoss(x, t, log_target=True, reduction="sum")]

    elementwise, logged = kl(inputs, targets)
    np.testing.assert_allclose(elementwise, [[-0.39119187, -0.25025854, -0.7264954], [0, -0.72651625, -0.56651634],
                                             [-0.54243773, -0.3840736, -0.5065163]], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(logged, (np.exp(targets) * (targets - inputs)).sum(), rtol=1e-5)


def test_pixel_shuffle_matches_the_reshape_and_transpose_reference():
    x = np.arange(2 * 12 * 2 * 3, dtype=np.float32).reshape(2, 12, 2, 3)

    @flow.global_function()
    def job(v: tp.Numpy.Placeholder((2, 12, 2, 3))) -> List[tp.Numpy]:
        return [flow.nn.PixelShuffle(v, 2), flow.nn.PixelShufflev2(v, 3, 2)]

    square, wide = job(x)

    def reference(v, h, w):
        b, c, height, width = v.shape
        return v.reshape(b, c // (h * w), h, w, height, width).transpose(0, 1, 4, 2, 5, 3).reshape(
            b, c // (h * w), height * h, width * w)

    np.testing.assert_array_equal(square, reference(x, 2, 2))
    np.testing.assert_array_equal(wide, reference(x, 3, 2))
    assert wide.shape == (2, 2, 6, 6)
    with pytest.raises(ValueError, match="must divide by h_upscale_factor"):
        @flow.global_function()
        def odd(v: tp.Numpy.Placeholder((1, 5, 2, 2))) -> tp.Numpy:
            return flow.nn.PixelShuffle(v, 2)
        odd(np.zeros((1, 5, 2, 2), np.float32))


def test_instance_and_group_normalization_match_numpy_and_make_their_variables():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 4, 3, 5)).astype(np.float32)

    @flow.global_function()
    def job(v: tp.Numpy.Placeholder((2, 4, 3, 5))) -> List[tp.Numpy]:
        return [flow.nn.InstanceNorm2d(v, name="inorm"), flow.nn.GroupNorm(v, num_groups=2, name="gnorm"),
                flow.nn.InstanceNorm1d(flow.reshape(v, [2, 4, 15]), affine=False)]

    instance, group, flat = job(x)

    def normalized(v, axes):
        return (v - v.mean(axes, keepdims=True)) / np.sqrt(v.var(axes, keepdims=True) + 1e-5)

    np.testing.assert_allclose(instance, normalized(x, (2, 3)), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(flat, normalized(x, (2, 3)).reshape(2, 4, 15), rtol=1e-4, atol=1e-5)
    grouped = normalized(x.reshape(2, 2, -1), (2,)).reshape(x.shape)
    np.testing.assert_allclose(group, grouped, rtol=1e-4, atol=1e-5)
    variables = flow.get_all_variables()
    assert variables["inorm_gamma"].numpy().shape == (1, 4, 1)
    assert variables["gnorm_beta"].numpy().shape == (1, 2, 1)  # one per group, as OneFlow's


def test_upsample_2d_nearest_and_bilinear_match_the_reference_and_train():
    x = np.arange(2 * 3 * 4, dtype=np.float32).reshape(1, 2, 3, 4)

    @flow.global_function()
    def job(v: tp.Numpy.Placeholder((1, 2, 3, 4))) -> List[tp.Numpy]:
        nhwc = flow.transpose(v, [0, 2, 3, 1])
        return [flow.layers.upsample_2d(v, size=2), flow.layers.upsample_2d(v, size=(2, 3), interpolation="bilinear"),
                flow.layers.upsample_2d(nhwc, size=(3, 1), data_format="NHWC", name="up_nhwc")]

    nearest, bilinear, nhwc = job(x)
    np.testing.assert_array_equal(nearest, x.repeat(2, axis=2).repeat(2, axis=3))
    np.testing.assert_array_equal(nhwc, x.transpose(0, 2, 3, 1).repeat(3, axis=1))

    def bilinear_reference(v, sh, sw):  # half-pixel centers (PyTorch's align_corners=False)
        def axis(size, scale):
            src = np.maximum((np.arange(size * scale) + 0.5) / scale - 0.5, 0)
            low = np.minimum(np.floor(src).astype(int), size - 1)
            return low, np.minimum(low + 1, size - 1), src - low
        lh, hh, wh = axis(v.shape[2], sh)
        lw, hw, ww = axis(v.shape[3], sw)
        rows = v[:, :, lh, :] * (1 - wh)[:, None] + v[:, :, hh, :] * wh[:, None]
        return rows[..., lw] * (1 - ww) + rows[..., hw] * ww

    np.testing.assert_allclose(bilinear, bilinear_reference(x, 2, 3), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="interpolation must be 'nearest' or 'bilinear'"):
        @flow.global_function()
        def cubic(v: tp.Numpy.Placeholder((1, 2, 3, 4))) -> tp.Numpy:
            return flow.layers.upsample_2d(v, interpolation="bicubic")
        cubic(x)


def test_prelu_learns_its_alpha_per_element_or_shared():
    x = np.array([[[[-1.0, 2.0], [-3.0, 4.0]]]], np.float32)  # (1, 1, 2, 2)

    @flow.global_function(type="train")
    def job(v: tp.Numpy.Placeholder((1, 1, 2, 2))) -> List[tp.Numpy]:
        out = flow.layers.prelu(v, alpha_initializer=flow.constant_initializer(0.25), name="p")
        shared = flow.layers.prelu(v, shared_axes=[2, 3], name="q")
        loss = flow.math.reduce_sum(out) + flow.math.reduce_sum(shared)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1.0]), momentum=0).minimize(loss)
        return [out, shared]

    out, shared = job(x)
    np.testing.assert_allclose(out, np.where(x > 0, x, 0.25 * x))
    np.testing.assert_allclose(shared, np.maximum(x, 0))
    variables = flow.get_all_variables()
    assert variables["p-alpha"].numpy().shape == (1, 2, 2) and variables["q-alpha"].numpy().shape == (1, 1, 1)
    # d loss / d alpha = min(x, 0): one SGD step of 1 moves alpha by -min(x, 0).
    np.testing.assert_allclose(variables["p-alpha"].numpy(), 0.25 - np.minimum(x[0], 0))
    np.testing.assert_allclose(variables["q-alpha"].numpy(), [[[4.0]]])


def test_conv1d_matches_numpy_in_both_layouts_and_as_a_layer():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 4, 9)).astype(np.float32)  # (N, C, L)
    w = rng.normal(size=(6, 2, 3)).astype(np.float32)  # 2 groups: (out, C/groups, k)

    def reference(v, k, stride, pad, dilation, groups):
        v = np.pad(v, ((0, 0), (0, 0), pad))
        span = dilation * (k.shape[2] - 1) + 1
        length = (v.shape[2] - span) // stride + 1
        out = np.zeros((v.shape[0], k.shape[0], length), np.float64)
        per_in, per_out = v.shape[1] // groups, k.shape[0] // groups
        for o in range(k.shape[0]):
            g = o // per_out
            for t in range(length):
                window = v[:, g * per_in:(g + 1) * per_in, t * stride:t * stride + span:dilation]
                out[:, o, t] = (window * k[o]).sum(axis=(1, 2))
        return out

    @flow.global_function()
    def job(v: tp.Numpy.Placeholder((2, 4, 9)), k: tp.Numpy.Placeholder((6, 2, 3))) -> List[tp.Numpy]:
        ncw = flow.nn.conv1d(v, k, strides=2, padding=[(1, 2)], dilations=2, groups=2)
        nwc = flow.nn.conv1d(flow.transpose(v, [0, 2, 1]), flow.transpose(k, [0, 2, 1]), strides=[1],
                             padding="VALID", data_format="NWC", groups=2)
        layer = flow.layers.conv1d(v, 5, kernel_size=3, padding="SAME", name="c1",
                                   kernel_initializer=flow.constant_initializer(0.5))
        return [ncw, nwc, layer]

    ncw, nwc, layer = job(x, w)
    np.testing.assert_allclose(ncw, reference(x, w, 2, (1, 2), 2, 2), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(nwc, reference(x, w, 1, (0, 0), 1, 2).transpose(0, 2, 1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(layer, reference(x, np.full((5, 4, 3), 0.5, np.float32), 1, (1, 1), 1, 1),
                               rtol=1e-4, atol=1e-4)
    variables = flow.get_all_variables()
    assert variables["c1-weight"].numpy().shape == (5, 4, 3) and variables["c1-bias"].numpy().shape == (5,)


def test_reflection_replication_and_constant_pad2d_match_numpy_and_pass_gradients():
    x = np.arange(2 * 3 * 4, dtype=np.float64).reshape(1, 2, 3, 4)
    grads = {}

    @flow.global_function(type="train")
    def job(a: tp.Numpy.Placeholder((1, 2, 3, 4), dtype=flow.double)) -> List[tp.Numpy]:
        v = flow.get_variable("v", shape=(1, 2, 3, 4), dtype=flow.double, initializer=flow.zeros_initializer())
        xa = v + a
        flow.watch_diff(xa, lambda g: grads.setdefault("x", g.numpy()))
        reflected = flow.reflection_pad2d(xa, [3, 1, 2, 0])  # (left, right, top, bottom)
        replicated = flow.replication_pad2d(xa, 2)
        constant = flow.constant_pad2d(xa, [0, 1, 1, 0], constant_value=7)
        loss = flow.math.reduce_sum(reflected) + flow.math.reduce_sum(replicated)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(loss)
        return [reflected, replicated, constant]

    reflected, replicated, constant = job(x)
    np.testing.assert_array_equal(reflected, np.pad(x, ((0, 0), (0, 0), (2, 0), (3, 1)), mode="reflect"))
    np.testing.assert_array_equal(replicated, np.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2)), mode="edge"))
    np.testing.assert_array_equal(constant, np.pad(x, ((0, 0), (0, 0), (1, 0), (0, 1)), constant_values=7))
    # Each input element's gradient: how many times each padded output holds it.
    def counts(mode, pads):
        index = np.arange(x.size).reshape(x.shape)
        return np.bincount(np.pad(index, pads, mode=mode).ravel(), minlength=x.size).reshape(x.shape)
    expected = counts("reflect", ((0, 0), (0, 0), (2, 0), (3, 1))) + counts("edge", ((0, 0), (0, 0), (2, 2), (2, 2)))
    np.testing.assert_array_equal(grads["x"], expected)
    with pytest.raises(ValueError, match="each pad must be below its axis's size"):
        @flow.global_function()
        def too_wide(a: tp.Numpy.Placeholder((1, 1, 2, 2))) -> tp.Numpy:
            return flow.reflection_pad2d(a, 2)
        too_wide(np.zeros((1, 1, 2, 2), np.float32))


def test_assign_writes_a_variable_that_the_next_call_reads():
    flow.clear_default_session()

    @flow.global_function(type="predict")
    def write(value: tp.Numpy.Placeholder((2, 3), dtype=flow.int32)) -> tp.Numpy:
        var = flow.get_variable("var", shape=(2, 3), dtype=flow.int32, initializer=flow.constant_initializer(7))
        before = flow.identity(var)  # this call's readers see the value from before
        flow.assign(var, value)
        return before

    @flow.global_function(type="predict")
    def fill() -> tp.Numpy:
        var = flow.get_variable("var", shape=(2, 3), dtype=flow.int32, initializer=flow.constant_initializer(7))
        assert flow.assign(var, 5) is None
        return flow.identity(var)

    first = np.arange(6, dtype=np.int32).reshape(2, 3)
    np.testing.assert_array_equal(write(first), np.full((2, 3), 7))
    np.testing.assert_array_equal(write(first + 1), first)
    np.testing.assert_array_equal(fill(), first + 1)
    np.testing.assert_array_equal(flow.get_all_variables()["var"].numpy(), np.full((2, 3), 5))
    flow.clear_default_session()


def test_assign_refuses_a_value_of_another_shape_naming_both():
    flow.clear_default_session()

    @flow.global_function(type="predict")
    def job(value: tp.Numpy.Placeholder((3, 2))) -> tp.Numpy:
        var = flow.get_variable("var", shape=(2, 3), dtype=flow.float, initializer=flow.constant_initializer(0))
        flow.assign(var, value)
        return value

    with pytest.raises(ValueError, match=r"\[assign\] value f32\(3,2\) does not match ref f32\(2,3\)"):
        job(np.zeros((3, 2), np.float32))
    flow.clear_default_session()


def test_reduced_shape_elem_cnt_counts_the_elements_of_the_axes():
    flow.clear_default_session()

    @flow.global_function(type="predict")
    def job(x: tp.Numpy.Placeholder((2, 3, 4))) -> Tuple[tp.Numpy, tp.Numpy, tp.Numpy]:
        return (flow.math.reduced_shape_elem_cnt(x), flow.math.reduced_shape_elem_cnt(x, axis=[0, -1]),
                flow.math.reduced_shape_elem_cnt(x, axis=[1], dtype=flow.float))

    every, some, floats = job(np.zeros((2, 3, 4), np.float32))
    assert every.item() == 24 and every.dtype == np.int32 and every.shape == (1,)
    assert some.item() == 8
    assert floats.item() == 3.0 and floats.dtype == np.float32
    flow.clear_default_session()


def test_current_global_function_desc_says_whether_the_job_trains():
    flow.clear_default_session()
    seen = {}

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((2, 2))) -> tp.Numpy:
        desc = flow.current_global_function_desc()
        seen["train"] = (desc.IsTrainable(), desc.job_config_proto.job_name)
        w = flow.get_variable("w", shape=(2, 2), dtype=flow.float, initializer=flow.constant_initializer(1))
        loss = flow.math.reduce_mean(flow.matmul(x, w))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    @flow.global_function(type="predict")
    def infer(x: tp.Numpy.Placeholder((2, 2))) -> tp.Numpy:
        seen["infer"] = flow.current_global_function_desc().IsTrainable()
        return x

    train(np.ones((2, 2), np.float32))
    infer(np.ones((2, 2), np.float32))
    assert seen == {"train": (True, "train"), "infer": False}
    with pytest.raises(RuntimeError, match="inside a function decorated with @flow.global_function"):
        flow.current_global_function_desc()
    flow.clear_default_session()


def test_lars_matches_oneflows_formula():
    flow.clear_default_session()
    x = np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)

    @flow.global_function(type="train")
    def job(inputs: tp.Numpy.Placeholder((2, 2))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(2, 2), dtype=flow.float, initializer=flow.constant_initializer(0.25))
        loss = flow.math.reduce_sum(inputs * w)
        flow.optimizer.LARS(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum_beta=0.9,
                            lars_coefficient=0.1).minimize(loss)
        return loss

    w, v = np.full((2, 2), 0.25), np.zeros((2, 2))
    for _ in range(3):
        job(x)
        rate = 0.5 * 0.1 * np.linalg.norm(w) / (1e-9 + np.linalg.norm(x))  # the gradient of sum(x * w) is x
        v = 0.9 * v - rate * x
        w = w + v
        np.testing.assert_allclose(flow.get_all_variables()["w"].numpy(), w, rtol=1e-5)
        np.testing.assert_allclose(flow.get_all_variables()["w-momentum"].numpy(), v, rtol=1e-5, atol=1e-7)
    flow.clear_default_session()


def test_dynamic_loss_scale_on_two_devices_skips_the_step_everywhere_when_one_piece_is_not_finite():
    # A mirrored job: only device 1's piece holds an inf; the averaged gradients are not finite on both
    # devices, so both skip, and the run matches the same batches on one device.
    finite = np.ones((4, 3), np.float32)
    one_bad = finite.copy()
    one_bad[3, 0] = np.inf
    results = []
    for devices in (1, 2):
        flow.clear_default_session()
        flow.config.cpu_device_num(devices)
        config = flow.FunctionConfig()
        config.default_logical_view(flow.scope.mirrored_view())

        @flow.global_function(type="train", function_config=config)
        def job(x: tp.ListNumpy.Placeholder((4 // devices, 3))) -> tp.ListNumpy:
            w = flow.get_variable("w", shape=(3, 2), dtype=flow.float, initializer=flow.constant_initializer(0.5))
            loss = flow.math.reduce_mean(flow.math.square(flow.matmul(x, w)))
            policy = flow.optimizer.loss_scale.dynamic_loss_scale(initial_loss_scale=64.0, increment_period=2)
            flow.optimizer.Adam(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), loss_scale_policy=policy).minimize(loss)
            return loss

        for batch in (finite, one_bad, finite, finite):
            job(np.split(batch, devices))
        results.append({name: value.numpy() for name, value in flow.get_all_variables().items()})
    flow.clear_default_session()
    assert results[1]["System-Train-SkippedSteps-job"][0] == 1
    assert results[1]["System-Train-LossScale-job"][0] == 64.0  # halved, then doubled after 2 good steps
    for name in ("w", "w-m", "w-v"):
        np.testing.assert_allclose(results[1][name], results[0][name], rtol=1e-6, err_msg=name)


def test_the_cnn_trainers_layer_calls_conv2d_weight_names_dense_without_bias_and_keras_activations():
    # OneFlow's ResNeXt names its conv variables, AlexNet passes bias_initializer=False with use_bias=False,
    # Inception-v3 calls flow.keras.activations.relu.
    x = np.random.default_rng(0).uniform(-1, 1, (2, 3, 6, 6)).astype(np.float32)

    @flow.global_function()
    def job(images: tp.Numpy.Placeholder((2, 3, 6, 6))) -> Tuple[tp.Numpy, tp.Numpy, tp.Numpy, tp.Numpy]:
        init = flow.random_normal_initializer(0.0, 0.3, seed=1)
        with flow.scope.namespace("block"):
            named = flow.layers.conv2d(images, 4, 3, padding="SAME", kernel_initializer=init, name="conv",
                                       weight_name="conv-w", bias_name="conv-b",
                                       bias_initializer=flow.constant_initializer(0.25))
        default = flow.layers.conv2d(images, 4, 3, padding="SAME", kernel_initializer=init, name="plain",
                                     bias_initializer=flow.constant_initializer(0.25))
        dense = flow.layers.dense(flow.reshape(images, (2, -1)), 5, use_bias=False, bias_initializer=False,
                                  kernel_initializer=init, name="fc")
        return (flow.keras.activations.relu(named), default, flow.keras.activations.sigmoid(dense),
                flow.nn.conv2d(images, flow.get_variable("block-conv-w", shape=(4, 3, 3, 3), dtype=flow.float,
                                                         initializer=init), 1, "SAME"))

    relu_named, default, dense, direct = job(x)
    variables = flow.get_all_variables()
    assert {"block-conv-w", "block-conv-b", "plain-weight", "plain-bias", "fc-weight"} <= set(variables)
    assert "fc-bias" not in variables
    assert variables["block-conv-w"].numpy().shape == (4, 3, 3, 3)
    np.testing.assert_allclose(relu_named, np.maximum(direct + 0.25, 0), rtol=1e-5, atol=1e-6)
    # The same initializer and seed draw the same weight whatever the variable's name.
    np.testing.assert_allclose(np.maximum(default, 0), relu_named, rtol=1e-5, atol=1e-6)
    assert dense.shape == (2, 5) and ((0 < dense) & (dense < 1)).all()
    with pytest.raises(ValueError, match="only alpha=0"):
        flow.keras.activations.relu(None, alpha=0.1)


def test_compat_conv2d_pads_as_tensorflow_does():
    x = np.random.default_rng(1).uniform(-1, 1, (1, 2, 5, 5)).astype(np.float32)
    w = np.random.default_rng(2).uniform(-1, 1, (3, 2, 2, 2)).astype(np.float32)

    @flow.global_function()
    def job(x_def: tp.Numpy.Placeholder((1, 2, 5, 5)), w_def: tp.Numpy.Placeholder((3, 2, 2, 2))
            ) -> Tuple[tp.Numpy, tp.Numpy]:
        return (flow.nn.compat_conv2d(x_def, w_def, strides=[2, 2], padding="same"),
                flow.nn.compat_conv2d(x_def, w_def, strides=1, padding="VALID"))

    same, valid = job(x, w)
    # SAME with stride 2 on 5: out 3, total pad 1, all of it at the end (bottom and right).
    padded = np.pad(x, ((0, 0), (0, 0), (0, 1), (0, 1)))
    expected = np.zeros((1, 3, 3, 3), np.float32)
    for i in range(3):
        for j in range(3):
            expected[0, :, i, j] = np.einsum("chw,ochw->o", padded[0, :, 2 * i:2 * i + 2, 2 * j:2 * j + 2], w)
    np.testing.assert_allclose(same, expected, rtol=1e-5, atol=1e-5)
    assert valid.shape == (1, 3, 4, 4)
    with pytest.raises(ValueError, match="padding must be"):
        flow.nn.compat_conv2d(None, None, 1, "FULL")


# --- gather_nd, scatter_nd, tensor_scatter_nd_update/_add, batch_gather -------------------------

def _np_gather_nd(params, indices):
    depth = indices.shape[-1]
    tuples = indices.reshape(-1, depth)
    picked = np.stack([params[tuple(t)] for t in tuples]) if len(tuples) else np.zeros((0,) + params.shape[depth:])
    return picked.reshape(indices.shape[:-1] + params.shape[depth:])


def _np_scatter_nd_add(out, indices, updates):
    depth = indices.shape[-1]
    out = out.copy()
    slices = updates.reshape((-1,) + out.shape[depth:])
    for t, u in zip(indices.reshape(-1, depth), slices):
        out[tuple(t)] += u
    return out


@pytest.mark.parametrize("params_shape,indices_shape", [((5, 4), (6, 1)), ((5, 4, 3), (2, 3, 2)), ((4, 3), (7, 2)),
                                                        ((3, 2, 2), (4, 3))])
@pytest.mark.parametrize("dtype,index_dtype", [(np.float32, np.int32), (np.float64, np.int64)])
def test_gather_nd_and_scatter_nd_match_numpy_and_are_each_others_gradient(params_shape, indices_shape, dtype,
                                                                         index_dtype):
    rng = np.random.default_rng(11)
    depth = indices_shape[-1]
    params = rng.random(params_shape).astype(dtype)
    indices = np.stack([rng.integers(0, params_shape[k], indices_shape[:-1]) for k in range(depth)], -1).astype(index_dtype)
    side = indices_shape[:-1] + params_shape[depth:]
    updates = rng.random(side).astype(dtype)
    fdtype = flow.float32 if dtype == np.float32 else flow.float64
    idtype = flow.int32 if index_dtype == np.int32 else flow.int64
    grads = {}

    @flow.global_function(type="train")
    def job(p: tp.Numpy.Placeholder(params_shape, dtype=fdtype), i: tp.Numpy.Placeholder(indices_shape, dtype=idtype),
            u: tp.Numpy.Placeholder(side, dtype=fdtype)) -> List[tp.Numpy]:
        v = flow.get_variable("v", shape=(1,), dtype=fdtype, initializer=flow.zeros_initializer())
        pv, uv = p + v, u + v
        flow.watch_diff(pv, lambda g: grads.setdefault("params", g.numpy()))
        flow.watch_diff(uv, lambda g: grads.setdefault("updates", g.numpy()))
        picked = flow.gather_nd(pv, i)
        scattered = flow.scatter_nd(i, uv, params_shape)
        added = flow.tensor_scatter_nd_add(pv, i, uv)
        loss = flow.math.reduce_sum(picked * 2) + flow.math.reduce_sum(scattered * 3) + flow.math.reduce_sum(added)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(loss)
        return [picked, scattered, added]

    picked, scattered, added = job(params, indices, updates)
    np.testing.assert_allclose(picked, _np_gather_nd(params, indices))
    np.testing.assert_allclose(scattered, _np_scatter_nd_add(np.zeros(params_shape, dtype), indices, updates), rtol=1e-6)
    np.testing.assert_allclose(added, _np_scatter_nd_add(params, indices, updates), rtol=1e-6)
    # d/dparams: 2 into each picked slice (repeats add up) plus 1 everywhere (tensor_scatter_nd_add);
    # d/dupdates: each update's slice of 3 (scatter_nd) and of 1 (tensor_scatter_nd_add).
    np.testing.assert_allclose(grads["params"], _np_scatter_nd_add(np.ones(params_shape), indices, np.full(side, 2.0)))
    np.testing.assert_allclose(grads["updates"], np.full(side, 4.0))


def test_tensor_scatter_nd_update_replaces_slices_and_its_gradient_skips_them():
    params = np.arange(12, dtype=np.float32).reshape(4, 3)
    indices = np.array([[3], [1]], np.int32)
    updates = np.array([[-1, -2, -3], [-4, -5, -6]], np.float32)
    grads = {}

    @flow.global_function(type="train")
    def job(p: tp.Numpy.Placeholder((4, 3)), i: tp.Numpy.Placeholder((2, 1), dtype=flow.int32),
            u: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        v = flow.get_variable("v", shape=(1,), dtype=flow.float32, initializer=flow.zeros_initializer())
        pv, uv = p + v, u + v
        flow.watch_diff(pv, lambda g: grads.setdefault("params", g.numpy()))
        flow.watch_diff(uv, lambda g: grads.setdefault("updates", g.numpy()))
        out = flow.tensor_scatter_nd_update(pv, i, uv)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(out)
        return out

    expected = params.copy()
    expected[[3, 1]] = updates
    np.testing.assert_array_equal(job(params, indices, updates), expected)
    np.testing.assert_array_equal(grads["params"], [[1, 1, 1], [0, 0, 0], [1, 1, 1], [0, 0, 0]])
    np.testing.assert_array_equal(grads["updates"], np.ones((2, 3)))


@pytest.mark.parametrize("batch_dims,params_shape,indices_shape", [(1, (3, 5, 2), (3, 4)), (2, (2, 3, 4), (2, 3, 2))])
def test_gather_with_batch_dims_and_batch_gather_gather_per_batch_entry(batch_dims, params_shape, indices_shape):
    rng = np.random.default_rng(3)
    params = rng.random(params_shape).astype(np.float32)
    indices = rng.integers(0, params_shape[batch_dims], indices_shape).astype(np.int64)
    grads = []

    @flow.global_function(type="train")
    def job(p: tp.Numpy.Placeholder(params_shape), i: tp.Numpy.Placeholder(indices_shape, dtype=flow.int64)
            ) -> List[tp.Numpy]:
        v = flow.get_variable("v", shape=(1,), dtype=flow.float32, initializer=flow.zeros_initializer())
        pv = p + v
        flow.watch_diff(pv, grads.append)
        by_gather = flow.gather(pv, i, batch_dims=batch_dims)
        by_batch_gather = flow.batch_gather(pv, i)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(by_gather)
        return [by_gather, by_batch_gather]

    by_gather, by_batch_gather = job(params, indices)
    lead = indices_shape[:batch_dims]
    expected = np.stack([params[b][indices[b]] for b in np.ndindex(*lead)]).reshape(indices_shape + params_shape[batch_dims + 1:])
    np.testing.assert_allclose(by_gather, expected)
    np.testing.assert_allclose(by_batch_gather, expected)
    counts = np.zeros(params_shape[:batch_dims + 1])
    for b in np.ndindex(*lead):
        np.add.at(counts[b], indices[b], 1.0)
    np.testing.assert_allclose(grads[0], np.broadcast_to(counts.reshape(counts.shape + (1,) * (len(params_shape) - batch_dims - 1)),
                                                         params_shape))


def test_gather_nd_and_the_scatters_name_bad_arguments_and_indices_out_of_range():
    @flow.global_function()
    def job(p: tp.Numpy.Placeholder((3, 4)), i: tp.Numpy.Placeholder((2, 2), dtype=flow.int32)) -> tp.Numpy:
        return flow.gather_nd(p, i)

    with pytest.raises(Exception, match=r"\[gather_nd\] index 4 at position 3 of indices is outside \[0, 4\)"):
        job(np.zeros((3, 4), np.float32), np.array([[0, 1], [2, 4]], np.int32))
    with pytest.raises(Exception, match=r"\[scatter_nd\] updates must have the shape indices\[:-1\] \+ out\[K:\] = \(2,4\)"):
        @flow.global_function()
        def bad_updates(i: tp.Numpy.Placeholder((2, 1), dtype=flow.int32), u: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
            return flow.scatter_nd(i, u, (3, 4))
        bad_updates(np.zeros((2, 1), np.int32), np.zeros((2, 3), np.float32))
    with pytest.raises(NotImplementedError, match="flow.gather: with batch_dims 1, axis must be batch_dims"):
        @flow.global_function()
        def bad_axis(p: tp.Numpy.Placeholder((3, 4, 2)), i: tp.Numpy.Placeholder((3, 2), dtype=flow.int32)) -> tp.Numpy:
            return flow.gather(p, i, axis=2, batch_dims=1)
        bad_axis(np.zeros((3, 4, 2), np.float32), np.zeros((3, 2), np.int32))
    with pytest.raises(ValueError, match=r"flow.batch_gather: params \(3, 4\) and indices \(2, 2\) must share their first 1 axes"):
        @flow.global_function()
        def bad_batch(p: tp.Numpy.Placeholder((3, 4)), i: tp.Numpy.Placeholder((2, 2), dtype=flow.int32)) -> tp.Numpy:
            return flow.batch_gather(p, i)
        bad_batch(np.zeros((3, 4), np.float32), np.zeros((2, 2), np.int32))


# --- argsort, sort, top_k ------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("direction", ["ASCENDING", "DESCENDING"])
@pytest.mark.parametrize("dtype,fdtype", [(np.float32, flow.float32), (np.int64, flow.int64)])
def test_argsort_and_sort_match_numpys_stable_sort_and_sorts_gradient_goes_back(axis, direction, dtype, fdtype):
    rng = np.random.default_rng(5)
    x = rng.integers(-3, 4, (4, 6, 5)).astype(dtype)  # many ties: the order among them is the indices'
    grads = []

    @flow.global_function(type="train" if dtype == np.float32 else "predict")
    def job(p: tp.Numpy.Placeholder((4, 6, 5), dtype=fdtype)) -> List[tp.Numpy]:
        if dtype == np.float32:
            p = p + flow.get_variable("v", shape=(1,), dtype=flow.float32, initializer=flow.zeros_initializer())
            flow.watch_diff(p, grads.append)
        order = flow.argsort(p, axis=axis, direction=direction)
        values = flow.sort(p, axis=axis, direction=direction)
        if dtype == np.float32:
            weights = flow.constant(places, dtype=flow.float32)  # each sorted place's own weight
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(
                flow.math.reduce_sum(values * weights))
        return [order, values]

    shape = [1, 1, 1]
    shape[axis] = x.shape[axis]
    places = np.broadcast_to(np.arange(x.shape[axis], dtype=np.float32).reshape(shape), x.shape).copy()
    order, values = job(x)
    key = x if direction == "ASCENDING" else -x
    expected = np.argsort(key, axis=axis, kind="stable")
    assert order.dtype == np.int32
    np.testing.assert_array_equal(order, expected)
    np.testing.assert_array_equal(values, np.take_along_axis(x, expected, axis))
    if grads:  # d(sum(sorted * w))/dx: each x gets the weight of the place it was sorted to
        expected_grad = np.zeros_like(x, dtype=np.float64)
        np.put_along_axis(expected_grad, expected, places.astype(np.float64), axis)
        np.testing.assert_allclose(grads[0], expected_grad)


def test_top_k_gives_the_indices_of_the_k_largest_largest_first():
    x = np.array([[1.0, 5.0, 3.0, 5.0, np.nan], [0.0, -1.0, 2.0, 2.0, 1.0]], np.float32)

    @flow.global_function()
    def job(p: tp.Numpy.Placeholder((2, 5))) -> List[tp.Numpy]:
        return [flow.math.top_k(p, k=3), flow.math.top_k(p), flow.math.top_k(p, k=5)]

    three, one, five = job(x)
    np.testing.assert_array_equal(three, [[4, 1, 3], [2, 3, 4]])
    np.testing.assert_array_equal(one, [[4], [2]])
    np.testing.assert_array_equal(five, [[4, 1, 3, 2, 0], [2, 3, 4, 0, 1]])

    @flow.global_function()
    def too_many(p: tp.Numpy.Placeholder((2, 5))) -> tp.Numpy:
        return flow.math.top_k(p, k=6)  # as OneFlow's kernel: the whole axis, largest first

    np.testing.assert_array_equal(too_many(x), five)

    y = np.random.default_rng(9).permutation(60).reshape(3, 4, 5).astype(np.float32)

    @flow.global_function()
    def along(p: tp.Numpy.Placeholder((3, 4, 5))) -> List[tp.Numpy]:
        # keyword axis, and OneFlow 0.4's positional order top_k(input, axis, k, sorted)
        return [flow.math.top_k(p, k=2, axis=0), flow.math.top_k(p, -2, 3, True), flow.math.top_k(p, 2, 1)]

    first, middle, last = along(y)
    np.testing.assert_array_equal(first, np.argsort(-y, axis=0, kind="stable")[:2])
    np.testing.assert_array_equal(middle, np.argsort(-y, axis=1, kind="stable")[:, :3])
    np.testing.assert_array_equal(last, np.argsort(-y, axis=2, kind="stable")[:, :, :1])

    @flow.global_function()
    def vector(p: tp.Numpy.Placeholder((5,))) -> tp.Numpy:
        return flow.math.top_k(p)

    np.testing.assert_array_equal(vector(x[1]), [2])  # (1,), not (1, 1)
    with pytest.raises(ValueError, match=r"flow.math.top_k: k must be an int >= 1, got 0"):
        @flow.global_function()
        def none(p: tp.Numpy.Placeholder((2, 5))) -> tp.Numpy:
            return flow.math.top_k(p, k=0)
        none(x)
    with pytest.raises(ValueError, match="flow.argsort: direction must be 'ASCENDING' or 'DESCENDING', got 'UP'"):
        @flow.global_function()
        def bad_direction(p: tp.Numpy.Placeholder((2, 5))) -> tp.Numpy:
            return flow.argsort(p, direction="UP")
        bad_direction(x)


def test_slice_update_replaces_the_slice_and_its_gradient_splits_dy():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    update = -np.arange(6, dtype=np.float32).reshape(2, 3)
    grads = {}

    @flow.global_function(type="train")
    def job(p: tp.Numpy.Placeholder((4, 6)), u: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        v = flow.get_variable("v", shape=(1,), dtype=flow.float32, initializer=flow.zeros_initializer())
        pv, uv = p + v, u + v
        flow.watch_diff(pv, lambda g: grads.setdefault("x", g.numpy()))
        flow.watch_diff(uv, lambda g: grads.setdefault("update", g.numpy()))
        out = flow.slice_update(pv, uv, [(1, None, 2), (-1, 0, -2)])  # rows 1, 3; columns 5, 3, 1
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(out * 2)
        return out

    expected = x.copy()
    expected[1::2, -1:0:-2] = update
    np.testing.assert_array_equal(job(x, update), expected)
    zeroed = np.full((4, 6), 2.0)
    zeroed[1::2, -1:0:-2] = 0
    np.testing.assert_array_equal(grads["x"], zeroed)
    np.testing.assert_array_equal(grads["update"], np.full((2, 3), 2.0))
    with pytest.raises(ValueError, match=r"flow.slice_update: update must have the slice's shape \(2, 6\), got \(2, 3\)"):
        @flow.global_function()
        def wrong(p: tp.Numpy.Placeholder((4, 6)), u: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
            return flow.slice_update(p, u, [(0, 2, 1)])
        wrong(x, update)


def test_small_oneflow_aliases_give_their_originals_results():
    x = np.array([[1.0, 5.0, 5.0], [-2.0, 0.5, 3.0]], np.float32)
    ids = np.array([1, 0], np.int32)

    @flow.global_function()
    def job(p: tp.Numpy.Placeholder((2, 3)), i: tp.Numpy.Placeholder((2,), dtype=flow.int32)) -> List[tp.Numpy]:
        like = flow.constant(0.0, dtype=flow.float32, shape=(3, 3))
        assert p.split_axis == flow.INVALID_SPLIT_AXIS == -22 and flow.INVALID_BATCH_AXIS == -22
        return [flow.math.sigmoid_v2(p), flow.math.two_stage_reduce_max(p, axis=1),
                flow.math.two_stage_reduce_min(p, axis=0, keepdims=True),
                flow.math.fused_scale_tril(p, diagonal=0, fill_value=-1.0, scale=2.0),
                flow.nn.fused_scale_tril(p, diagonal=1),
                flow.unsorted_segment_sum(p, i, 2), flow.unsorted_segment_sum_like(p, i, like)]

    sig, most, least, tril2, tril1, seg, seg_like = job(x, ids)
    np.testing.assert_allclose(sig, 1 / (1 + np.exp(-x)), rtol=1e-6)
    np.testing.assert_array_equal(most, [5.0, 3.0])
    np.testing.assert_array_equal(least, [[-2.0, 0.5, 3.0]])
    np.testing.assert_array_equal(tril2, [[2.0, -1.0, -1.0], [-4.0, 1.0, -1.0]])
    np.testing.assert_array_equal(tril1, [[1.0, 5.0, 0.0], [-2.0, 0.5, 3.0]])
    np.testing.assert_array_equal(seg, x[[1, 0]])
    np.testing.assert_array_equal(seg_like, np.vstack([x[[1, 0]], np.zeros((1, 3))]))


def _value_and_gradient(op, x):
    """op on the float64 array x, and d sum(op(x)) / dx through flow.watch_diff: a train job at
    learning rate 0, x plus a zero variable so that a gradient flows back to it."""
    grads = []

    @flow.global_function(type="train")
    def job(p: tp.Numpy.Placeholder(x.shape, dtype=flow.double)) -> tp.Numpy:
        v = flow.get_variable("v", shape=(1,), dtype=flow.double, initializer=flow.zeros_initializer())
        pv = p + v
        flow.watch_diff(pv, grads.append)
        y = op(pv)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(y)
        return y

    return job(x), grads[0]


def test_lgamma_and_its_gradient_the_digamma_function():
    x = np.array([0.25, 0.5, 1.0, 4.0, -0.5, 30.0])
    y, dx = _value_and_gradient(flow.math.lgamma, x)
    np.testing.assert_allclose(y, [math.lgamma(v) for v in x], rtol=1e-13)
    h = 1e-6  # central differences of math.lgamma
    np.testing.assert_allclose(dx, [(math.lgamma(v + h) - math.lgamma(v - h)) / (2 * h) for v in x], rtol=1e-6)


@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), ([0, 2], True), ([], False)])
def test_reduce_prod_matches_numpy_and_its_gradient_handles_zeros(axis, keepdims):
    x = np.array([[[1.5, -2.0], [0.0, 3.0]], [[0.5, 0.0], [0.0, 2.0]], [[1.25, 4.0], [-1.0, 0.5]]])
    y, dx = _value_and_gradient(lambda p: flow.math.reduce_prod(p, axis=axis, keepdims=keepdims), x)
    np_axis = None if axis is None else tuple(axis) if isinstance(axis, list) else axis
    np.testing.assert_allclose(y, np.prod(x, axis=np_axis, keepdims=keepdims))
    expected = np.zeros_like(x)  # d prod / dx_i: the product of the other elements of x_i's reduction
    for index in np.ndindex(*x.shape):
        others = x.copy()
        others[index] = 1.0
        group = np.prod(others, axis=np_axis, keepdims=True)
        expected[index] = np.broadcast_to(group, x.shape)[index]
    np.testing.assert_allclose(dx, expected)


def test_user_op_builder_builds_registered_ops_by_name():
    params = np.arange(12, dtype=np.float32).reshape(3, 4)
    ids = np.array([3, 0], np.int32)

    @flow.global_function()
    def job(p: tp.Numpy.Placeholder((3, 4)), i: tp.Numpy.Placeholder((2,), dtype=flow.int32)) -> List[tp.Numpy]:
        picked = (flow.user_op_builder("picked").Op("gather").Input("params", [p]).Input("indices", [i])
                  .Output("out").Attr("axis", 1, "AttrTypeInt64").Build().InferAndTryRun().RemoteBlobList()[0])
        relu = flow.user_op_builder("relu").Op("relu").Input("in", [p - 5.0]).Output("out").Build()
        joined = (flow.user_op_builder("joined").Op("concat").Input("in", [p, p]).Output("out")
                  .SetAttr("axis", 0).Build().InferAndTryRun().SoleOutputBlob())
        return [picked, relu.InferAndTryRun().SoleOutputBlob(), joined]

    picked, relu, joined = job(params, ids)
    np.testing.assert_array_equal(picked, params[:, [3, 0]])
    np.testing.assert_array_equal(relu, np.maximum(params - 5, 0))
    np.testing.assert_array_equal(joined, np.concatenate([params, params]))

    def build(make):
        @flow.global_function()
        def bad(p: tp.Numpy.Placeholder((3, 4))) -> tp.Numpy:
            return make(p)
        bad(params)

    with pytest.raises(ValueError, match=r"op type 'myrelu' is not registered in Weir \(custom op libraries"):
        build(lambda p: flow.user_op_builder("x").Op("myrelu").Input("in", [p]).Output("out").Build())
    with pytest.raises(ValueError, match=r"op 'gather' has no input\(s\) \['table'\]; its inputs are \['params', 'indices'\]"):
        build(lambda p: flow.user_op_builder("x").Op("gather").Input("params", [p]).Input("table", [p]).Build())
    with pytest.raises(ValueError, match=r"op 'gather' has 1 output\(s\), but 2 were declared"):
        build(lambda p: flow.user_op_builder("x").Op("gather").Input("params", [p]).Input("indices", [flow.cast(p, flow.int32)])
              .Output("out", 2).Build().InferAndTryRun())


def test_user_op_builder_builds_oneflows_composite_op_types_from_weirs_ops():
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)

    def build(name, op_type):
        return flow.user_op_builder(name).Op(op_type)

    @flow.global_function()
    def job(p: tp.Numpy.Placeholder((3, 4))) -> List[tp.Numpy]:
        squares = build("sq", "multi_square_sum").Input("x", [p, p * 2.0]).Output("y").Build().RemoteBlobList()[0]
        like = flow.constant(0.0, shape=(1, 4))
        summed = (build("rsl", "reduce_sum_like").Input("x", [p]).Input("like", [like]).Output("y")
                  .Attr("axis", [0]).Build().InferAndTryRun().SoleOutputBlob())
        pieces = (build("split", "split_like").Input("in", [p]).Input("like", [flow.constant(0.0, shape=(1, 4)),
                                                                             flow.constant(0.0, shape=(2, 4))])
                  .Output("out", 2).Attr("axis", 0).Build().InferAndTryRun().RemoteBlobList())
        scaled = (build("fcs", "fused_cast_scale").Input("x", [flow.cast(p, flow.float64)])
                  .Input("scalar", [flow.constant(3.0, shape=(1,), dtype=flow.float32)]).Output("y").Build()
                  .RemoteBlobList()[0])
        absolute = (build("abs", "unary").Input("x", [p]).Output("y").SetAttr("unary_math_type", "Abs", "AttrTypeString")
                    .Build().RemoteBlobList()[0])
        logsig = build("ls", "unary").Input("x", [p]).Attr("unary_math_type", "LogSigmoid").Build().RemoteBlobList()[0]
        return [squares, summed, *pieces, scaled, absolute, logsig]

    squares, summed, first, rest, scaled, absolute, logsig = job(x)
    np.testing.assert_allclose(squares, [np.sum(x ** 2) * 5], rtol=1e-6)
    np.testing.assert_allclose(summed, x.sum(axis=0, keepdims=True), rtol=1e-6)
    np.testing.assert_array_equal(first, x[:1])
    np.testing.assert_array_equal(rest, x[1:])
    assert scaled.dtype == np.float32
    np.testing.assert_allclose(scaled, x * 3, rtol=1e-6)
    np.testing.assert_array_equal(absolute, np.abs(x))
    np.testing.assert_allclose(logsig, -np.log1p(np.exp(-x)), rtol=1e-5)

    def refused(make):
        @flow.global_function()
        def bad(p: tp.Numpy.Placeholder((3, 4))) -> tp.Numpy:
            return make(p)
        bad(x)

    with pytest.raises(ValueError, match=r"split_like cuts 'in' \(3, 4\) along axis 0 into the like blobs' lengths"):
        refused(lambda p: build("s", "split_like").Input("in", [p]).Input("like", [p, p]).Attr("axis", 0).Build()
                .RemoteBlobList()[0])
    with pytest.raises(ValueError, match=r"op 'multi_square_sum' needs input 'x'; it was given \['in'\]"):
        refused(lambda p: build("m", "multi_square_sum").Input("in", [p]).Build().RemoteBlobList()[0])
    with pytest.raises(ValueError, match=r"unary_math_type 'Cube' is not a unary function of Weir"):
        refused(lambda p: build("u", "unary").Input("x", [p]).Attr("unary_math_type", "Cube").Build().RemoteBlobList()[0])
    with pytest.raises(ValueError, match=r"op 'reduce_sum_like' has 1 output\(s\), but 2 were declared"):
        refused(lambda p: build("r", "reduce_sum_like").Input("x", [p]).Input("like", [p]).Output("y", 2).Build()
                .RemoteBlobList()[0])


def test_pow_with_a_blob_exponent_broadcasts_and_its_gradients_match_numpy():
    x = np.array([[0.5, 1.5, 2.0], [3.0, 0.25, 1.0]], np.float32)
    y = np.array([1.5, -0.5, 2.0], np.float32)
    grads = {}

    @flow.global_function(type="train")
    def job(a: tp.Numpy.Placeholder((2, 3)), b: tp.Numpy.Placeholder((3,))) -> List[tp.Numpy]:
        va = flow.get_variable("va", shape=(2, 3), initializer=flow.zeros_initializer()) + a
        vb = flow.get_variable("vb", shape=(3,), initializer=flow.zeros_initializer()) + b
        out = flow.math.pow(va, vb)
        flow.watch_diff(va, lambda d: grads.__setitem__("a", d.numpy()))
        flow.watch_diff(vb, lambda d: grads.__setitem__("b", d.numpy()))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(out)
        return [out, 2.0 ** vb, va ** 2]

    out, two_to, squared = job(x, y)
    np.testing.assert_allclose(out, x ** y, rtol=1e-6)
    np.testing.assert_allclose(two_to, 2.0 ** y, rtol=1e-6)
    np.testing.assert_allclose(squared, x ** 2, rtol=1e-6)
    np.testing.assert_allclose(grads["a"], y * x ** (y - 1), rtol=1e-5)
    np.testing.assert_allclose(grads["b"], (x ** y * np.log(x)).sum(axis=0), rtol=1e-5)

    @flow.global_function()
    def integers(a: tp.Numpy.Placeholder((3,), dtype=flow.int32)) -> tp.Numpy:
        return flow.math.pow(a, a)

    with pytest.raises(ValueError, match=r"\[pow\] expects f32 or f64 inputs \(a Blob exponent\), got i32"):
        integers(np.ones(3, np.int32))


def test_hard_activations_match_oneflows_values_and_gradients_at_and_beyond_their_bounds():
    x = np.array([-4.0, -3.0, -1.0, 0.5, 1.0, 3.0, 4.0], np.float32)
    grads = {}

    @flow.global_function(type="train")
    def job(a: tp.Numpy.Placeholder((7,))) -> List[tp.Numpy]:
        outs = []
        for name, fn in (("hardtanh", flow.nn.hardtanh), ("hardsigmoid", flow.nn.hardsigmoid),
                         ("hardswish", flow.nn.hardswish)):
            v = flow.get_variable(name, shape=(7,), initializer=flow.zeros_initializer()) + a
            flow.watch_diff(v, lambda d, name=name: grads.__setitem__(name, d.numpy()))
            outs.append(fn(v))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(outs)
        return outs

    tanh, sigmoid, swish = job(x)
    np.testing.assert_array_equal(tanh, np.clip(x, -1, 1))
    np.testing.assert_allclose(sigmoid, np.clip(x / 6 + 0.5, 0, 1), rtol=1e-6)
    np.testing.assert_allclose(swish, x * np.clip(x / 6 + 0.5, 0, 1), rtol=1e-6)
    # hardtanh passes nothing at its bounds (clip_by_value passes there): OneFlow's rule.
    np.testing.assert_array_equal(grads["hardtanh"], [0, 0, 0, 1, 0, 0, 0])
    np.testing.assert_allclose(grads["hardsigmoid"], [0, 0, 1 / 6, 1 / 6, 1 / 6, 0, 0], rtol=1e-6)
    np.testing.assert_allclose(grads["hardswish"], [0, 0, 1 / 6, 2 / 3, 5 / 6, 1, 1], rtol=1e-6)


def test_float16_batch_normalization_without_gamma_and_beta_uses_constants_of_its_dtype():
    # center=False, scale=False: gamma and beta are constants of x's dtype (they were filled as f64
    # into an f16 buffer, past its end).
    x = np.random.default_rng(3).normal(size=(6, 4)).astype(np.float32)

    @flow.global_function()
    def job(a: tp.Numpy.Placeholder((6, 4))) -> tp.Numpy:
        half = flow.layers.batch_normalization(flow.cast(a, flow.float16), axis=1, center=False, scale=False)
        return flow.cast(half, flow.float32)

    # A predict job normalizes with the moving statistics: mean 0, variance 1 at first.
    np.testing.assert_allclose(job(x), x / np.sqrt(1 + 0.001), atol=5e-3)

    # As OneFlow's, a 16-bit input has float32 variables; training moves the statistics in float32.
    flow.clear_default_session()

    @flow.global_function(type="train")
    def train(a: tp.Numpy.Placeholder((6, 4))) -> tp.Numpy:
        half = flow.layers.batch_normalization(flow.cast(a, flow.float16), axis=1, momentum=0.9, name="bn16")
        loss = flow.math.reduce_mean(flow.cast(half, flow.float32))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    train(x)
    variables = flow.get_all_variables()
    assert {variables[f"bn16-{v}"].numpy().dtype for v in ("gamma", "beta", "moving_mean", "moving_variance")} == {
        np.dtype(np.float32)}
    np.testing.assert_allclose(variables["bn16-moving_mean"].numpy(), 0.1 * x.astype(np.float16).mean(axis=0),
                               atol=1e-3)
    np.testing.assert_allclose(variables["bn16-beta"].numpy(), np.full(4, -0.1 / 4), rtol=1e-3)


def test_random_uniform_initializer_fills_an_integer_variable_with_integers_in_its_range():
    @flow.global_function()
    def job() -> tp.Numpy:
        return flow.get_variable("ints", shape=(2000,), dtype=flow.int8,
                                 initializer=flow.random_uniform_initializer(-6, 18, dtype=flow.int8))

    values = job()
    assert values.dtype == np.int8
    assert set(np.unique(values)) == set(range(-6, 18))


@pytest.mark.parametrize("slice_assign", ["experimental.logical_slice_assign", "slice_assign"])
def test_logical_slice_and_logical_slice_assign_read_and_write_a_split_variables_slice(slice_assign):
    flow.config.cpu_device_num(2)
    write_slice = flow.slice_assign if slice_assign == "slice_assign" else flow.experimental.logical_slice_assign
    value = np.arange(2 * 3, dtype=np.float32).reshape(2, 3) + 1

    def variable():
        return flow.get_variable("var", shape=(6, 8), initializer=flow.constant_initializer(0.0),
                                 distribute=flow.distribute.split(1))

    @flow.global_function()
    def write(v: tp.Numpy.Placeholder((2, 3))) -> None:
        with flow.scope.placement("cpu", "0:0-1"):
            write_slice(variable(), v, [(1, 5, 2), (-7, None, 3)])

    @flow.global_function()
    def read() -> List[tp.Numpy]:
        with flow.scope.placement("cpu", "0:0-1"):
            var = variable()
            return [flow.identity(var), flow.experimental.logical_slice(var, [(1, 5, 2), (-7, None, 3)])]

    write(value)
    whole, part = read()
    expected = np.zeros((6, 8), np.float32)
    expected[1:5:2, -7::3] = value
    np.testing.assert_array_equal(whole, expected)
    np.testing.assert_array_equal(part, value)


@pytest.mark.parametrize("chosen", ["names", "blobs", "function"])
def test_an_optimizers_variables_train_and_the_others_keep_their_values(chosen):
    x = np.ones((2, 3), np.float32)

    @flow.global_function(type="train")
    def job(p: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        w1 = flow.get_variable("w1", shape=(3, 1), dtype=flow.float32, initializer=flow.constant_initializer(1.0))
        w2 = flow.get_variable("w2", shape=(1,), dtype=flow.float32, initializer=flow.constant_initializer(2.0))
        loss = flow.math.reduce_sum(flow.matmul(p, w1) * w2)
        variables = {"names": ["w1"], "blobs": [w1], "function": lambda: ["w1"]}[chosen]
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0,
                           variables=variables).minimize(loss)
        return loss

    job(x)
    got = {name: v.numpy() for name, v in flow.get_all_variables().items()}
    np.testing.assert_allclose(got["w1"], np.full((3, 1), 1.0 - 0.1 * 2 * 2))  # d loss / d w1 = w2 · Σ rows = 4
    np.testing.assert_array_equal(got["w2"], [2.0])


def test_an_optimizers_variables_must_be_trainable_variables_of_the_job():
    def compile_with(variables):
        @flow.global_function(type="train")
        def job(p: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
            w = flow.get_variable("w", shape=(2,), dtype=flow.float32, initializer=flow.zeros_initializer())
            loss = flow.math.reduce_sum(p * w)
            flow.optimizer.Adam(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), variables=variables).minimize(loss)
            return loss
        job(np.ones(2, np.float32))

    with pytest.raises(ValueError, match=r"\[optimizer adam\] variables: 'v' is not a trainable floating variable of "
                                         r"job 'job' \(those are: w\)"):
        compile_with(["v"])
    flow.clear_default_session()
    with pytest.raises(ValueError, match="Adam: variables is empty"):
        compile_with([])
    with pytest.raises(TypeError, match="Adam: variables must be a list of variable names"):
        compile_with("w")


@pytest.mark.parametrize("loss_scale", [None, flow.optimizer.loss_scale.static_loss_scale(8.0)])
def test_a_combined_optimizer_trains_each_variable_with_its_own_optimizer(loss_scale):
    x = np.ones((2, 3), np.float32)

    @flow.global_function(type="train")
    def job(p: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        w1 = flow.get_variable("w1", shape=(3, 1), dtype=flow.float32, initializer=flow.constant_initializer(1.0))
        w2 = flow.get_variable("w2", shape=(1,), dtype=flow.float32, initializer=flow.constant_initializer(2.0))
        w3 = flow.get_variable("w3", shape=(1,), dtype=flow.float32, initializer=flow.constant_initializer(3.0))
        loss = flow.math.reduce_sum(flow.matmul(p, w1) * w2) + w3 * 0.5
        sgd = flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0, variables=["w1"])
        adam = flow.optimizer.Adam(flow.optimizer.PiecewiseConstantScheduler([], [0.01]), variables=lambda: [w2])
        flow.optimizer.CombinedOptimizer([sgd, adam], loss_scale_policy=loss_scale).minimize(loss)
        return loss

    job(x)
    got = {name: v.numpy() for name, v in flow.get_all_variables().items()}
    np.testing.assert_allclose(got["w1"], np.full((3, 1), 1.0 - 0.1 * 2 * 2))  # d loss / d w1 = w2 · Σ rows = 4
    # Adam's first step without bias correction: m = 0.1 g, v = 0.001 g², w -= lr m / (sqrt(v) + eps); g = 6.
    g = 6.0
    np.testing.assert_allclose(got["w2"], [2.0 - 0.01 * 0.1 * g / (np.sqrt(0.001 * g * g) + 1e-8)], rtol=1e-6)
    np.testing.assert_allclose(got["w2-m"], [0.1 * g], rtol=1e-6)
    np.testing.assert_array_equal(got["w3"], [3.0])  # no optimizer names it


def test_a_combined_optimizers_parts_take_disjoint_variables_and_no_loss_scale():
    def compile_with(make):
        @flow.global_function(type="train")
        def job(p: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
            w = flow.get_variable("w", shape=(2,), dtype=flow.float32, initializer=flow.zeros_initializer())
            v = flow.get_variable("v", shape=(2,), dtype=flow.float32, initializer=flow.zeros_initializer())
            loss = flow.math.reduce_sum(p * w + p * v)
            make().minimize(loss)
            return loss
        job(np.ones(2, np.float32))

    lr = flow.optimizer.PiecewiseConstantScheduler([], [0.1])
    with pytest.raises(ValueError, match=r"\[optimizer combined\] part 1 \(adam\) names variable 'w' that another part "
                                         "names too"):
        compile_with(lambda: flow.optimizer.CombinedOptimizer([flow.optimizer.SGD(lr, variables=["w"]),
                                                               flow.optimizer.Adam(lr, variables=["v", "w"])]))
    flow.clear_default_session()
    with pytest.raises(ValueError, match=r"part 1 \(adam\) names no variables"):
        compile_with(lambda: flow.optimizer.CombinedOptimizer([flow.optimizer.SGD(lr, variables=["w"]),
                                                               flow.optimizer.Adam(lr)]))
    with pytest.raises(ValueError, match=r"CombinedOptimizer: optimizers\[0\] \(SGD\) has a loss scale of its own"):
        flow.optimizer.CombinedOptimizer([flow.optimizer.SGD(lr, loss_scale_factor=2.0, variables=["w"])])
    with pytest.raises(TypeError, match=r"optimizers\[1\] must be a flow.optimizer optimizer other than CombinedOptimizer"):
        inner = flow.optimizer.CombinedOptimizer([flow.optimizer.SGD(lr, variables=["w"])])
        flow.optimizer.CombinedOptimizer([flow.optimizer.SGD(lr, variables=["v"]), inner])
    with pytest.raises(TypeError, match="optimizers must be a non-empty list of optimizers"):
        flow.optimizer.CombinedOptimizer([])


def test_nn_layer_norm_with_the_callers_gamma_and_beta_and_the_layer_built_on_it():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    gamma = rng.standard_normal(4).astype(np.float32)
    beta = rng.standard_normal(4).astype(np.float32)

    @flow.global_function()
    def job(p: tp.Numpy.Placeholder((2, 3, 4)), g: tp.Numpy.Placeholder((4,)), b: tp.Numpy.Placeholder((4,))
            ) -> List[tp.Numpy]:
        return [flow.nn.layer_norm(p, g, b), flow.nn.layer_norm(p, begin_norm_axis=-1, epsilon=1e-3, name="ln"),
                flow.layers.layer_norm(p)]

    with_params, last_axis, layer = job(x, gamma, beta)
    over_rest = (x - x.mean(axis=(1, 2), keepdims=True)) / np.sqrt(x.var(axis=(1, 2), keepdims=True) + 1e-5)
    np.testing.assert_allclose(with_params, over_rest * gamma + beta, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(last_axis, (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-3),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(layer, over_rest, rtol=1e-4, atol=1e-5)  # gamma ones, beta zeros at first
    with pytest.raises(ValueError, match=r"flow.nn.layer_norm: gamma must have the shape inputs.shape\[begin_params_axis:\] "
                                         r"= \(4,\), got \(3,\)"):
        @flow.global_function()
        def bad(p: tp.Numpy.Placeholder((2, 3, 4)), g: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
            return flow.nn.layer_norm(p, g)
        bad(x, np.ones(3, np.float32))


@pytest.mark.parametrize("low", [flow.float16, flow.bfloat16])
def test_nn_layer_norm_of_a_16_bit_input_normalizes_in_float32_and_rounds_once(low):
    rng = np.random.default_rng(4)
    x = (rng.integers(-128, 128, (40, 64)) / 128).astype(np.float32)  # exact in both 16-bit dtypes
    gamma = (rng.integers(2, 7, 64) / 4).astype(np.float32)  # exact in both 16-bit dtypes

    @flow.global_function()
    def job(p: tp.Numpy.Placeholder((40, 64)), g: tp.Numpy.Placeholder((64,))) -> tp.Numpy:
        y = flow.nn.layer_norm(flow.cast(p, low), flow.cast(g, low), begin_norm_axis=-1)
        assert y.dtype == low
        return flow.cast(y, flow.float32)

    x64 = x.astype(np.float64)
    expected = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5) * gamma
    got = job(x, gamma)
    # One rounding to the 16-bit dtype: within half a unit in the last place (plus float32's error).
    half_ulp = np.abs(expected) * (2.0 ** -11 if low == flow.float16 else 2.0 ** -8)
    assert np.all(np.abs(got - expected) <= half_ulp + 1e-5)


def _np_conv3d(x, w, strides, pads, dilations, groups):
    """Direct 3-D cross-correlation, NCDHW; pads: ((before, after) per spatial axis)."""
    x = np.pad(x, [(0, 0), (0, 0), *pads])
    n, c, *size = x.shape
    out_channels, per_group, *taps = w.shape
    outs = [(size[a] - (taps[a] - 1) * dilations[a] - 1) // strides[a] + 1 for a in range(3)]
    y = np.zeros((n, out_channels, *outs))
    per_out = out_channels // groups
    for o in range(out_channels):
        g = o // per_out
        for index in np.ndindex(*outs):
            window = x[:, g * per_group:(g + 1) * per_group,
                       index[0] * strides[0]:index[0] * strides[0] + (taps[0] - 1) * dilations[0] + 1:dilations[0],
                       index[1] * strides[1]:index[1] * strides[1] + (taps[1] - 1) * dilations[1] + 1:dilations[1],
                       index[2] * strides[2]:index[2] * strides[2] + (taps[2] - 1) * dilations[2] + 1:dilations[2]]
            y[(slice(None), o, *index)] = np.einsum("ncdhw,cdhw->n", window, w[o])
    return y


def _same(size, stride, tap, dilation):
    total = max((-(-size // stride) - 1) * stride + (tap - 1) * dilation + 1 - size, 0)
    return (total // 2, total - total // 2)


def _np_pool3d(x, ksize, strides, pads, kind, ceil_mode=False):
    """Direct 3-D pooling of NCDHW x with (before, after) pads per spatial axis: y and d sum(y) / dx
    (the max's gradient to the first largest element, the average over the real elements)."""
    spatial = x.shape[2:]
    out = []
    for size, k, s, (b, a) in zip(spatial, ksize, strides, pads):
        span = size + b + a - k
        o = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (o - 1) * s >= size + b:
            o -= 1
        out.append(o)
    y = np.zeros(x.shape[:2] + tuple(out))
    dx = np.zeros(x.shape)
    for n, c in np.ndindex(*x.shape[:2]):
        for o in np.ndindex(*out):
            box = tuple(slice(max(i * s - b, 0), min(i * s - b + k, size))
                        for i, s, (b, _), k, size in zip(o, strides, pads, ksize, spatial))
            window = x[(n, c) + box]
            if kind == "max":
                y[(n, c) + o] = window.max()
                at = np.unravel_index(window.argmax(), window.shape)
                dx[(n, c) + tuple(part.start + i for part, i in zip(box, at))] += 1
            else:
                y[(n, c) + o] = window.mean()
                dx[(n, c) + box] += 1.0 / window.size
    return y, dx


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("shape,ksize,strides,padding,pads,ceil_mode,data_format", [
    ((2, 3, 5, 6, 7), 3, 2, "SAME", [(1, 1), (0, 1), (1, 1)], False, "NCDHW"),
    ((1, 2, 6, 4, 5), (2, 3, 2), (2, 1, 2), "VALID", [(0, 0)] * 3, False, "NDHWC"),
    ((1, 2, 7, 5, 6), (3, 2, 3), (2, 2, 2), [[0, 0], [0, 0], [1, 1], [1, 0], [0, 1]], [(1, 1), (1, 0), (0, 1)], False,
     "NCDHW"),
    ((1, 1, 6, 6, 6), 2, 2, "VALID", [(0, 0)] * 3, False, "NCDHW"),
    ((1, 2, 7, 5, 5), 2, 2, "VALID", [(0, 0)] * 3, True, "NCDHW"),  # ceil_mode: partial windows at the ends
])
def test_max_and_avg_pool3d_match_direct_pooling_and_their_gradients(kind, shape, ksize, strides, padding, pads,
                                                                     ceil_mode, data_format):
    rng = np.random.default_rng(13)
    x = rng.random(shape)
    grads = []
    pool = flow.nn.max_pool3d if kind == "max" else flow.nn.avg_pool3d

    @flow.global_function(type="train")
    def job(p: tp.Numpy.Placeholder(shape, dtype=flow.double)) -> tp.Numpy:
        v = flow.get_variable("v", shape=shape, dtype=flow.double, initializer=flow.zeros_initializer())
        xv = v + p
        y = pool(xv, ksize, strides, padding, data_format=data_format, ceil_mode=ceil_mode, name="pooled")
        flow.watch_diff(xv, grads.append)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1e-3]), momentum=0).minimize(y)
        return y

    y = job(x)
    channels_first = data_format == "NCDHW"
    triple = [ksize] * 3 if isinstance(ksize, int) else list(ksize)
    steps = [strides] * 3 if isinstance(strides, int) else list(strides)
    xt = x if channels_first else np.moveaxis(x, -1, 1)
    y_np, dx_np = _np_pool3d(xt, triple, steps, pads, kind, ceil_mode)
    if not channels_first:
        y_np, dx_np = np.moveaxis(y_np, 1, -1), np.moveaxis(dx_np, 1, -1)
    np.testing.assert_allclose(y, y_np, rtol=1e-12)
    np.testing.assert_allclose(grads[0], dx_np, rtol=1e-12)


def test_pool3d_refuses_bad_arguments():
    with pytest.raises(ValueError, match=r"flow.nn.max_pool3d: input must be 5-D, got shape \(2, 3, 4, 4\)"):
        @flow.global_function()
        def flat(p: tp.Numpy.Placeholder((2, 3, 4, 4))) -> tp.Numpy:
            return flow.nn.max_pool3d(p, 2, 2, "VALID")
        flat(np.zeros((2, 3, 4, 4), np.float32))
    with pytest.raises(ValueError, match=r"flow.nn.avg_pool3d: data_format must be 'NCDHW' or 'NDHWC', got 'NCHW'"):
        @flow.global_function()
        def layout(p: tp.Numpy.Placeholder((1, 1, 4, 4, 4))) -> tp.Numpy:
            return flow.nn.avg_pool3d(p, 2, 2, "VALID", data_format="NCHW")
        layout(np.zeros((1, 1, 4, 4, 4), np.float32))
    with pytest.raises(ValueError, match=r"flow.nn.max_pool3d: the input's depth 2 \(padded 2\) is smaller than the "
                                         r"window 3"):
        @flow.global_function()
        def shallow(p: tp.Numpy.Placeholder((1, 1, 2, 4, 4))) -> tp.Numpy:
            return flow.nn.max_pool3d(p, 3, 1, "VALID")
        shallow(np.zeros((1, 1, 2, 4, 4), np.float32))


@pytest.mark.parametrize("strides,padding,dilations,groups,data_format", [
    (1, "VALID", 1, 1, "NCDHW"), ((2, 1, 2), "SAME", 1, 1, "NCDHW"), (1, "SAME", (2, 1, 1), 2, "NCDHW"),
    (1, ((1, 0), (0, 1), (1, 1)), 1, 1, "NDHWC"), (2, "SAME", 1, 1, "NDHWC")])
def test_conv3d_matches_a_direct_3d_convolution_and_its_gradients_flow(strides, padding, dilations, groups, data_format):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 4, 5, 6, 5))  # NCDHW
    w = rng.standard_normal((6, 4 // groups, 3, 2, 3))
    s = [strides] * 3 if isinstance(strides, int) else list(strides)
    d = [dilations] * 3 if isinstance(dilations, int) else list(dilations)
    if padding == "SAME":
        pads = [_same(x.shape[2 + a], s[a], w.shape[2 + a], d[a]) for a in range(3)]
    elif padding == "VALID":
        pads = [(0, 0)] * 3
    else:
        pads = [tuple(p) for p in padding]
    expected = _np_conv3d(x, w, s, pads, d, groups)
    to_last = (0, 2, 3, 4, 1)
    x_in = x if data_format == "NCDHW" else x.transpose(to_last)
    w_in = w if data_format == "NCDHW" else w.transpose(to_last)
    grads = {}

    @flow.global_function(type="train")
    def job(p: tp.Numpy.Placeholder(x_in.shape, dtype=flow.double), f: tp.Numpy.Placeholder(w_in.shape, dtype=flow.double)
            ) -> tp.Numpy:
        v = flow.get_variable("v", shape=(1,), dtype=flow.double, initializer=flow.zeros_initializer())
        pv, fv = p + v, f + v
        flow.watch_diff(pv, lambda g: grads.setdefault("x", g.numpy()))
        flow.watch_diff(fv, lambda g: grads.setdefault("w", g.numpy()))
        y = flow.nn.conv3d(pv, fv, strides, padding, data_format=data_format, dilations=dilations, groups=groups)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(
            flow.math.reduce_sum(y * y) * 0.5)
        return y

    y = job(x_in, w_in)
    got = y if data_format == "NCDHW" else y.transpose(0, 4, 1, 2, 3)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)
    # d(½Σy²)/dw by central differences of the direct convolution, at a few weights.
    gw = grads["w"] if data_format == "NCDHW" else grads["w"].transpose(0, 4, 1, 2, 3)
    for index in [(0, 0, 0, 0, 0), (5, 4 // groups - 1, 2, 1, 2), (3, 1, 1, 0, 1)]:
        up, down = w.copy(), w.copy()
        up[index] += 1e-6
        down[index] -= 1e-6
        numeric = (0.5 * (_np_conv3d(x, up, s, pads, d, groups) ** 2).sum()
                   - 0.5 * (_np_conv3d(x, down, s, pads, d, groups) ** 2).sum()) / 2e-6
        np.testing.assert_allclose(gw[index], numeric, rtol=1e-5)
    assert grads["x"].shape == x_in.shape


def test_layers_conv3d_makes_its_variables_and_trains():
    @flow.global_function(type="train")
    def job(p: tp.Numpy.Placeholder((2, 3, 4, 4, 4))) -> tp.Numpy:
        y = flow.layers.conv3d(p, 5, kernel_size=3, padding="SAME", activation=flow.nn.relu, name="c3")
        loss = flow.math.reduce_mean(y)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return y

    y = job(np.ones((2, 3, 4, 4, 4), np.float32))
    assert y.shape == (2, 5, 4, 4, 4)
    variables = flow.get_all_variables()
    assert variables["c3-weight"].numpy().shape == (5, 3, 3, 3, 3) and variables["c3-bias"].numpy().shape == (5,)
    assert not np.allclose(variables["c3-bias"].numpy(), 0)  # trained: relu's gradient reached the bias


def test_random_mask_like_keeps_one_minus_rate_and_draws_anew_each_call():
    @flow.global_function()
    def job(p: tp.Numpy.Placeholder((40, 50))) -> tp.Numpy:
        return flow.nn.random_mask_like(p, rate=0.3, seed=7)

    first, second = job(np.zeros((40, 50), np.float32)), job(np.zeros((40, 50), np.float32))
    assert first.dtype == np.int8 and first.shape == (40, 50)
    assert set(np.unique(first)) <= {0, 1}
    assert abs(first.mean() - 0.7) < 0.05  # 2000 draws: 0.7 +- 0.01 (one standard deviation)
    assert not np.array_equal(first, second)
    with pytest.raises(ValueError, match=r"flow.nn.random_mask_like: rate must be a number in \[0, 1\), got 1.0"):
        @flow.global_function()
        def bad(p: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
            return flow.nn.random_mask_like(p, rate=1.0)
        bad(np.zeros(2, np.float32))


def test_bernoulli_draws_one_with_probability_x_anew_each_call_and_repeats_with_a_seed():
    probabilities = np.tile(np.array([0.0, 0.25, 0.5, 1.0], np.float32), (2000, 1))  # (2000, 4)

    def make():
        @flow.global_function()
        def job(p: tp.Numpy.Placeholder((2000, 4))) -> Tuple[tp.Numpy, tp.Numpy]:
            return flow.random.bernoulli(p, seed=11), flow.random.bernoulli(p, dtype=flow.int32)
        return job

    job = make()
    first, as_ints = job(probabilities)
    second, _ = job(probabilities)
    assert first.dtype == np.float32 and first.shape == (2000, 4) and as_ints.dtype == np.int32
    for draws in (first, as_ints):
        assert set(np.unique(draws)) <= {0, 1}
        assert draws[:, 0].sum() == 0 and draws[:, 3].sum() == 2000  # p = 0 and p = 1 exactly
        # 2000 draws each: one standard deviation is 0.0097 (p = 0.25) and 0.011 (p = 0.5).
        assert abs(draws[:, 1].mean() - 0.25) < 0.04 and abs(draws[:, 2].mean() - 0.5) < 0.045
    assert not np.array_equal(first, second)  # anew each call
    flow.clear_default_session()
    again, _ = make()(probabilities)
    np.testing.assert_array_equal(again, first)  # the same seed: the same first call

    @flow.global_function()
    def scalar(p: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return flow.random.bernoulli(flow.math.reduce_max(p), dtype=flow.int8)

    one = scalar(np.array([0.0, 1.0, 0.5], np.float32))
    assert one.shape == (1,) and one.dtype == np.int8 and one[0] == 1  # a full reduction: (1,), as in OneFlow
    with pytest.raises(TypeError, match="flow.random.bernoulli: x must hold floating-point probabilities .* got weir.int32"):
        @flow.global_function()
        def bad(p: tp.Numpy.Placeholder((3,), dtype=flow.int32)) -> tp.Numpy:
            return flow.random.bernoulli(p)
        bad(np.zeros(3, np.int32))


def test_random_permutations_are_uniform_and_new_each_call():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((3, 2))) -> tp.Numpy:
        return flow.random.generate_random_batch_permutation_indices(x, seed=5)

    counts = {}
    for _ in range(600):
        order = job(np.zeros((3, 2), np.float32))
        assert order.dtype == np.int32 and sorted(order.tolist()) == [0, 1, 2]
        counts[tuple(order)] = counts.get(tuple(order), 0) + 1
    # Six orders, 100 expected each (one standard deviation 9.1): each within five of them.
    assert len(counts) == 6 and all(55 <= c <= 145 for c in counts.values()), counts
    with pytest.raises(ValueError, match="generate_random_batch_permutation_indices: value must have a batch axis"):
        @flow.global_function()
        def bad(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
            return flow.random.generate_random_batch_permutation_indices(flow.reshape(flow.math.reduce_sum(x), ()))
        bad(np.zeros(3, np.float32))


def test_shuffle_reorders_rows_and_sends_each_row_gradient_back_where_it_came_from():
    start = np.arange(12, dtype=np.float32).reshape(6, 2)
    weights = np.arange(1, 13, dtype=np.float32).reshape(6, 2)

    @flow.global_function(type="train")
    def job(w: tp.Numpy.Placeholder((6, 2))) -> tp.Numpy:
        x = flow.get_variable("x", shape=(6, 2), dtype=flow.float, initializer=flow.constant_initializer(0.0))
        shuffled = flow.random.shuffle(x, seed=3)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1.0]), momentum=0).minimize(
            flow.math.reduce_sum(shuffled * w))
        return shuffled

    flow.load_variables({"x": start})
    shuffled = job(weights)
    order = [int(row[0]) // 2 for row in shuffled]  # row i of the result is row order[i] of x
    assert sorted(order) == list(range(6)) and order != list(range(6))
    np.testing.assert_array_equal(shuffled, start[order])
    # d/dx sum(x[order] * w): row order[i] of x gets w's row i.
    expected = start.copy()
    expected[order] -= weights
    np.testing.assert_array_equal(flow.get_all_variables()["x"].numpy(), expected)


@pytest.mark.parametrize("m1,m2,m3", [(1.0, 0.5, 0.0), (4.0, 0.0, 0.0), (1.0, 0.0, 0.35), (1.2, 0.3, 0.1)])
def test_combined_margin_loss_matches_numpy_with_its_gradient(m1, m2, m3):
    rng = np.random.default_rng(5)
    x = rng.uniform(-0.9, 0.9, size=(5, 7))
    labels = np.array([0, 6, 3, 3, 1], dtype=np.int32)
    grads = []

    @flow.global_function(type="train")
    def job(p: tp.Numpy.Placeholder((5, 7), dtype=flow.double),
            label: tp.Numpy.Placeholder((5,), dtype=flow.int32)) -> tp.Numpy:
        v = flow.get_variable("v", shape=(1,), dtype=flow.double, initializer=flow.zeros_initializer())
        pv = p + v
        flow.watch_diff(pv, grads.append)
        y = flow.combined_margin_loss(pv, label, m1=m1, m2=m2, m3=m3)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(y * y)
        return y

    rows = np.arange(5)
    expected = x.copy()
    theta = np.arccos(x[rows, labels])
    expected[rows, labels] = np.cos(m1 * theta + m2) - m3
    y = job(x, labels)
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-14)
    dx = 2 * expected  # d(y * y)/dy, through the margin at the label entries
    dx[rows, labels] *= m1 * np.sin(m1 * theta + m2) / np.sin(theta)
    np.testing.assert_allclose(grads[0], dx, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("label_dtype", [flow.int32, flow.int64])
def test_combined_margin_loss_in_float32_with_either_label_dtype_and_bad_shapes(label_dtype):
    x = np.random.default_rng(8).uniform(-0.9, 0.9, size=(3, 4)).astype(np.float32)
    labels = np.array([2, 0, 3], dtype=flow.convert_oneflow_dtype_to_numpy_dtype(label_dtype))

    @flow.global_function()
    def job(p: tp.Numpy.Placeholder((3, 4)), label: tp.Numpy.Placeholder((3,), dtype=label_dtype)) -> Tuple[
            tp.Numpy, tp.Numpy]:
        return flow.combined_margin_loss(p, label, m1=1.5, m2=0.3, m3=0.2), flow.combined_margin_loss(p, label)

    y, unchanged = job(x, labels)
    expected = x.astype(np.float64)
    rows = np.arange(3)
    expected[rows, labels] = np.cos(1.5 * np.arccos(expected[rows, labels]) + 0.3) - 0.2
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(unchanged, x)  # the defaults (1, 0, 0) leave x as it is

    def build(x_shape, x_dtype, label_shape):
        @flow.global_function()
        def bad(p: tp.Numpy.Placeholder(x_shape, dtype=x_dtype),
                label: tp.Numpy.Placeholder(label_shape, dtype=label_dtype)) -> tp.Numpy:
            return flow.combined_margin_loss(p, label, m2=0.5)

        bad(np.zeros(x_shape, flow.convert_oneflow_dtype_to_numpy_dtype(x_dtype)),
            np.zeros(label_shape, labels.dtype))

    with pytest.raises(Exception, match=r"\[combined_margin_loss\] x must be \(N, C\), got \(3,4,1\)"):
        build((3, 4, 1), flow.float32, (3,))
    with pytest.raises(Exception, match=r"\[combined_margin_loss\] labels must be \(3\) for x \(3,4\), got \(2\)"):
        build((3, 4), flow.float32, (2,))
    with pytest.raises(Exception, match=r"\[combined_margin_loss\] expects f32 or f64 x, got i32"):
        build((3, 4), flow.int32, (3,))


def test_combined_margin_loss_trains_an_arcface_head_and_refuses_bad_labels_and_margins():
    rng = np.random.default_rng(7)
    centers = rng.normal(size=(4, 8))
    labels = np.repeat(np.arange(4, dtype=np.int32), 8)
    features = (centers[labels] + 0.3 * rng.normal(size=(32, 8))).astype(np.float32)

    @flow.global_function(type="train")
    def train(f: tp.Numpy.Placeholder((32, 8)), label: tp.Numpy.Placeholder((32,), dtype=flow.int32)) -> tp.Numpy:
        w = flow.get_variable("w", shape=(8, 4), initializer=flow.random_normal_initializer(seed=1))
        cosine = flow.matmul(flow.math.l2_normalize(f, axis=1), flow.math.l2_normalize(w, axis=0))
        logits = flow.combined_margin_loss(cosine, label, m2=0.3) * 16.0
        loss = flow.math.reduce_mean(flow.nn.sparse_softmax_cross_entropy_with_logits(label, logits))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    losses = [float(train(features, labels)) for _ in range(60)]
    assert losses[-1] < 0.25 * losses[0]
    bad = labels.copy()
    bad[5] = 4
    with pytest.raises(Exception, match=r"\[combined_margin_loss\] label 4 at row 5 is outside \[0, 4\)"):
        train(features, bad)
    with pytest.raises(TypeError, match=r"flow.combined_margin_loss: m2 must be a number, got '0.5'"):
        @flow.global_function()
        def bad_margin(c: tp.Numpy.Placeholder((2, 3)), label: tp.Numpy.Placeholder((2,), dtype=flow.int32)) -> tp.Numpy:
            return flow.combined_margin_loss(c, label, m2="0.5")

        bad_margin(np.zeros((2, 3), np.float32), np.zeros(2, np.int32))


def test_experimental_square_sum_is_the_sum_of_squares_with_its_gradient():
    x = np.random.default_rng(6).uniform(-2, 2, size=(3, 4))
    y, dx = _value_and_gradient(flow.experimental.square_sum, x)
    assert y.shape == (1,)
    np.testing.assert_allclose(y, [np.sum(x * x)], rtol=1e-12)
    np.testing.assert_allclose(dx, 2 * x, rtol=1e-12)
    with pytest.raises(TypeError, match=r"flow.experimental.square_sum: argument 'x' must be a blob"):
        flow.experimental.square_sum(x)


def test_experimental_name_scope_prefixes_variables_as_flow_name_scope_does():
    @flow.global_function()
    def job() -> tp.Numpy:
        with flow.experimental.name_scope("block"):
            return flow.get_variable("w", shape=(2,), initializer=flow.ones_initializer())

    np.testing.assert_array_equal(job(), [1, 1])
    assert "block-w" in flow.get_all_variables()


@pytest.mark.filterwarnings("ignore:flow.FixedTensorDef is deprecated:DeprecationWarning")
def test_experimental_enable_typing_check_refuses_unannotated_job_functions_decorated_after_it():
    def unannotated(x=flow.FixedTensorDef((2,))):
        return x + 1

    def annotated(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        return x + 1

    try:
        flow.experimental.enable_typing_check(True)
        with pytest.raises(TypeError, match=r"unannotated\(\): typing check is enabled"):
            flow.global_function()(unannotated)
        np.testing.assert_array_equal(flow.global_function()(annotated)(np.ones(2, np.float32)), [2, 2])
    finally:
        flow.experimental.enable_typing_check(False)
    legacy = flow.global_function()(unannotated)  # off again: a legacy placeholder, a future
    np.testing.assert_array_equal(legacy(np.ones(2, np.float32)).get().numpy(), [2, 2])
    with pytest.raises(ValueError, match=r"enable_typing_check: expected True or False, got 'yes'"):
        flow.experimental.enable_typing_check("yes")


@pytest.mark.parametrize("dtype,out_idx", [(flow.int32, flow.int32), (flow.int64, flow.int64),
                                           (flow.float32, flow.int32), (flow.float64, flow.int64)])
def test_experimental_unique_with_counts_matches_numpy(dtype, out_idx):
    rng = np.random.default_rng(9)
    x = rng.integers(0, 32, size=1024).astype(flow.convert_oneflow_dtype_to_numpy_dtype(dtype))

    @flow.global_function()
    def job(v: tp.Numpy.Placeholder((1024,), dtype=dtype)) -> Tuple[tp.Numpy, tp.Numpy, tp.Numpy, tp.Numpy]:
        return flow.experimental.unique_with_counts(v, out_idx=out_idx)

    y, idx, count, num_unique = job(x)
    index_dtype = flow.convert_oneflow_dtype_to_numpy_dtype(out_idx)
    assert y.dtype == x.dtype and idx.dtype == count.dtype == num_unique.dtype == index_dtype
    assert y.shape == idx.shape == count.shape == (1024,) and num_unique.shape == (1,)
    values, counts = np.unique(x, return_counts=True)
    n = int(num_unique[0])
    assert n == len(values)
    np.testing.assert_array_equal(y[:n], values)  # ascending
    np.testing.assert_array_equal(count[:n], counts)
    np.testing.assert_array_equal(y[idx], x)
    assert not y[n:].any() and not count[n:].any()


def test_experimental_unique_with_counts_keeps_nan_and_signed_zero_as_one_value_each_and_refuses_bad_input():
    x = np.array([2.0, np.nan, -0.0, 1.0, 0.0, np.nan, 2.0], np.float32)

    @flow.global_function()
    def job(v: tp.Numpy.Placeholder((7,))) -> Tuple[tp.Numpy, tp.Numpy, tp.Numpy, tp.Numpy]:
        return flow.experimental.unique_with_counts(v)

    y, idx, count, num_unique = job(x)
    assert num_unique.tolist() == [4]
    np.testing.assert_array_equal(y[:4], [-0.0, 1.0, 2.0, np.nan])
    assert np.signbit(y[0])  # the first occurrence of the zero: -0.0
    np.testing.assert_array_equal(count, [2, 1, 2, 2, 0, 0, 0])
    np.testing.assert_array_equal(idx, [2, 3, 0, 1, 0, 3, 2])
    with pytest.raises(Exception, match=r"\[unique_with_counts\] x must be one-dimensional, got \(2,3\)"):
        @flow.global_function()
        def matrix(v: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
            return flow.experimental.unique_with_counts(v)[0]

        matrix(np.zeros((2, 3), np.float32))
    with pytest.raises(Exception, match=r"\[unique_with_counts\] out_idx must be i32 or i64, got f32"):
        @flow.global_function()
        def float_indices(v: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
            return flow.experimental.unique_with_counts(v, out_idx=flow.float32)[1]

        float_indices(np.zeros(3, np.float32))


def _gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def test_the_gpt_programs_fused_ops_and_sequence_matmul_match_numpy():
    rng = np.random.default_rng(10)
    h = rng.normal(size=(2, 3, 4)).astype(np.float32)
    w = rng.normal(size=(5, 4)).astype(np.float32)
    b = rng.normal(size=(5,)).astype(np.float32)
    scores = rng.normal(size=(2, 2, 3, 3)).astype(np.float32)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3, 4)), weight: tp.Numpy.Placeholder((5, 4)), bias: tp.Numpy.Placeholder((5,)),
            s: tp.Numpy.Placeholder((2, 2, 3, 3))) -> Tuple[tp.Numpy, tp.Numpy, tp.Numpy, tp.Numpy]:
        linear = flow.matmul(flow.amp_white_identity(x), weight, transpose_b=True, alpha=0.5)  # a layer over a sequence
        return (linear, flow.nn.fused_bias_add_gelu(linear, bias, data_format="NHC"),
                flow.nn.fused_bias_add_dropout(linear, bias, data_format="NHC", rate=0.3),  # a predict job: no dropout
                flow.math.fused_scale_tril_softmax_dropout(s, diagonal=0, scale=0.5, fill_value=float("-inf"), rate=0.3))

    linear, gelu, biased, weights = job(h, w, b, scores)
    expected = 0.5 * h @ w.T
    np.testing.assert_allclose(linear, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gelu, _gelu(expected + b), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(biased, expected + b, rtol=1e-6, atol=1e-6)
    masked = np.where(np.tril(np.ones((3, 3), bool)), 0.5 * scores, -np.inf)
    softmax = np.exp(masked - masked.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(weights, softmax / softmax.sum(axis=-1, keepdims=True), rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match=r"flow.matmul: transpose_a is not supported for a 3-D a and a 2-D b"):
        @flow.global_function()
        def transposed(x: tp.Numpy.Placeholder((2, 3, 4)), weight: tp.Numpy.Placeholder((3, 5))) -> tp.Numpy:
            return flow.matmul(x, weight, transpose_a=True)

        transposed(h, np.zeros((3, 5), np.float32))


def test_the_gpt_programs_fused_dropouts_drop_and_scale_in_train_jobs_and_train_through_the_sequence_matmul():
    x = np.ones((4, 64, 8), np.float32)
    seen = []

    def keep(value: tp.Numpy):
        seen.append(value)

    @flow.global_function(type="train")
    def train(v: tp.Numpy.Placeholder((4, 64, 8))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(8, 8), initializer=flow.constant_initializer(0.125), parallel_distribution=[])
        b = flow.get_variable("b", shape=(8,), initializer=flow.zeros_initializer(), nd_sbp=["B"])
        dropped = flow.nn.fused_bias_add_dropout(flow.matmul(v, w), b, data_format="NHC", rate=0.25)
        flow.watch(dropped, keep)
        loss = flow.math.reduce_mean(flow.math.square(dropped - 2.0))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.05]), momentum=0).minimize(loss)
        return loss

    losses = [float(train(x)) for _ in range(30)]
    kept = seen[0] != 0
    assert 0.6 < kept.mean() < 0.9  # a quarter dropped
    np.testing.assert_allclose(seen[0][kept], 1.0 / 0.75, rtol=1e-5)  # the rest scaled by 1/(1 - rate)
    assert losses[-1] < 0.85 * losses[0]  # toward its floor: a dropped element's (0 - 2)^2 stays


def test_oneflow_0_4_layouts_and_hierarchies_of_one_dimension_are_accepted_and_2d_ones_refused():
    @flow.global_function()
    def job() -> Tuple[tp.Numpy, tp.Numpy]:
        with flow.scope.placement("cpu", "0:0", None), flow.scope.placement("cpu", "0:0", [1]):
            split = flow.get_variable("split", shape=(2,), initializer=flow.ones_initializer(), parallel_distribution=["S(0)"])
            whole = flow.get_variable("whole", shape=(2,), initializer=flow.ones_initializer(), nd_sbp=["B", "B"])
            return split, whole

    np.testing.assert_array_equal(job()[0], [1, 1])
    with pytest.raises(NotImplementedError, match=r"hierarchy \(2, 2\) is 2-D"):
        flow.scope.placement("gpu", "0:0-3", (2, 2))
    for layout, error, message in [(["S(0)", "B"], NotImplementedError, r"is a 2-D layout"),
                                   (["X"], ValueError, r"expected entries like 'B' or 'S\(0\)', got \['X'\]")]:
        @flow.global_function()
        def bad() -> tp.Numpy:
            return flow.get_variable("bad", shape=(2,), parallel_distribution=layout)

        with pytest.raises(error, match=message):
            bad()
        flow.clear_default_session()


def test_current_scope_describes_its_placement_as_oneflow_does():
    seen = []

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4,))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-1"):
            seen.append(flow.current_scope().device_parallel_desc_symbol)
            return x + 1

    job(np.zeros(4, np.float32))
    assert seen[0].device_tag == "cpu" and seen[0].parallel_num == 2
    assert seen[0].machine_id2device_id_list == {0: [0, 1]}


def test_experimental_scope_config_says_once_what_weir_does_not_do(capfd):
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        with flow.experimental.scope.config(checkpointing=True), flow.experimental.scope.config(checkpointing=True):
            return x * 2

    np.testing.assert_array_equal(job(np.ones(2, np.float32)), [2, 2])
    assert capfd.readouterr().err.count("checkpointing=True): Weir keeps the activations") == 1


def test_pads_expand_diag_smooth_l1_selu_softsign_logical_polyval_one_hot_axis_top_k_beyond_the_axis():
    # APIs OneFlow's own op tests call that Weir lacked, each against numpy.
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3, 4, 5)), v: tp.Numpy.Placeholder((3,)), m: tp.Numpy.Placeholder((3, 4)),
            i: tp.Numpy.Placeholder((2, 3), dtype=flow.int32)) -> List[tp.Numpy]:
        return [flow.zero_pad2d(x, (1, 2, 0, 1)), flow.expand(v, [2, -1]), flow.diag(v, 1), flow.diag(m, -1),
                flow.diag(m), flow.smooth_l1_loss(v, v * 0.2, 0.5), flow.nn.selu(v), flow.nn.softsign(v),
                flow.math.logical_and(i, i - 1), flow.math.logical_or(i, 0), flow.math.logical_xor(i, i - 1),
                flow.math.polyval([1.0, -2.0, 3.0], v), flow.one_hot(i, 4, axis=0), flow.math.top_k(m, 9),
                flow.diag(flow.cast(v, flow.int8), -2)]

    x = np.random.default_rng(0).random((2, 3, 4, 5), dtype=np.float32)
    v = np.array([-1.5, 0.3, 2.0], np.float32)
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    i = np.array([[0, 1, 2], [3, 1, 0]], np.int32)
    (padded, expanded, diag_up, diag_low, diag_main, smooth, selu, softsign, both, either, one, poly, hot,
     top, diag_int8) = job(x, v, m, i)
    assert diag_int8.dtype == np.int8
    np.testing.assert_array_equal(diag_int8, np.diag(v.astype(np.int8), -2))
    np.testing.assert_array_equal(padded, np.pad(x, ((0, 0), (0, 0), (0, 1), (1, 2))))
    np.testing.assert_array_equal(expanded, np.broadcast_to(v, (2, 3)))
    np.testing.assert_array_equal(diag_up, np.diag(v, 1))
    np.testing.assert_array_equal(diag_low, np.diag(m, -1))
    np.testing.assert_array_equal(diag_main, np.diag(m))
    distance = np.abs(v - v * 0.2)
    np.testing.assert_allclose(smooth, np.where(distance < 0.5, distance ** 2, distance - 0.25), rtol=1e-6)
    np.testing.assert_allclose(selu, 1.0507009873554805 * np.where(v > 0, v, 1.6732632423543772 * np.expm1(v)), rtol=1e-6)
    np.testing.assert_allclose(softsign, v / (1 + np.abs(v)), rtol=1e-6)
    np.testing.assert_array_equal(both, np.logical_and(i, i - 1))
    np.testing.assert_array_equal(either, i != 0)
    np.testing.assert_array_equal(one, np.logical_xor(i, i - 1))
    assert both.dtype == np.int8
    np.testing.assert_allclose(poly, np.polyval([1, -2, 3], v), rtol=1e-6)
    np.testing.assert_array_equal(hot, np.moveaxis(np.eye(4, dtype=np.float32)[i], -1, 0))
    np.testing.assert_array_equal(top, np.argsort(-m, axis=1, kind="stable"))  # k = 9 > 4: the whole axis
    with pytest.raises(ValueError, match=r"flow.expand: axis 1 of size 3 cannot expand to 4"):
        job_expanding_wrongly()


def job_expanding_wrongly():
    @flow.global_function()
    def wrong(v: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return flow.expand(v, [2, 4])

    wrong(np.zeros(3, np.float32))


def test_conv1d_and_conv3d_layers_take_their_variables_names():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((1, 2, 5)), y: tp.Numpy.Placeholder((1, 2, 3, 3, 3))) -> List[tp.Numpy]:
        return [flow.layers.conv1d(x, 3, 2, weight_name="w1", bias_name="b1"),
                flow.layers.conv3d(y, 4, 1, weight_name="w3", use_bias=False)]

    one, three = job(np.ones((1, 2, 5), np.float32), np.ones((1, 2, 3, 3, 3), np.float32))
    assert one.shape == (1, 3, 4) and three.shape == (1, 4, 3, 3, 3)
    variables = flow.get_all_variables()
    assert variables["w1"].numpy().shape == (3, 2, 2) and variables["b1"].numpy().shape == (3,)
    assert variables["w3"].numpy().shape == (4, 2, 1, 1, 1)


def test_silu_masked_fill_tanh_v2_conv2d_bias_argmax_of_a_vector_and_the_callable_modules():
    x = np.array([[-2.0, -0.5, 0.0], [0.5, 1.0, 3.0]])
    mask = np.array([[1, 0, 1]], np.int8)
    grads = {}

    @flow.global_function(type="train")
    def job(a: tp.Numpy.Placeholder((2, 3), dtype=flow.double), m: tp.Numpy.Placeholder((1, 3), dtype=flow.int8)
            ) -> List[tp.Numpy]:
        v = flow.get_variable("v", shape=(2, 3), dtype=flow.double, initializer=flow.zeros_initializer())
        xa = v + a
        flow.watch_diff(xa, lambda g: grads.setdefault("x", g.numpy()))
        silu = flow.nn.silu(xa)
        filled = flow.masked_fill(xa, m, -7.5)
        tanh = flow.math.tanh_v2(xa)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(
            flow.math.reduce_sum(silu + filled + tanh))
        return [silu, filled, tanh]

    silu, filled, tanh = job(x, mask)
    sigmoid = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(silu, x * sigmoid)
    np.testing.assert_allclose(filled, np.where(mask != 0, -7.5, x))
    np.testing.assert_allclose(tanh, np.tanh(x))
    # d silu = σ(x)(1 + x(1 − σ(x))); masked_fill passes the gradient where the mask is 0.
    expected = sigmoid * (1 + x * (1 - sigmoid)) + np.where(mask != 0, 0.0, 1.0) + 1 - np.tanh(x) ** 2
    np.testing.assert_allclose(grads["x"], expected)
    with pytest.raises(TypeError, match="flow.masked_fill: value must be a number, got 'a'"):
        @flow.global_function()
        def bad(a: tp.Numpy.Placeholder((2, 3)), m: tp.Numpy.Placeholder((1, 3), dtype=flow.int8)) -> tp.Numpy:
            return flow.masked_fill(a, m, "a")
        bad(x.astype(np.float32), mask)

    images = np.random.default_rng(3).standard_normal((2, 3, 5, 5)).astype(np.float32)
    weights = np.random.default_rng(4).standard_normal((4, 3, 3, 3)).astype(np.float32)
    bias = np.array([1.0, -2.0, 0.5, 3.0], np.float32)

    @flow.global_function()
    def conv(i: tp.Numpy.Placeholder((2, 3, 5, 5)), w: tp.Numpy.Placeholder((4, 3, 3, 3)),
             b: tp.Numpy.Placeholder((4,))) -> List[tp.Numpy]:
        return [flow.nn.conv2d(i, w, 1, "SAME", bias=b), flow.nn.conv2d(i, w, 1, "SAME")]

    biased, plain = conv(images, weights, bias)
    np.testing.assert_allclose(biased, plain + bias.reshape(1, 4, 1, 1), rtol=1e-5, atol=1e-5)  # fused: rounds apart
    with pytest.raises(ValueError, match=r"flow.nn.conv2d: bias must have shape \(4,\), one value per output channel, "
                                         r"got \(3,\)"):
        @flow.global_function()
        def wrong_bias(i: tp.Numpy.Placeholder((2, 3, 5, 5)), w: tp.Numpy.Placeholder((4, 3, 3, 3)),
                       b: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
            return flow.nn.conv2d(i, w, 1, "SAME", bias=b)
        wrong_bias(images, weights, bias[:3])

    @flow.global_function()
    def largest(p: tp.Numpy.Placeholder((4,))) -> tp.Numpy:
        return flow.math.argmax(p)

    assert largest(np.array([1, 5, 2, 3], np.float32)).tolist() == [1]  # shape (1,), as OneFlow's
    assert flow.dtypes() == [flow.float32, flow.float64, flow.float16, flow.bfloat16, flow.int8, flow.int32,
                             flow.int64, flow.uint8, flow.bool_, flow.tensor_buffer]
    assert flow.dtypes.float32 is flow.float32  # still the module
    definition = flow.input_blob_def((10,))  # the 2020 name of FixedTensorDef
    assert isinstance(definition, flow.FixedTensorDef) and definition.shape == (10,)


@pytest.mark.filterwarnings("ignore:flow.FixedTensorDef is deprecated:DeprecationWarning")
def test_oneflow_02s_bare_function_decorator_makes_a_predict_job():
    @flow.function
    def relu_job(x=flow.input_blob_def((4,))):
        return flow.keras.activations.relu(x)

    x = np.array([-2.0, -0.5, 0.5, 2.0], np.float32)
    np.testing.assert_array_equal(relu_job(x).get().numpy(), np.maximum(x, 0))
    with pytest.raises(TypeError, match=r"global_function must be called"):
        flow.global_function(lambda: None)


def test_categorical_ordinal_encoder_numbers_keys_in_the_order_first_seen_and_keeps_them():
    rng = np.random.default_rng(11)
    tokens = rng.integers(-2**62, 2**62, size=300, dtype=np.int64)

    @flow.global_function()
    def encode(x: tp.Numpy.Placeholder((50,), dtype=flow.int64)) -> Tuple[tp.Numpy, tp.Numpy]:
        return (flow.layers.categorical_ordinal_encoder(x, capacity=400),
                flow.layers.categorical_ordinal_encoder(x, capacity=400, name="again"))

    seen = {}
    for _ in range(20):
        x = tokens[rng.integers(0, 300, 50)]
        y, z = encode(x)
        np.testing.assert_array_equal(y, z)  # two tables fed the same keys agree
        expected = [seen.setdefault(int(k), len(seen) + 1) for k in x]
        np.testing.assert_array_equal(y, expected)
    assert flow.get_all_variables()["CategoricalOrdinalEncoder-Size"].numpy().tolist() == [len(seen)]

    @flow.global_function()
    def small(x: tp.Numpy.Placeholder((3,), dtype=flow.int32)) -> tp.Numpy:
        return flow.layers.categorical_ordinal_encoder(x, capacity=2, name="small")

    np.testing.assert_array_equal(small(np.array([9, 9, -1], np.int32)), [1, 1, 2])
    with pytest.raises(Exception, match=r"key 3 is new and the table is full: all 2 ordinals are given"):
        small(np.array([9, 3, -1], np.int32))
    with pytest.raises(TypeError, match="flow.layers.categorical_ordinal_encoder: input_tensor must be int32 or int64, "
                                        "got float32"):
        @flow.global_function()
        def floats(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
            return flow.layers.categorical_ordinal_encoder(x, capacity=2)
        floats(np.zeros(3, np.float32))


@pytest.mark.parametrize("count_not_finite,good_steps,period,scale,expected", [
    (1, 1, 1, 100.0, (0, 50.0)),     # a step with non-finite gradients halves the scale and resets the count
    (0, 1, 1, 100.0, (0, 200.0)),    # the period's last good step doubles it and starts counting again
    (0, 1, 10, 100.0, (2, 100.0)),   # a good step within the period counts
    (3, 4, 10, 1.5, (0, 1.0)),       # never below 1
    (0, 0, 1, 3e38, (0, float(np.finfo(np.float32).max))),  # nor above float32's largest
])
def test_user_op_builder_runs_dynamic_loss_scale_schedule_as_oneflows_kernel(count_not_finite, good_steps, period,
                                                                           scale, expected):
    def variables():
        good = flow.get_variable("good", shape=(1,), dtype=flow.int64,
                                 initializer=flow.constant_initializer(good_steps, dtype=flow.int64))
        loss_scale = flow.get_variable("scale", shape=(1,), initializer=flow.constant_initializer(scale))
        return good, loss_scale

    @flow.global_function()
    def schedule(count: tp.Numpy.Placeholder((1,), dtype=flow.int64)):
        good, loss_scale = variables()
        (flow.user_op_builder("schedule").Op("dynamic_loss_scale_schedule").Input("count_not_finite", [count])
         .Input("loss_scale", [loss_scale]).Input("good_step_counter", [good]).Attr("increment_period", period)
         .Attr("multiplier", 2.0).Build().InferAndTryRun())

    schedule(np.array([count_not_finite], np.int64))
    got = flow.get_all_variables()
    assert got["good"].numpy()[0] == expected[0]
    assert got["scale"].numpy()[0] == np.float32(expected[1])


def test_unsorted_batch_segment_sum_sums_each_entrys_rows_into_its_own_segments():
    rng = np.random.default_rng(8)
    data = rng.standard_normal((3, 5, 2)).astype(np.float32)
    ids = rng.integers(0, 4, (3, 5)).astype(np.int32)
    grads = []

    @flow.global_function(type="train")
    def job(d: tp.Numpy.Placeholder((3, 5, 2)), i: tp.Numpy.Placeholder((3, 5), dtype=flow.int32)) -> tp.Numpy:
        v = flow.get_variable("v", shape=(3, 5, 2), initializer=flow.zeros_initializer())
        x = d + v
        flow.watch_diff(x, grads.append)
        out = flow.math.unsorted_batch_segment_sum(x, i, 4)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(
            out * flow.constant(np.arange(24, dtype=np.float32).reshape(3, 4, 2)))
        return out

    expected = np.zeros((3, 4, 2), np.float32)
    for b in range(3):
        for n in range(5):
            expected[b, ids[b, n]] += data[b, n]
    np.testing.assert_allclose(job(data, ids), expected, rtol=1e-6, atol=1e-6)
    # The gradient gathers each row's segment's weight back.
    weights = np.arange(24, dtype=np.float32).reshape(3, 4, 2)
    np.testing.assert_array_equal(grads[0], np.stack([weights[b, ids[b]] for b in range(3)]))
    with pytest.raises(Exception, match="unsorted_segment_sum"):  # an id out of its entry's range fails the call
        bad = ids.copy()
        bad[1, 2] = 4
        job(data, bad)

    # Several batch axes: ids (2, 3, 4) over data (2, 3, 4, 2), segments along ids' last axis.
    deep_ids = rng.integers(0, 3, (2, 3, 4)).astype(np.int64)
    deep_data = rng.standard_normal((2, 3, 4, 2)).astype(np.float32)

    @flow.global_function()
    def deep(d: tp.Numpy.Placeholder((2, 3, 4, 2)), i: tp.Numpy.Placeholder((2, 3, 4), dtype=flow.int64)) -> tp.Numpy:
        return flow.math.unsorted_batch_segment_sum(d, i, 3)

    expected = np.zeros((2, 3, 3, 2), np.float32)
    for index in np.ndindex(2, 3, 4):
        expected[index[:2] + (deep_ids[index],)] += deep_data[index]
    np.testing.assert_allclose(deep(deep_data, deep_ids), expected, rtol=1e-6, atol=1e-6)


def test_eye_size_and_compiler_trace_as_oneflow_0_4_spells_them():
    @flow.compiler.trace(type="predict", execution_config=flow.ExecutionConfig())
    def identities() -> List[tp.Numpy]:
        return [flow.eye(3), flow.eye(2, 4, batch_shape=[2], dtype=flow.int32)]

    square, batch = identities()
    np.testing.assert_array_equal(square, np.eye(3, dtype=np.float32))
    assert batch.dtype == np.int32
    np.testing.assert_array_equal(batch, np.broadcast_to(np.eye(2, 4), (2, 2, 4)))
    with pytest.raises(ValueError, match="flow.eye: columns must be a non-negative int, got -1"):
        flow.compiler.trace(lambda: flow.eye(2, -1))()

    size = flow.Size([2, 3, 2, 4])
    assert size == (2, 3, 2, 4) and size.numel() == 48 and repr(size) == "flow.Size([2, 3, 2, 4])"
    assert size.index(2, start=1) == 2 and size.count(2) == 2
    with pytest.raises(ValueError):
        size.index(2, start=0, end=0)


def _np_ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0):
    """-log p(target | x) per example by the forward recursion over the extended target, in float64."""
    losses = []
    for b in range(log_probs.shape[1]):
        labels = [blank]
        for label in targets[b, :target_lengths[b]]:
            labels += [int(label), blank]
        alpha = np.full(len(labels), -np.inf)
        alpha[0] = log_probs[0, b, blank]
        if len(labels) > 1:
            alpha[1] = log_probs[0, b, labels[1]]
        for t in range(1, input_lengths[b]):
            previous = alpha.copy()
            for s in range(len(labels)):
                terms = [previous[s]] + ([previous[s - 1]] if s > 0 else []) + \
                    ([previous[s - 2]] if s > 1 and labels[s] != labels[s - 2] else [])
                alpha[s] = np.logaddexp.reduce(terms) + log_probs[t, b, labels[s]]
        losses.append(-np.logaddexp.reduce(alpha[-2:] if len(labels) > 1 else alpha[-1:]))
    return np.array(losses)


@pytest.mark.parametrize("index", [flow.int32, flow.int64])
def test_ctc_loss_matches_the_forward_recursion_and_oneflows_example(index):
    # OneFlow's documented example: losses 3.918017 and 2.907672.
    log_probs = np.array([[[-1.1031, -0.7998, -1.5200], [-0.9808, -1.1363, -1.1908]],
                          [[-1.2258, -1.0665, -1.0153], [-1.1135, -1.2331, -0.9671]],
                          [[-1.3348, -0.6611, -1.5118], [-0.9823, -1.2355, -1.0941]],
                          [[-1.3850, -1.3273, -0.7247], [-0.8235, -1.4783, -1.0994]],
                          [[-0.9049, -0.8867, -1.6962], [-1.4938, -1.3630, -0.6547]]], np.float32)
    np_index = np.int32 if index == flow.int32 else np.int64

    @flow.global_function()
    def job(lp: tp.Numpy.Placeholder((5, 2, 3)), t: tp.Numpy.Placeholder((2, 3), dtype=index),
            il: tp.Numpy.Placeholder((2,), dtype=index), tl: tp.Numpy.Placeholder((2,), dtype=index)) -> List[tp.Numpy]:
        return [flow.ctc_loss(lp, t, il, tl, reduction=r) for r in ("none", "sum", "mean")]

    targets = np.array([[1, 2, 2], [1, 2, 2]], np_index)
    none, total, mean = job(log_probs, targets, np.array([5, 5], np_index), np.array([3, 3], np_index))
    np.testing.assert_allclose(none, [3.918017, 2.907672], rtol=1e-5)
    np.testing.assert_allclose(total, none.sum(), rtol=1e-6)
    np.testing.assert_allclose(mean, (none / 3).mean(), rtol=1e-6)

    # Random lengths, a blank other than 0, an impossible example (2 steps for 2 equal labels).
    rng = np.random.default_rng(6)
    logits = rng.standard_normal((8, 4, 5))
    lp = (logits - np.log(np.exp(logits).sum(-1, keepdims=True))).astype(np.float32)

    @flow.global_function()
    def other(lp_: tp.Numpy.Placeholder((8, 4, 5)), t: tp.Numpy.Placeholder((4, 3), dtype=index),
              il: tp.Numpy.Placeholder((4,), dtype=index), tl: tp.Numpy.Placeholder((4,), dtype=index)) -> List[tp.Numpy]:
        return [flow.ctc_loss(lp_, t, il, tl, blank=4, reduction="none"),
                flow.ctc_loss(lp_, t, il, tl, blank=4, reduction="none", zero_infinity=True)]

    targets = np.array([[0, 1, 2], [3, 3, 0], [2, 0, 0], [1, 1, 3]], np_index)
    inputs, lengths = np.array([8, 5, 1, 2], np_index), np.array([3, 2, 0, 2], np_index)
    plain, zeroed = other(lp, targets, inputs, lengths)
    expected = _np_ctc_loss(lp.astype(np.float64), targets, inputs, lengths, blank=4)
    assert np.isinf(expected[3]) and np.isinf(plain[3]) and zeroed[3] == 0
    np.testing.assert_allclose(plain[:3], expected[:3], rtol=1e-5)
    np.testing.assert_allclose(zeroed[:3], expected[:3], rtol=1e-5)


def test_ctc_loss_trains_through_log_softmax_and_refuses_bad_lengths_and_targets():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((6, 2, 4))
    targets = np.array([[1, 2], [3, 0]], np.int64)
    inputs, lengths = np.array([6, 4], np.int64), np.array([2, 1], np.int64)
    grads = []

    @flow.global_function(type="train")
    def train(p: tp.Numpy.Placeholder((6, 2, 4), dtype=flow.float64), t: tp.Numpy.Placeholder((2, 2), dtype=flow.int64),
              il: tp.Numpy.Placeholder((2,), dtype=flow.int64), tl: tp.Numpy.Placeholder((2,), dtype=flow.int64)
              ) -> tp.Numpy:
        v = flow.get_variable("v", shape=(6, 2, 4), dtype=flow.float64, initializer=flow.zeros_initializer())
        logits = p + v
        flow.watch_diff(logits, grads.append)
        loss = flow.ctc_loss(flow.nn.logsoftmax(logits, axis=2), t, il, tl, blank=0, reduction="mean")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(loss)
        return loss

    def loss_of(logits):
        lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        return (_np_ctc_loss(lp, targets, inputs, lengths) / np.maximum(lengths, 1)).mean()

    np.testing.assert_allclose(train(x, targets, inputs, lengths), loss_of(x), rtol=1e-10)
    np.testing.assert_allclose(grads[0], numeric_grad_of(loss_of, x), rtol=1e-5, atol=1e-8)
    with pytest.raises(Exception, match=r"\[ctc_loss\] example 1: target 7 at position 0 is outside \[0, 4\)"):
        train(x, np.array([[1, 2], [7, 0]], np.int64), inputs, lengths)
    with pytest.raises(Exception, match=r"\[ctc_loss\] example 0: input length 9 is outside \[0, 6\]"):
        train(x, targets, np.array([9, 4], np.int64), lengths)
    with pytest.raises(Exception, match=r"\[ctc_loss\] example 1: target length 3 is outside \[0, 2\]"):
        train(x, targets, inputs, np.array([2, 3], np.int64))


def numeric_grad_of(f, x, eps=1e-6):
    grad = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        step = np.zeros_like(x)
        step[i] = eps
        grad[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


def test_oneflow_0_1_and_0_2_names_of_minimum_maximum_scatter_nd_update_and_conv2d_transpose():
    rng = np.random.default_rng(12)
    a, b = rng.standard_normal((3, 1)).astype(np.float32), rng.standard_normal((1, 4)).astype(np.float32)
    x, w = rng.standard_normal((1, 2, 3, 3)).astype(np.float32), rng.standard_normal((2, 3, 2, 2)).astype(np.float32)

    @flow.global_function()
    def job(p: tp.Numpy.Placeholder((3, 1)), q: tp.Numpy.Placeholder((1, 4)), v: tp.Numpy.Placeholder((1, 2, 3, 3)),
            f: tp.Numpy.Placeholder((2, 3, 2, 2))) -> List[tp.Numpy]:
        updated = flow.scatter_nd_update(q, flow.constant(np.array([[0, 2]]), flow.int32), flow.constant([7.0]))
        old = flow.nn.conv2d_transpose_V2(v, f, output_shape=(1, 3, 4, 4), strides=1)
        new = flow.nn.conv2d_transpose(v, f, output_shape=(1, 3, 4, 4), strides=1)
        return [flow.experimental.broadcast_minimum(p, q), flow.experimental.broadcast_maximum(p, q), updated, old - new]

    low, high, updated, difference = job(a, b, x, w)
    np.testing.assert_array_equal(low, np.minimum(a, b))
    np.testing.assert_array_equal(high, np.maximum(a, b))
    expected = b.copy()
    expected[0, 2] = 7.0
    np.testing.assert_array_equal(updated, expected)
    np.testing.assert_array_equal(difference, np.zeros((1, 3, 4, 4), np.float32))


def test_hierarchical_parallel_cast_on_a_one_level_placement_and_the_advanced_distribute_ops():
    flow.config.cpu_device_num(2)
    rng = np.random.default_rng(13)
    a, b, c = (rng.random(s).astype(np.float32) for s in ((4, 6), (6, 3), (3,)))

    @flow.global_function(type="train")
    def train(p: tp.Numpy.Placeholder((4, 6)), q: tp.Numpy.Placeholder((6, 3)), r: tp.Numpy.Placeholder((3,))
              ) -> tp.Numpy:
        v = flow.get_variable("v", shape=(4, 6), initializer=flow.ones_initializer(), distribute=flow.distribute.split(1))
        x = v * flow.hierarchical_parallel_cast(p, parallel_distribution=["S(1)"])
        out = flow.hierarchical_parallel_cast(flow.matmul(x, q), parallel_distribution=["B"], grad_mode="manual",
                                              grad_parallel_distribution=["B"])
        out = flow.nn.bias_add(out, flow.hierarchical_parallel_cast(r, ["B"]))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(out)
        return out

    np.testing.assert_allclose(train(a, b, c), a @ b + c, rtol=1e-5)

    @flow.global_function()
    def pieces(p: tp.Numpy.Placeholder((5, 2))) -> List[tp.Numpy]:
        with flow.scope.placement("cpu", "0:0-1"):
            parts = flow.advanced.distribute_split(p)
            copies = flow.advanced.distribute_clone(p)
            return parts + [flow.advanced.distribute_concat(parts), flow.advanced.distribute_add(copies)]

    x = rng.random((5, 2)).astype(np.float32)
    first, second, whole, total = pieces(x)
    np.testing.assert_array_equal(first, x[:3])  # OneFlow's balance: the first piece a row longer
    np.testing.assert_array_equal(second, x[3:])
    np.testing.assert_array_equal(whole, x)
    np.testing.assert_allclose(total, 2 * x)
    with pytest.raises(ValueError, match=r"parallel_distribution must list one layout \(Weir's placements are "
                                         r"one-level\), got \['S\(0\)', 'B'\]"):
        flow.compiler.trace(lambda: flow.hierarchical_parallel_cast(flow.ones((2, 2)), ["S(0)", "B"]))()


def test_a_blobs_parallel_conf_is_the_placement_of_its_op():
    flow.config.cpu_device_num(2)
    seen = {}

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        seen["default"] = x.parallel_conf
        seen["scope"] = flow.current_scope().device_parallel_desc_symbol.parallel_num
        with flow.scope.placement("gpu", "0:1"):  # on CPU devices in a session without GPUs
            y = flow.math.relu(x)
            seen["gpu"] = y.parallel_conf
        return y

    np.testing.assert_array_equal(job(np.ones((2, 3), np.float32)), np.ones((2, 3)))
    assert (seen["default"].device_tag, seen["default"].device_name) == ("cpu", ["0:0-1"])
    assert (seen["gpu"].device_tag, seen["gpu"].device_name) == ("gpu", ["0:1"])
    assert seen["scope"] == 2  # outside any placement scope: the job's devices


def test_interface_blob_values_are_the_sessions_variables():
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def add() -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-1"):
            x = flow.get_variable("x", shape=(2, 3), initializer=flow.random_uniform_initializer())
            y = flow.get_variable("y", shape=(2, 3), initializer=flow.random_uniform_initializer())
            return flow.math.add_n([x, y])

    flow.train.CheckPoint().init()
    x, y = np.random.random((2, 3)).astype(np.float32), np.random.random((2, 3)).astype(np.float32)
    flow.experimental.set_interface_blob_value("x", x)
    flow.experimental.set_interface_blob_value("y", y)
    np.testing.assert_array_equal(flow.experimental.get_interface_blob_value("x"), x)
    np.testing.assert_array_equal(add(), x + y)
    with pytest.raises(KeyError, match=r"no variable named 'z'; it has \['x', 'y'\]"):
        flow.experimental.get_interface_blob_value("z")
    with pytest.raises(RuntimeError, match="z"):
        flow.experimental.set_interface_blob_value("z", x)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_is_numpys_running_sum_and_its_gradient_runs_the_other_way(axis, exclusive, reverse):
    x = np.random.default_rng(4).random((3, 4, 5))
    grads = []

    @flow.global_function(type="train")
    def job(p: tp.Numpy.Placeholder((3, 4, 5), dtype=flow.float64)) -> tp.Numpy:
        p = p + flow.get_variable("v", shape=(1,), dtype=flow.float64, initializer=flow.zeros_initializer())
        flow.watch_diff(p, grads.append)
        y = flow.math.cumsum(p, axis=axis, exclusive=exclusive, reverse=reverse)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(
            flow.math.reduce_sum(y * flow.constant(weights, dtype=flow.float64)))
        return y

    def running(a, backwards):
        a = np.flip(a, axis) if backwards else a
        sums = np.cumsum(a, axis)
        if exclusive:
            sums = sums - a
        return np.flip(sums, axis) if backwards else sums

    weights = np.random.default_rng(5).random((3, 4, 5))
    np.testing.assert_allclose(job(x), running(x, reverse), rtol=1e-12)
    np.testing.assert_allclose(grads[0], running(weights, not reverse), rtol=1e-12)  # d(sum w*y)/dx
