"""Job functions end to end through the C++ runtime: annotations sync and async, mirrored
single-device values, Bundle, None, watch handlers, shared variables, sessions, bad input."""

import threading
import time
from typing import Dict, List, Tuple

import numpy as np
import pytest

import weir as flow
import weir.typing as tp


def _x(shape=(2, 3), dtype=np.float32, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype)


# --- sync results for every return annotation ------------------------------------------------


def test_numpy_return_computes_the_ops():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.math.relu(x) * 2 + 1

    x = _x()
    np.testing.assert_allclose(job(x), np.maximum(x, 0) * 2 + 1, rtol=1e-6)


def test_identity_job_returns_its_input_and_the_same_blob_twice():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4,), dtype=flow.int32)) -> Tuple[tp.Numpy, tp.Numpy]:
        return x, x

    x = np.arange(4, dtype=np.int32)
    a, b = job(x)
    np.testing.assert_array_equal(a, x)
    np.testing.assert_array_equal(b, x)


def test_nested_tuple_list_dict_returns():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((3,))) -> Tuple[tp.Numpy, List[tp.Numpy], Dict[str, tp.Numpy]]:
        return x, [x + 1, x + 2], {"neg": x * -1}

    x = _x((3,))
    first, items, mapping = job(x)
    np.testing.assert_allclose(first, x)
    assert isinstance(items, list) and len(items) == 2
    np.testing.assert_allclose(items[1], x + 2, rtol=1e-6)
    assert list(mapping) == ["neg"]
    np.testing.assert_allclose(mapping["neg"], -x)


def test_list_numpy_and_list_list_numpy_single_device():
    config = flow.FunctionConfig()
    config.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(function_config=config)
    def job(
        a: tp.ListNumpy.Placeholder((2, 2)), b: tp.ListListNumpy.Placeholder((3,))
    ) -> Tuple[tp.ListNumpy, tp.ListListNumpy]:
        return a * 2, b

    a, b = _x((2, 2)), _x((3,), seed=1)
    out_a, out_b = job([a], [[b]])
    assert isinstance(out_a, list) and len(out_a) == 1
    np.testing.assert_allclose(out_a[0], a * 2, rtol=1e-6)
    assert isinstance(out_b, list) and isinstance(out_b[0], list)
    np.testing.assert_allclose(out_b[0][0], b)


def test_tuple_parameters():
    @flow.global_function()
    def job(pair: Tuple[tp.Numpy.Placeholder((2,)), tp.Numpy.Placeholder((2,))]) -> tp.Numpy:
        return pair[0] - pair[1]

    a, b = _x((2,)), _x((2,), seed=3)
    np.testing.assert_allclose(job((a, b)), a - b, rtol=1e-6)


def test_bundle_keeps_nesting_and_non_string_keys():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2,))) -> tp.Bundle[tp.Numpy]:
        return {256: x, "pair": (x, [x + 1]), 3.5: [x * 3]}

    x = _x((2,))
    result = job(x)
    assert set(result) == {256, "pair", 3.5}
    assert isinstance(result["pair"], tuple) and isinstance(result["pair"][1], list)
    np.testing.assert_allclose(result["pair"][1][0], x + 1, rtol=1e-6)
    np.testing.assert_allclose(result[3.5][0], x * 3, rtol=1e-6)


def test_none_return_with_an_empty_body():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2,))) -> None:
        pass

    assert job(_x((2,))) is None


def test_unannotated_return_is_a_legacy_future():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2,))):
        return x + 1

    x = _x((2,))
    np.testing.assert_allclose(job(x).get().numpy(), x + 1, rtol=1e-6)
    got = []
    job(x).async_get(lambda blob: got.append(blob.numpy()))
    flow.sync_default_session()
    np.testing.assert_allclose(got[0], x + 1, rtol=1e-6)


