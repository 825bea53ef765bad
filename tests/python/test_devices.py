"""Several CPU devices from Python: flow.config.cpu_device_num, placement scopes, the mirrored view
with one array per device (training like one device on the whole batch), pipeline stages, and
the errors a bad placement or a wrong list length give."""

import numpy as np
import pytest

import weir as flow
import weir.typing as tp

BATCH = 12
FEATURES = 10


def _data(step, batch=BATCH):
    rng = np.random.default_rng(step)
    return rng.uniform(-1, 1, (batch, FEATURES)).astype(np.float32), rng.integers(0, 4, batch).astype(np.int32)


def _mlp(images, labels):
    init = flow.truncated_normal(0.3)
    hidden = flow.layers.dense(images, 16, activation=flow.nn.relu, kernel_initializer=init, name="hidden")
    logits = flow.layers.dense(hidden, 4, kernel_initializer=init, name="output")
    loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="loss")
    flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum=0.9).minimize(loss)
    return loss


def _train_one_device(steps):
    @flow.global_function(type="train")
    def train(images: tp.Numpy.Placeholder((BATCH, FEATURES)),
              labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        return _mlp(images, labels)

    losses = [train(*_data(step)) for step in range(steps)]
    return losses, {name: var.numpy() for name, var in flow.get_all_variables().items()}


def test_mirrored_training_on_two_devices_matches_one_device_on_the_whole_batch():
    losses, expected = _train_one_device(3)
    flow.clear_default_session()

    flow.config.cpu_device_num(2)
    config = flow.FunctionConfig()
    config.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(type="train", function_config=config)
    def train(images: tp.ListNumpy.Placeholder((BATCH // 2, FEATURES)),
              labels: tp.ListNumpy.Placeholder((BATCH // 2,), dtype=flow.int32)) -> tp.ListNumpy:
        return _mlp(images, labels)

    for step in range(3):
        images, labels = _data(step)
        loss = train([images[:6], images[6:]], [labels[:6], labels[6:]])
        assert isinstance(loss, list) and len(loss) == 2 and loss[0].shape == (6,)
        np.testing.assert_allclose(np.concatenate(loss), losses[step], rtol=1e-5)
    got = {name: var.numpy() for name, var in flow.get_all_variables().items()}
    assert sorted(got) == sorted(expected)
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-4, atol=1e-6, err_msg=name)


def test_a_numpy_placeholder_in_a_mirrored_job_is_split_over_the_devices_as_in_oneflow():
    # A consistent (tp.Numpy) input of a mirrored job: the caller passes one array, each device gets
    # its rows (its blob has the per-device shape); before, the job wanted one whole array per device.
    losses, expected = _train_one_device(3)
    flow.clear_default_session()
    flow.config.cpu_device_num(2)
    config = flow.FunctionConfig()
    config.default_logical_view(flow.scope.mirrored_view())
    traced = []

    @flow.global_function(type="train", function_config=config)
    def train(images: tp.Numpy.Placeholder((BATCH, FEATURES)),
              labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.ListNumpy:
        traced.append((images.shape, labels.shape))
        return _mlp(images, labels)

    for step in range(3):
        loss = train(*_data(step))
        assert [piece.shape for piece in loss] == [(6,), (6,)]
        np.testing.assert_allclose(np.concatenate(loss), losses[step], rtol=1e-5)
    assert traced == [((BATCH // 2, FEATURES), (BATCH // 2,))]
    got = {name: var.numpy() for name, var in flow.get_all_variables().items()}
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-4, atol=1e-6, err_msg=name)

    @flow.global_function(function_config=config)
    def doubled(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        return x * 2  # a tp.Numpy result of a mirrored job: the devices' pieces concatenated

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(doubled(x), x * 2)

    @flow.global_function(function_config=config)
    def odd(x: tp.Numpy.Placeholder((5, 3))) -> tp.Numpy:
        return x

    with pytest.raises(ValueError, match=r"odd\(\): argument 'x' is a tp.Numpy placeholder of shape \(5, 3\) in a mirrored "
                                         r"job, which splits its rows over the 2 devices: 5 rows do not split evenly"):
        odd(np.zeros((5, 3), np.float32))
    assert flow.current_resource()["cpu_device_num"] == 2
    dot = flow.plan_dot(train)
    assert "cpu:1" in dot and "reduce_scatter(" in dot  # each device averages its rows of each gradient


def test_a_list_of_the_wrong_length_names_the_argument_and_the_counts():
    flow.config.cpu_device_num(2)
    config = flow.FunctionConfig()
    config.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(function_config=config)
    def double(x: tp.ListNumpy.Placeholder((3,))) -> tp.ListNumpy:
        return x * 2

    x = np.ones(3, np.float32)
    with pytest.raises(ValueError, match=r"double\(\): argument 'x' must be a list of 2 entries \(one per device the job is placed on\), got 3"):
        double([x, x, x])
    out = double([x, x + 1])
    np.testing.assert_allclose(out[1], np.full(3, 4.0))


def test_a_mirrored_job_placed_on_some_devices_takes_one_array_per_device_of_its_placement():
    # OneFlow's tests place a mirrored job on "0:0" of a 4-device session and pass one array.
    flow.config.cpu_device_num(3)
    for ids, count in (("0:0", 1), ("0:1-2", 2)):
        config = flow.FunctionConfig()
        config.default_placement_scope(flow.scope.placement("cpu", ids))
        config.default_logical_view(flow.scope.mirrored_view())

        @flow.global_function(function_config=config)
        def negate(x: tp.ListNumpy.Placeholder((2, 3))) -> tp.ListNumpy:
            return -x

        arrays = [np.full((2, 3), i, np.float32) for i in range(count)]
        out = negate(arrays)
        assert len(out) == count
        for got, sent in zip(out, arrays):
            np.testing.assert_array_equal(got, -sent)
        with pytest.raises(ValueError, match=rf"must be a list of {count} entr.* \(one per device the job is placed on\), "
                                             rf"got {count + 1}"):
            negate(arrays + [arrays[0]])
        flow.clear_default_session()
        flow.config.cpu_device_num(3)


def test_a_session_without_a_device_count_gets_the_cpu_devices_its_placements_name():
    # As OneFlow's CPU placements may name any device ids: no flow.config device count, so the
    # session starts with as many CPU devices as the jobs' "cpu" placements name (3 here).
    @flow.global_function()
    def spread(x: tp.Numpy.Placeholder((6,))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-2"):
            return flow.math.reduce_sum(x * 2, keepdims=True)

    @flow.global_function()
    def single(x: tp.Numpy.Placeholder((6,))) -> tp.Numpy:
        return x + 1

    x = np.arange(6, dtype=np.float32)
    np.testing.assert_allclose(spread(x), [30.0])
    np.testing.assert_allclose(single(x), x + 1)
    assert "cpu:2" in flow.plan_dot(spread)


def test_a_placement_beyond_the_session_is_a_clear_error():
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def far(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:5"):
            return x * 2

    with pytest.raises(ValueError, match=r'placed on cpu "0:5", but the session has one machine \(0\) with 2 devices') as raised:
        far(np.ones(2, np.float32))
    message = str(raised.value)
    assert message.count("does not compile") == 1, message
    assert "set the device count" in message
    # The user's line that made the op the planner names (its internal name means nothing to them).
    assert "the op was created at " + __file__ in message and "return x * 2" in message, message

    @flow.global_function()
    def elsewhere(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        with flow.scope.placement("cpu", "1:0"):
            return x * 2

    # Machine 1 needs a second process, not more devices.
    with pytest.raises(ValueError, match=r"place it on machine 0 or run 2 processes \(weir-launch"):
        elsewhere(np.ones(2, np.float32))


def test_placement_scopes_nest_and_place_ops_on_their_devices():
    flow.config.cpu_device_num(3)

    @flow.global_function()
    def nested(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:1"):
            y = x * 2
            with flow.scope.placement("cpu", ["0:2"]):
                z = y + 1
            return z * 3

    np.testing.assert_allclose(nested(np.ones(2, np.float32)), [9, 9])
    dot = flow.plan_dot(nested)
    assert "cpu:1" in dot and "cpu:2" in dot


def test_two_placement_stages_compute_what_one_device_computes():
    losses, expected = _train_one_device(3)
    flow.clear_default_session()
    flow.config.gpu_device_num(2)  # two GPUs where visible, else two CPU devices

    @flow.global_function(type="train")
    def train(images: tp.Numpy.Placeholder((BATCH, FEATURES)),
              labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        init = flow.truncated_normal(0.3)
        with flow.scope.placement("gpu", "0:0"):
            hidden = flow.layers.dense(images, 16, activation=flow.nn.relu, kernel_initializer=init, name="hidden")
        with flow.scope.placement("gpu", "0:1"):
            logits = flow.layers.dense(hidden, 4, kernel_initializer=init, name="output")
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum=0.9).minimize(loss)
        return loss

    for step in range(3):
        np.testing.assert_allclose(train(*_data(step)), losses[step], rtol=1e-5)
    got = {name: var.numpy() for name, var in flow.get_all_variables().items()}
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-4, atol=1e-6, err_msg=name)
    assert flow.current_resource()["cpu_device_num"] == 2
    dot = flow.plan_dot(train)
    assert "cpu:0" in dot and "cpu:1" in dot


def test_consistent_training_on_two_devices_matches_one_device():
    losses, expected = _train_one_device(3)
    flow.clear_default_session()
    flow.config.cpu_device_num(2)  # the same program, its batch split over two devices

    @flow.global_function(type="train")
    def train(images: tp.Numpy.Placeholder((BATCH, FEATURES)),
              labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        return _mlp(images, labels)

    for step in range(3):
        loss = train(*_data(step))
        assert loss.shape == (BATCH,)
        np.testing.assert_allclose(loss, losses[step], rtol=1e-5)
    got = {name: var.numpy() for name, var in flow.get_all_variables().items()}
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-4, atol=1e-6, err_msg=name)
    dot = flow.plan_dot(train)
    assert "reduce_scatter(" in dot and "cpu:1" in dot


def _hybrid(images, labels):
    init = flow.truncated_normal(0.3)
    hidden = flow.layers.dense(images, 16, activation=flow.nn.relu, kernel_initializer=init, name="hidden")
    hidden = hidden.with_split_distribute(1).with_gradient_distribute(flow.distribute.broadcast())
    logits = flow.layers.dense(hidden, 4, kernel_initializer=init, name="output",
                               model_distribute=flow.distribute.split(0))
    scale = flow.get_variable("scale", shape=(4, 1), initializer=flow.ones_initializer(),
                              distribute=flow.distribute.split(0))
    logits = logits * flow.reshape(scale, [4])
    loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="loss")
    flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum=0.9).minimize(loss)
    return loss


def test_model_parallel_layers_and_hints_train_like_one_device():
    results = []
    for devices in (1, 2):
        flow.clear_default_session()
        flow.config.cpu_device_num(devices)

        @flow.global_function(type="train")
        def train(images: tp.Numpy.Placeholder((BATCH, FEATURES)),
                  labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
            return _hybrid(images, labels)

        losses = [train(*_data(step)) for step in range(3)]
        results.append((losses, {name: var.numpy() for name, var in flow.get_all_variables().items()}))
    (one_losses, one_vars), (two_losses, two_vars) = results
    for a, b in zip(one_losses, two_losses):
        np.testing.assert_allclose(b, a, rtol=1e-5)
    assert two_vars["output-weight"].shape == (4, 16)
    for name in one_vars:
        np.testing.assert_allclose(two_vars[name], one_vars[name], rtol=1e-4, atol=1e-6, err_msg=name)


def test_default_placement_scope_places_a_job_outside_its_scopes():
    flow.config.cpu_device_num(2)
    config = flow.FunctionConfig()
    config.default_placement_scope(flow.scope.placement("cpu", "0:1"))

    @flow.global_function(function_config=config)
    def triple(x: tp.Numpy.Placeholder((4,))) -> tp.Numpy:
        return x * 3

    np.testing.assert_allclose(triple(np.ones(4, np.float32)), np.full(4, 3.0))
    dot = flow.plan_dot(triple)
    assert "scalar\\ncpu:1" in dot and "scalar\\ncpu:0" not in dot


def test_first_api_docs_programs_train_on_two_devices_like_one_device():
    # The docs' earlier consistent_strategy.py and hybrid_parallelism_mlp.py (OneFlow 0.2's first API;
    # examples/python/ now holds the later versions): training set up in the function config
    # (primary_lr, naive update, add_loss), the consistent strategy named, named placeholders,
    # unnamed dense layers (one set of variables each), results through .get() / .async_get().
    results = []
    for devices in (1, 2):
        flow.clear_default_session()
        flow.config.cpu_device_num(devices)
        config = flow.function_config()
        config.default_data_type(flow.float)
        with pytest.warns(DeprecationWarning):
            config.default_distribute_strategy(flow.distribute.consistent_strategy())
            config.train.primary_lr(0.5)
            config.train.model_update_conf({"naive_conf": {}})

        with pytest.warns(DeprecationWarning):

            @flow.global_function(config)
            def train_job(images: tp.Numpy.Placeholder((BATCH, FEATURES), dtype=flow.float, name="myimages"),
                          labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32, name="mylabels")):
                initializer = flow.truncated_normal(0.3)
                hidden = flow.layers.dense(images, 16, activation=flow.nn.relu, kernel_initializer=initializer)
                logits = flow.layers.dense(hidden, 4, kernel_initializer=initializer,
                                           model_distribute=flow.distribute.split(axis=0))
                loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
                flow.losses.add_loss(loss)
                return loss

        with pytest.warns(DeprecationWarning):
            losses = [train_job(*_data(0)).get().ndarray().copy()]
        for _ in range(2):  # the same batch again: its loss falls
            train_job(*_data(0)).async_get(lambda loss: losses.append(loss.numpy().copy()))
        flow.sync_default_session()
        results.append((losses, {name: var.numpy() for name, var in flow.get_all_variables().items()}))
    (one_losses, one_vars), (two_losses, two_vars) = results
    assert len(two_losses) == 3 and two_losses[2].mean() < two_losses[0].mean()
    for a, b in zip(one_losses, two_losses):
        np.testing.assert_allclose(b, a, rtol=1e-5)
    assert two_vars["Dense_1-weight"].shape == (4, 16) and two_vars["Dense-weight"].shape == (16, FEATURES)
    for name in one_vars:
        np.testing.assert_allclose(two_vars[name], one_vars[name], rtol=1e-4, atol=1e-6, err_msg=name)


def test_supported_ops_say_what_runs_where():
    cpu = flow.supported_ops("cpu")
    assert cpu["matmul"] == ["f32", "f64", "bf16"]
    assert "sparse_softmax_cross_entropy" in cpu and "conv2d" in cpu
    gpu = flow.supported_ops("gpu")
    assert set(gpu) <= set(cpu)  # every CUDA kernel has its CPU twin (the conformance reference)
    if gpu:  # a build with CUDA
        assert gpu["matmul"] == ["f32", "f64", "f16", "bf16"]
    with pytest.raises(ValueError, match="device must be 'cpu' or 'gpu', got 'tpu'"):
        flow.supported_ops("tpu")


def test_a_split_variable_beside_a_broadcast_one_in_a_predict_job():
    # OneFlow's checkpoint test found this not compiling on 2 devices: the broadcast variable, read as
    # each device's rows, left its whole-variable actor unread ("does not lead to the sink").
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def add() -> tp.Numpy:
        x = flow.get_variable("x", shape=(4, 3), initializer=flow.ones_initializer(),
                              distribute=flow.distribute.split(0))
        y = flow.get_variable("y", shape=(4, 3), initializer=flow.constant_initializer(2.0))
        return x + y

    np.testing.assert_array_equal(add(), np.full((4, 3), 3.0, np.float32))


def test_variable_split_along_axis_1_is_held_whole_and_trains_like_one_device(capfd):
    # Its parts along axis 1 are not ranges of its storage: it is held whole on the first device,
    # each op reads its part through boxing, and the values are those of one device.
    results = []
    for devices in (1, 2):
        flow.clear_default_session()
        flow.config.cpu_device_num(devices)

        @flow.global_function(type="train")
        def train(images: tp.Numpy.Placeholder((BATCH, FEATURES))) -> tp.Numpy:
            weight = flow.get_variable("weight", shape=(FEATURES, 6), initializer=flow.random_uniform_initializer(),
                                       distribute=flow.distribute.split(1))
            loss = flow.math.reduce_mean(flow.math.square(flow.matmul(images, weight)), axis=1)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
            return loss

        losses = [train(_data(step)[0]) for step in range(3)]
        results.append((losses, flow.get_all_variables()["weight"].numpy()))
    (one_losses, one_weight), (two_losses, two_weight) = results
    for a, b in zip(one_losses, two_losses):
        np.testing.assert_allclose(b, a, rtol=1e-5)
    np.testing.assert_allclose(two_weight, one_weight, rtol=1e-5, atol=1e-7)
    assert "variable 'weight' is split along axis 1 over 2 devices" in capfd.readouterr().err
