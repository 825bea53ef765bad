"""flow.distributed_partial_fc_sample: each part of the classes (one per device of the placement)
draws its share of the samples, its positive classes first; the labels map into the drawn list; the
weight's gradient is the sampled rows' gradients added back. On 1 and 4 CPU devices, the weight split
along its rows, as OneFlow's own test runs it."""

import numpy as np
import pytest
import weir as flow
import weir.typing as tp


def _train_job(devices, classes, num_sample, batch, label_dtype=flow.int32):
    flow.config.cpu_device_num(devices)
    seen = {}

    @flow.global_function(type="train")
    def job(labels: tp.Numpy.Placeholder((batch,), dtype=label_dtype)):
        with flow.scope.placement("cpu", "0:0"):
            weight = flow.get_variable("partial-fc-weight", shape=(classes, 8), dtype=flow.float,
                                       initializer=flow.random_uniform_initializer(minval=-10, maxval=10))
        with flow.scope.placement("cpu", f"0:0-{devices - 1}"):
            mapped, sampled_label, sampled_weight = flow.distributed_partial_fc_sample(
                weight=weight.with_distribute(flow.distribute.split(0)),
                label=labels.with_distribute(flow.distribute.broadcast()), num_sample=num_sample)
        with flow.scope.placement("cpu", "0:0"):
            sampled_weight = flow.identity(sampled_weight)
            loss = flow.math.square(sampled_weight)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), momentum=0).minimize(loss)
            flow.watch(weight, lambda v: seen.__setitem__("weight", v.numpy()))
            flow.watch_diff(weight, lambda v: seen.__setitem__("weight_diff", v.numpy()))
            flow.watch_diff(sampled_weight, lambda v: seen.__setitem__("sampled_diff", v.numpy()))
        return mapped, sampled_label, sampled_weight

    return job, seen


def _check(labels, mapped, sampled_label, sampled_weight, seen, parts, classes, num_sample):
    per_part, per_samples = classes // parts, num_sample // parts
    for p in range(parts):
        drawn = sampled_label[p * per_samples:(p + 1) * per_samples]
        assert np.all((drawn >= p * per_part) & (drawn < (p + 1) * per_part))
        assert len(np.unique(drawn)) == per_samples
        positives = np.unique(labels[(labels >= p * per_part) & (labels < (p + 1) * per_part)])
        np.testing.assert_array_equal(drawn[:len(positives)], positives)
    np.testing.assert_array_equal(sampled_label[mapped], labels)
    np.testing.assert_array_equal(sampled_weight, seen["weight"][sampled_label])
    expected = np.zeros_like(seen["weight"])
    expected[sampled_label] = seen["sampled_diff"]
    np.testing.assert_array_equal(seen["weight_diff"], expected)


@pytest.mark.parametrize("devices", [1, 4])
def test_each_part_draws_its_positives_first_and_the_gradient_scatters_back(devices):
    classes, num_sample, batch = 200, 64, 32
    job, seen = _train_job(devices, classes, num_sample, batch)
    rng = np.random.default_rng(devices)
    draws = []
    for _ in range(2):
        labels = rng.integers(0, classes, size=batch).astype(np.int32)
        mapped, sampled_label, sampled_weight = job(labels).get()
        mapped, sampled_label, sampled_weight = mapped.numpy(), sampled_label.numpy(), sampled_weight.numpy()
        assert mapped.dtype == sampled_label.dtype == np.int32 and sampled_weight.shape == (num_sample, 8)
        _check(labels, mapped, sampled_label, sampled_weight, seen, devices, classes, num_sample)
        draws.append(set(sampled_label) - set(labels))
    assert draws[0] != draws[1]  # the negatives are drawn anew each call


def test_int64_labels_and_a_draw_of_every_class():
    job, seen = _train_job(1, 12, 12, 5, flow.int64)
    labels = np.array([3, 3, 11, 0, 7], np.int64)
    mapped, sampled_label, sampled_weight = (b.numpy() for b in job(labels).get())
    np.testing.assert_array_equal(sampled_label[:4], [0, 3, 7, 11])
    np.testing.assert_array_equal(np.sort(sampled_label), np.arange(12))
    _check(labels, mapped, sampled_label, sampled_weight, seen, 1, 12, 12)


def test_bad_labels_and_too_many_positives_fail_the_call():
    job, _ = _train_job(1, 20, 4, 6)
    with pytest.raises(RuntimeError, match=r"label 20 at position 2 is outside \[0, 20\)"):
        job(np.array([1, 2, 20, 3, 4, 5], np.int32)).get()
    with pytest.raises(RuntimeError, match=r"part 0 has 6 positive classes among the labels, more than its 4 samples"):
        job(np.array([1, 2, 19, 3, 4, 5], np.int32)).get()

    @flow.global_function()
    def uneven(labels: tp.Numpy.Placeholder((2,), dtype=flow.int32)):
        weight = flow.get_variable("w", shape=(10, 3), initializer=flow.zeros_initializer())
        with flow.scope.placement("cpu", "0:0-3"):
            return flow.distributed_partial_fc_sample(weight, labels, 8)

    with pytest.raises(ValueError, match=r"must divide into the 4 devices of the placement"):
        uneven(np.zeros(2, np.int32))


def test_outside_a_placement_scope_the_parts_are_the_sessions_devices():
    flow.config.cpu_device_num(2)
    config = flow.FunctionConfig()
    seen = {}

    @flow.global_function(function_config=config)
    def job(labels: tp.Numpy.Placeholder((4,), dtype=flow.int32)):
        seen["parallel_num"] = flow.current_scope().device_parallel_desc_symbol.parallel_num
        weight = flow.get_variable("w", shape=(8, 2), initializer=flow.random_uniform_initializer())
        return flow.distributed_partial_fc_sample(weight.with_distribute(flow.distribute.split(0)), labels, 4)

    labels = np.array([0, 1, 6, 7], np.int32)
    mapped, sampled_label, _ = (b.numpy() for b in job(labels).get())
    assert seen["parallel_num"] == 2
    np.testing.assert_array_equal(sampled_label, [0, 1, 6, 7])  # two parts of 4 classes, 2 samples each
    np.testing.assert_array_equal(mapped, [0, 1, 2, 3])