# --- async results ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "annotation, build, check",
    [
        (tp.Numpy, lambda x: x * 2, lambda r, x: np.testing.assert_allclose(r, x * 2)),
        (tp.ListNumpy, lambda x: x * 2, lambda r, x: np.testing.assert_allclose(r[0], x * 2)),
        (Tuple[tp.Numpy, tp.Numpy], lambda x: (x, x * 2), lambda r, x: np.testing.assert_allclose(r[1], x * 2)),
        (List[tp.Numpy], lambda x: [x, x, x], lambda r, x: np.testing.assert_equal(len(r), 3)),
        (Dict[str, tp.Numpy], lambda x: {"a": x}, lambda r, x: np.testing.assert_allclose(r["a"], x)),
        (tp.Bundle[tp.Numpy], lambda x: [x, (x,)], lambda r, x: np.testing.assert_allclose(r[1][0], x)),
        (None, lambda x: None, lambda r, x: np.testing.assert_equal(r, None)),
    ],
)
def test_callback_delivers_every_annotation(annotation, build, check):
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((3,))) -> tp.Callback[annotation]:
        return build(x)

    x = _x((3,))
    results = []
    job(x)(results.append)
    flow.sync_default_session()
    assert len(results) == 1
    check(results[0], x)


def test_callbacks_run_in_call_order_over_hundreds_of_calls():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((1,), dtype=flow.int32)) -> tp.Callback[tp.Numpy]:
        return flow.identity(x)

    seen = []
    for i in range(500):
        job(np.array([i], dtype=np.int32))(lambda r: seen.append(int(r[0])))
    flow.sync_default_session()
    assert seen == list(range(500))


def test_async_inputs_are_copied_so_the_caller_may_reuse_its_array():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((1000,))) -> tp.Callback[tp.Numpy]:
        return x + 0

    buffer = np.zeros(1000, dtype=np.float32)
    sums = []
    for i in range(50):
        buffer[:] = i
        job(buffer)(lambda r: sums.append(float(r.sum())))
    flow.sync_default_session()
    assert sums == [1000.0 * i for i in range(50)]


def test_exception_in_a_callback_is_raised_at_sync_and_the_session_goes_on():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((1,))) -> tp.Callback[tp.Numpy]:
        return x

    def bad(result):
        raise KeyError("raised inside the callback")

    job(np.ones(1, np.float32))(bad)
    with pytest.raises(KeyError, match="raised inside the callback"):
        flow.sync_default_session()
    got = []
    job(np.ones(1, np.float32))(got.append)
    flow.sync_default_session()
    assert len(got) == 1


def test_a_callback_exception_during_an_async_call_comes_out_of_the_next_call_before_it_launches():
    # Regression: the exception came out of the async call that ran the callback, after that call
    # had been launched: it trained, its registrar was lost, and a retry trained the batch twice.
    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((2, 3))) -> tp.Callback[tp.Numpy]:
        w = flow.get_variable("w", shape=(3,), dtype=flow.float, initializer=flow.zeros_initializer())
        loss = x * w
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    seen = []

    def callback(result):
        seen.append(result)
        if len(seen) == 1:
            raise KeyError("raised inside the first callback")

    registrars = []
    calls = 0
    with pytest.raises(KeyError, match="first callback"):
        for _ in range(10):
            registrar = train(_x())
            calls += 1
            registrar(callback)
            registrars.append(registrar)
    assert calls == len(registrars) == 3  # the 4th call raised before launching anything
    flow.sync_default_session()  # the held exception was raised once: nothing more to raise
    assert len(seen) == 3  # every launched call's callback ran
    step = flow.get_all_variables()["System-Train-TrainStep-train"].numpy()
    assert step.tolist() == [3]


