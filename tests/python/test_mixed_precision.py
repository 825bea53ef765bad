"""Mixed precision: flow.float16 / flow.bfloat16 as dtypes, and func_config.enable_auto_mixed_precision(True)
running the products in bfloat16 on CPUs that have it, with accuracy as in float32."""

import re
import subprocess
import sys

import numpy as np
import pytest

import weir as flow
import weir.typing as tp
from weir import _C

NATIVE_BF16 = _C.mixed_precision_dtype(False) is not None
needs_bf16 = pytest.mark.skipif(not NATIVE_BF16, reason="this CPU has no native bfloat16 (AVX512_BF16 or AMX)")


@pytest.fixture(autouse=True)
def fresh_session():
    flow.clear_default_session()
    yield
    flow.clear_default_session()


def _bfloat16(values):
    """numpy's float32 rounded to bfloat16 (nearest, ties to even), as float32."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32)


def test_casts_to_16_bit_dtypes_round_to_nearest_and_come_back():
    x = np.array([1.0, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 65504.0, 70000.0, -3.14159, 1e-8], dtype=np.float32)

    @flow.global_function()
    def round_trip(v: tp.Numpy.Placeholder((7,))) -> tp.Numpy:
        return flow.cast(flow.cast(v, flow.bfloat16), flow.float32)

    @flow.global_function()
    def to_half(v: tp.Numpy.Placeholder((7,))) -> tp.Numpy:
        return flow.cast(v, flow.float16)

    @flow.global_function()
    def as_bfloat16(v: tp.Numpy.Placeholder((7,))) -> tp.Numpy:
        return flow.cast(v, flow.bfloat16)

    np.testing.assert_array_equal(round_trip(x), _bfloat16(x))
    half = to_half(x)
    assert half.dtype == np.float16
    with np.errstate(over="ignore"):  # 70000 is past float16's range: infinity, as in Weir
        np.testing.assert_array_equal(half, x.astype(np.float16))  # numpy rounds to nearest even too
    bf16 = as_bfloat16(x)  # numpy has no bfloat16: the values come back widened to float32, exactly
    assert bf16.dtype == np.float32
    np.testing.assert_array_equal(bf16, _bfloat16(x))


def test_float16_placeholders_and_variables_keep_their_dtype_through_a_checkpoint(tmp_path):
    @flow.global_function()
    def halves(v: tp.Numpy.Placeholder((3,), dtype=flow.float16)) -> tp.Numpy:
        w = flow.get_variable("w16", shape=(3,), dtype=flow.float16, initializer=flow.constant_initializer(0.5))
        return flow.cast(flow.cast(v, flow.float32) * flow.cast(w, flow.float32), flow.float16)

    out = halves(np.array([1, 2, 3], dtype=np.float16))
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, np.array([0.5, 1, 1.5], dtype=np.float16))
    flow.checkpoint.save(str(tmp_path / "ckpt"))
    meta = (tmp_path / "ckpt" / "w16" / "meta").read_text()
    assert "kFloat16" in meta  # OneFlow's layout: its data type name, two bytes per value
    assert (tmp_path / "ckpt" / "w16" / "out").stat().st_size == 6
    assert flow.get_all_variables()["w16"].numpy().dtype == np.float16


def _mlp(amp: bool):
    config = flow.FunctionConfig()
    if amp:
        config.enable_auto_mixed_precision(True)

    @flow.global_function(type="train", function_config=config)
    def train(images: tp.Numpy.Placeholder((100, 1, 28, 28)),
              labels: tp.Numpy.Placeholder((100,), dtype=flow.int32)) -> tp.Numpy:
        initializer = flow.truncated_normal(0.1)
        hidden = flow.layers.dense(flow.reshape(images, [100, -1]), 512, activation=flow.nn.relu,
                                   kernel_initializer=initializer, name="hidden")
        logits = flow.layers.dense(hidden, 10, kernel_initializer=initializer, name="output")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    @flow.global_function(type="predict", function_config=config)
    def predict(images: tp.Numpy.Placeholder((100, 1, 28, 28))) -> tp.Numpy:
        initializer = flow.truncated_normal(0.1)  # the train job's variables: initialized there
        hidden = flow.layers.dense(flow.reshape(images, [100, -1]), 512, activation=flow.nn.relu,
                                   kernel_initializer=initializer, name="hidden")
        return flow.layers.dense(hidden, 10, kernel_initializer=initializer, name="output")

    return train, predict


@needs_bf16
def test_auto_mixed_precision_runs_the_products_in_bfloat16_and_shows_it_in_the_plan():
    train, _ = _mlp(amp=True)
    dot = flow.plan_dot(train)
    labels = re.findall(r'^\s*t\d+ \[label="([^"]*)"', dot, re.MULTILINE)  # the actors, not the registers
    ops = [label.split("\\n") for label in labels]
    # The products, 2 forward, 2 weight gradients (fused with their updates) and the hidden layer's
    # gradient, read bf16 (and write f32: fused with their bias, relu, update or cast on the CPU).
    products = [op for op in ops if op[1].startswith("matmul")]
    assert len(products) == 5 and all(op[-1] in ("bf16", "bf16->f32") for op in products), products
    # Casts to bf16: the images, hidden and both weights forward (each once), two gradients backward.
    assert sum(op[1] == "cast" and op[-1] == "f32->bf16" for op in ops) == 6
    assert [op for op in ops if op[1] == "unary_grad"][0][-1] == "f32"  # elementwise ops stay f32
    updates = [op for op in ops if op[1] == "sgd_update"]
    assert updates and all(op[-1] == "f32" for op in updates)  # the biases' updates: f32 master weights


@needs_bf16
def test_mnist_mlp_under_mixed_precision_learns_as_in_float32():
    (train_images, train_labels), (test_images, test_labels) = flow.data.load_mnist(100)
    accuracy = {}
    for amp in (False, True):
        flow.clear_default_session()
        train, predict = _mlp(amp)
        flow.train.CheckPoint().init()
        for images, labels in zip(train_images, train_labels):
            train(images, labels)
        correct = sum(int((np.argmax(predict(images), 1) == labels).sum()) for images, labels in zip(test_images, test_labels))
        accuracy[amp] = correct / (len(test_labels) * 100)
    assert accuracy[True] > 0.93  # one epoch (twenty reach 98 %: bench/amp.py --accuracy)
    assert abs(accuracy[True] - accuracy[False]) < 0.006, accuracy


@needs_bf16
def test_a_predict_job_keeps_the_weights_bfloat16_copies_until_a_train_call_changes_them():
    train, predict = _mlp(amp=True)
    labels = re.findall(r'^\s*t\d+ \[label="([^"]*)"', flow.plan_dot(predict), re.MULTILINE)
    kept = sorted(label.split("\\n")[0] for label in labels if "kept across calls" in label)
    assert kept == ["hidden-weight/to_bf16", "output-weight/to_bf16"], kept
    flow.train.CheckPoint().init()
    rng = np.random.default_rng(0)
    images = rng.random((100, 1, 28, 28), dtype=np.float32)
    digits = rng.integers(0, 10, 100).astype(np.int32)

    def expected():  # the predict job's math in numpy, from the weights as they are now ((out, in) each)
        v = {name: variable.numpy() for name, variable in flow.get_all_variables().items()}
        hidden = np.maximum(_bfloat16(images.reshape(100, -1)) @ _bfloat16(v["hidden-weight"]).T + v["hidden-bias"], 0)
        return _bfloat16(hidden) @ _bfloat16(v["output-weight"]).T + v["output-bias"]

    with flow.profiler.profile() as prof:
        for step in range(3):
            for _ in range(3):
                np.testing.assert_allclose(predict(images), expected(), rtol=1e-2, atol=1e-3)
            train(images, digits)  # changes every weight: the next call casts them again
    actors = {a.name: a for job in prof.jobs if job.job == "predict" for a in job.actors}
    for name in kept:
        # Three calls after each change: the first on each of the cast's slots converts, the rest keep.
        assert actors[name].firings == 9 and 3 <= actors[name].kept <= 6, actors[name]


def test_without_native_bfloat16_the_job_says_it_keeps_float32():
    # A child process with oneDNN capped at AVX2: the CPU then has no bfloat16 products.
    program = (
        "import weir as flow, weir.typing as tp, numpy as np\n"
        "config = flow.FunctionConfig()\n"
        "config.enable_auto_mixed_precision(True)\n"
        "@flow.global_function(function_config=config)\n"
        "def f(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:\n"
        "    return flow.matmul(x, flow.get_variable('w', shape=(3, 2), initializer=flow.ones_initializer()))\n"
        "print(f(np.ones((2, 3), np.float32)).tolist())\n"
        "print('bf16' in flow.plan_dot(f))\n"
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120,
                            env={**__import__("os").environ, "ONEDNN_MAX_CPU_ISA": "AVX2"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["[[3.0,", "3.0],", "[3.0,", "3.0]]", "False"]
    assert "no native bfloat16" in result.stderr and "jobs run in float32" in result.stderr


def test_a_bfloat16_placeholder_is_refused_with_the_way_around():
    with pytest.raises(TypeError, match="numpy has no bfloat16 arrays.*flow.cast"):
        tp.Numpy.Placeholder((2,), dtype=flow.bfloat16)


def test_a_gpu_session_without_a_gpu_runs_mixed_precision_as_on_the_cpu():
    if flow.visible_gpus() > 0:
        pytest.skip("this machine has a GPU")
    flow.config.gpu_device_num(1)
    config = flow.FunctionConfig()
    config.enable_auto_mixed_precision(True)

    @flow.global_function(function_config=config)
    def f(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        return flow.matmul(x, flow.get_variable("w", shape=(3, 2), initializer=flow.ones_initializer()))

    np.testing.assert_array_equal(f(np.ones((2, 3), np.float32)), np.full((2, 2), 3.0, np.float32))
    assert ("bf16" in flow.plan_dot(f)) == NATIVE_BF16
