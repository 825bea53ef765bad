"""Behaviour OneFlow's own op tests rely on: names, reductions over no axis, grouped NHWC convolutions
on the CPU, option checks and the module-level queries. Each was a wrong result or a refusal that
OneFlow does not make."""

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


def test_eager_execution_is_reported_off():
    assert flow.eager_execution_enabled() is False
    flow.enable_eager_execution(False)
    with pytest.raises(NotImplementedError, match="lazy mode"):
        flow.enable_eager_execution(True)