@pytest.mark.parametrize("commit", [True, False])
def test_a_failed_train_call_writes_no_variable_unless_the_commit_is_switched_off(commit):
    # The metric's gather fails (an index out of range) in a branch no update reads: only the commit
    # before the updates keeps the call from applying them.
    flow.config.commit_before_writes(commit)

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((2, 3)), picks: tp.Numpy.Placeholder((2,), dtype=flow.int32)) -> Tuple[
            tp.Numpy, tp.Numpy]:
        w = flow.get_variable("w", shape=(3,), dtype=flow.float, initializer=flow.ones_initializer())
        loss = flow.math.reduce_sum(x * w)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss, flow.gather(x, picks)

    train(_x(), np.array([0, 1], np.int32))
    before = {name: value.numpy().copy() for name, value in flow.get_all_variables().items()}
    with pytest.raises(Exception, match="out of range|outside"):
        train(_x(), np.array([0, 5], np.int32))
    after = flow.get_all_variables()
    assert np.array_equal(after["System-Train-TrainStep-train"].numpy(), [1] if commit else [2])
    assert np.array_equal(after["w"].numpy(), before["w"]) == commit


def test_commit_before_writes_refuses_what_is_not_a_bool():
    with pytest.raises(ValueError, match=r"commit_before_writes: expected True or False, got 1"):
        flow.config.commit_before_writes(1)


def test_a_watch_handler_exception_fails_a_legacy_future_instead_of_hanging_it():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2,))):
        def handler(value: tp.Numpy):
            raise ValueError("raised inside the watch handler")

        flow.watch(x, handler)
        return x + 1

    future = job(np.ones(2, np.float32))
    done = []
    thread = threading.Thread(target=lambda: done.append(_outcome(future.get)), daemon=True)
    thread.start()
    thread.join(20)
    assert done, ".get() hung"
    assert isinstance(done[0], ValueError) and "watch handler" in str(done[0])
    assert job(np.ones(2, np.float32)) is not None  # the session goes on


def _outcome(fn):
    try:
        return fn()
    except Exception as error:  # noqa: BLE001 - the test looks at it
        return error


def test_plain_sgd_on_a_matmul_of_two_variables_trains():
    # Regression: this hung its first call (each weight's fused gradient-and-update read the other).
    @flow.global_function(type="train")
    def job() -> tp.Numpy:
        x = flow.get_variable("x", shape=(4, 5), dtype=flow.float, initializer=flow.random_normal_initializer())
        w = flow.get_variable("w", shape=(5, 6), dtype=flow.float, initializer=flow.random_normal_initializer())
        y = flow.matmul(x, w)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.01]), momentum=0).minimize(y)
        return y

    first = job()
    second = job()
    assert first.shape == second.shape == (4, 6)
    assert not np.allclose(first, second)


def test_a_failed_train_call_leaves_the_variables_and_the_train_step_as_they_were():
    @flow.global_function(type="train")
    def train(labels: tp.Numpy.Placeholder((2,), dtype=flow.int32), x: tp.Numpy.Placeholder((2, 4))) -> tp.Numpy:
        logits = flow.layers.dense(x, 3, kernel_initializer=flow.random_normal_initializer(), name="fc")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        flow.optimizer.Adam(flow.optimizer.PiecewiseConstantScheduler([], [0.1])).minimize(loss)
        return loss

    train(np.array([0, 1], np.int32), _x((2, 4)))
    before = {k: v.numpy().copy() for k, v in flow.get_all_variables().items()}
    with pytest.raises(Exception, match="label"):
        train(np.array([0, 7], np.int32), _x((2, 4)))
    after = {k: v.numpy() for k, v in flow.get_all_variables().items()}
    assert before.keys() == after.keys()
    for name in before:
        np.testing.assert_array_equal(after[name], before[name], err_msg=name)


def test_current_machine_id_is_the_process_rank(monkeypatch):
    assert flow.current_machine_id() == 0
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert flow.current_machine_id() == 3


def test_the_gil_is_released_while_the_runtime_works():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((256, 256))) -> tp.Numpy:
        y = x
        for _ in range(20):
            y = flow.matmul(y, x)
        return y

    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.0005)

    x = np.full((256, 256), 1e-3, np.float32)
    job(x)  # compile first
    thread = threading.Thread(target=ticker)
    thread.start()
    start = time.perf_counter()
    for _ in range(10):
        job(x)
    elapsed = time.perf_counter() - start
    stop.set()
    thread.join()
    during = [t for t in ticks if start <= t <= start + elapsed]
    # With the GIL held through each call the ticker would stall for the whole loop.
    assert len(during) > 5


# --- watch -----------------------------------------------------------------------------------


def test_watch_handlers_typed_untyped_and_prompt(capsys):
    typed, listed, untyped = [], [], []

    def typed_handler(value: tp.Numpy):
        typed.append(value)

    def listed_handler(value: tp.ListNumpy):
        listed.append(value)

    def untyped_handler(blob):
        untyped.append(blob.numpy())

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((5,))) -> tp.Numpy:
        y = flow.math.relu(x)
        flow.watch(x, typed_handler)
        flow.watch(y, listed_handler)
        flow.watch(y, untyped_handler)
        flow.watch(y, "relu out:")
        return y

    x = np.array([-2, -1, 0, 1, 2], np.float32)
    job(x)
    np.testing.assert_allclose(typed[0], x)
    assert isinstance(listed[0], list)
    np.testing.assert_allclose(listed[0][0], np.maximum(x, 0))
    np.testing.assert_allclose(untyped[0], np.maximum(x, 0))
    assert "relu out:" in capsys.readouterr().out


def test_watch_diff_gives_the_gradient():
    grads = []

    def handler(diff: tp.Numpy):
        grads.append(diff)

    @flow.global_function(type="train")
    def job(x: tp.Numpy.Placeholder((4,))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(4,), initializer=flow.ones_initializer())
        y = x * w
        flow.watch_diff(y, handler)
        loss = flow.math.reduce_sum(y * y)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(loss)
        return loss

    x = np.array([1, 2, 3, 4], np.float32)
    job(x)
    np.testing.assert_allclose(grads[0], 2 * x, rtol=1e-6)  # d(sum y²)/dy with w = 1


# --- variables and training ------------------------------------------------------------------


def test_variables_are_shared_between_a_train_and_a_predict_job():
    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((2, 5))) -> tp.Numpy:
        var = flow.get_variable("var", shape=(2, 5), initializer=flow.zeros_initializer())
        loss = var + x
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1.0]), momentum=0).minimize(loss)
        return var

    @flow.global_function()
    def read() -> tp.Numpy:
        return flow.get_variable("var", shape=(2, 5), initializer=flow.zeros_initializer())

    x = np.zeros((2, 5), np.float32)
    before = train(x)
    np.testing.assert_allclose(before, 0)  # a train job returns the value from before its update
    # OneFlow averages gradients over the loss's 10 elements: each step moves every element by lr/10.
    np.testing.assert_allclose(read(), np.full((2, 5), -0.1), rtol=1e-6)
    train(x)
    np.testing.assert_allclose(read(), np.full((2, 5), -0.2), rtol=1e-6)


def test_a_job_function_may_be_defined_after_the_first_call():
    @flow.global_function()
    def first(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        return x + 1

    x = _x((2,))
    first(x)

    @flow.global_function()
    def second(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        return x + 2

    np.testing.assert_allclose(second(x), x + 2, rtol=1e-6)
    np.testing.assert_allclose(first(x), x + 1, rtol=1e-6)


def test_clear_default_session_drops_variables_and_recompiles():
    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        v = flow.get_variable("v", shape=(3,), initializer=flow.constant_initializer(5.0))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [3.0]), momentum=0).minimize(v * x)
        return v

    x = np.ones(3, np.float32)
    train(x)
    np.testing.assert_allclose(train(x), 4.0)
    flow.clear_default_session()
    np.testing.assert_allclose(train(x), 5.0)  # fresh variables in the new session


def test_gpu_configuration_runs_the_job_on_the_gpu_or_else_the_cpu():
    flow.config.gpu_device_num(1)
    config = flow.function_config()
    config.default_data_type(flow.float)
    config.default_placement_scope(flow.scope.placement("gpu", "0:0"))

    @flow.global_function(type="predict", function_config=config)
    def job(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        with flow.scope.placement("gpu", "0:0"):
            return flow.math.tanh(x)

    x = _x((2,))
    np.testing.assert_allclose(job(x), np.tanh(x), rtol=1e-6)


def test_legacy_config_first_form_and_func_config_training():
    config = flow.FunctionConfig()
    with pytest.warns(DeprecationWarning):
        config.train.primary_lr(0.5)
        config.train.model_update_conf({"naive_conf": {}})

    with pytest.warns(DeprecationWarning):

        @flow.global_function(config)
        def job(x: tp.Numpy.Placeholder((1,))) -> tp.Numpy:
            w = flow.get_variable("w", shape=(1,), initializer=flow.zeros_initializer())
            flow.losses.add_loss(w * x)
            return w

    assert job.job_type == "train"  # the config's train.* settings make it a train job
    x = np.ones(1, np.float32)
    job(x)
    np.testing.assert_allclose(job(x), -0.5)  # plain SGD with lr 0.5 on d(w·x)/dw = 1


def test_positional_type_and_config():
    @flow.global_function("train", flow.function_config())
    def job(x: tp.Numpy.Placeholder((1,))) -> tp.Numpy:
        w = flow.get_variable("w", shape=(1,), initializer=flow.ones_initializer())
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.25]), momentum=0).minimize(w * x)
        return w

    x = np.ones(1, np.float32)
    job(x)
    np.testing.assert_allclose(job(x), 0.75)


# --- bad input ---------------------------------------------------------------------------------


def test_bad_input_raises_names_the_argument_and_runs_nothing():
    runs = []

    def count(value: tp.Numpy):
        runs.append(value)

    @flow.global_function()
    def job(images: tp.Numpy.Placeholder((2, 3)), labels: tp.Numpy.Placeholder((2,), dtype=flow.int32)) -> tp.Numpy:
        flow.watch(images, count)
        return images

    good = (_x((2, 3)), np.zeros(2, np.int32))
    with pytest.raises(TypeError, match=r"images.*str.*float32"):
        job(good[0].astype(str), good[1])
    with pytest.raises(ValueError, match=r"labels.*\(3,\).*\(2,\)|labels.*\(2,\).*\(3,\)"):
        job(good[0], np.zeros(3, np.int32))
    with pytest.raises(TypeError, match="job"):
        job(good[0])
    with pytest.raises(TypeError):
        job(good[0], good[1], good[1])
    assert runs == []
    np.testing.assert_allclose(job(*good), good[0])  # the session is still usable
    assert len(runs) == 1
    # An array of another number dtype is converted, as OneFlow converts it, and the call says so.
    with pytest.warns(UserWarning, match=r"argument 'images' has dtype float64; converted to its placeholder's float32"):
        np.testing.assert_allclose(job(good[0].astype(np.float64), good[1].astype(np.int64)), good[0])
    assert len(runs) == 2


def test_invalid_annotation_is_an_error_when_decorating():
    with pytest.raises(TypeError, match="bad_job"):

        @flow.global_function()
        def bad_job(x: int) -> tp.Numpy:
            return x


def test_decorator_without_call_is_a_clear_error():
    with pytest.raises(TypeError, match="global_function"):

        @flow.global_function
        def forgot_the_parentheses():
            pass


def test_train_job_without_optimizer_names_the_function():
    @flow.global_function(type="train")
    def lonely(x: tp.Numpy.Placeholder((1,))) -> tp.Numpy:
        return x

    with pytest.raises(RuntimeError, match="lonely.*optimizer"):
        lonely(np.ones(1, np.float32))


def test_kernel_error_fails_the_call_only():
    @flow.global_function()
    def job(labels: tp.Numpy.Placeholder((2,), dtype=flow.int32), logits: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)

    logits = _x((2, 3))
    with pytest.raises(Exception, match="label"):
        job(np.array([0, 7], np.int32), logits)
    assert job(np.array([0, 2], np.int32), logits).shape == (2,)


def test_channels_last_convolutions_change_speed_not_results():
    x = _x((2, 3, 8, 8), seed=3)
    results = {}
    for channels_last in (True, False):
        flow.clear_default_session()
        config = flow.FunctionConfig()
        config.channels_last_convolutions(channels_last)

        @flow.global_function(function_config=config)
        def conv_job(images: tp.Numpy.Placeholder((2, 3, 8, 8))) -> tp.Numpy:
            init = flow.random_uniform_initializer(-0.5, 0.5, seed=1)
            conv = flow.layers.conv2d(images, 4, 3, padding="SAME", activation=flow.nn.relu,
                                      kernel_initializer=init, name="conv")
            return flow.nn.max_pool2d(conv, ksize=2, strides=2, padding="VALID")

        results[channels_last] = conv_job(x)
    assert results[True].shape == (2, 4, 4, 4)
    np.testing.assert_allclose(results[True], results[False], rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="channels_last_convolutions"):
        flow.FunctionConfig().channels_last_convolutions("yes")


def test_a_job_function_that_does_not_compile_fails_alone_naming_itself_and_the_users_line(tmp_path):
    @flow.global_function()
    def before(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        return flow.math.relu(x)

    @flow.global_function()
    def broken(x: tp.Numpy.Placeholder((4, 3)), y: tp.Numpy.Placeholder((5, 3))) -> tp.Numpy:
        return flow.matmul(x, y)  # the line the error points at

    @flow.global_function()
    def typo(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        return flow.math.relu(undefined_name)  # noqa: F821 - a bug in the job function's body

    @flow.global_function()
    def after(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        return flow.math.relu(x) * 2

    x = np.ones((4, 3), np.float32)
    np.testing.assert_array_equal(before(x), x)  # the session starts: every job function compiles
    for _ in range(2):  # every call of the broken job raises the same error
        with pytest.raises(ValueError) as info:
            broken(x, np.ones((5, 3), np.float32))
        message = str(info.value)
        assert message.startswith(f"job function 'broken' ({__file__}:")
        assert "[matmul] inner dims differ: (4,3) vs (5,3)" in message
        assert f"the op was created at {__file__}:" in message and "# the line the error points at" in message
    with pytest.raises(NameError, match=r"job function 'typo' .*undefined_name"):
        typo(x)
    np.testing.assert_array_equal(before(x), x)
    np.testing.assert_array_equal(after(x), 2 * x)
    flow.train.CheckPoint().save(str(tmp_path / "model"))  # checkpoint calls keep working
    flow.sync_default_session()


def test_a_dense_layer_without_kernel_initializer_warns_once_that_it_starts_at_zero(monkeypatch):
    from weir import layers

    monkeypatch.setattr(layers, "_warned_zero_dense", False)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 4))) -> tp.Numpy:
        h = flow.layers.dense(x, 3)
        h = flow.layers.dense(h, 3)
        return flow.layers.dense(h, 2, kernel_initializer=flow.random_normal_initializer())

    with pytest.warns(UserWarning, match=r"flow.layers.dense\('Dense'\) has no kernel_initializer") as warned:
        job(_x((2, 4)))
    assert len([w for w in warned if "kernel_initializer" in str(w.message)]) == 1


def test_unnamed_batch_normalizations_are_numbered_as_dense_layers_are():
    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        h = flow.layers.batch_normalization(x, axis=1)
        h = flow.layers.batch_normalization(h, axis=1)
        loss = flow.math.reduce_mean(h * h)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    train(_x((4, 3)))
    names = flow.get_all_variables().keys()
    assert {"BatchNorm-gamma", "BatchNorm_1-gamma"} <= set(names)


def test_cpu_device_num_zero_is_refused():
    with pytest.raises(ValueError, match=r"cpu_device_num: expected an int >= 1 .*got 0"):
        flow.config.cpu_device_num(0)
