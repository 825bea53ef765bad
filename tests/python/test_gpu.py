"""GPUs from Python: flow.config.gpu_device_num(n) runs jobs on n GPUs when the build has CUDA and they
are visible (training matches the CPU's, on one GPU and data parallel on two, variables read back as
numpy), and falls back to the CPU with one notice saying why otherwise."""

import ctypes
import os
import subprocess
import sys

import numpy as np
import pytest

import weir as flow
import weir.typing as tp

BATCH = 16
FEATURES = 12


def _data(step):
    rng = np.random.default_rng(step)
    return rng.uniform(-1, 1, (BATCH, FEATURES)).astype(np.float32), rng.integers(0, 4, BATCH).astype(np.int32)


def _train(steps, gpus, devices=1):
    """`devices` GPUs (or, with gpus=0, CPU devices), the batch split over them."""
    flow.clear_default_session()
    if gpus:
        flow.config.gpu_device_num(gpus)
    else:
        flow.config.cpu_device_num(devices)
    device = "gpu" if gpus else "cpu"

    @flow.global_function(type="train")
    def train(images: tp.Numpy.Placeholder((BATCH, FEATURES)),
              labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement(device, f"0:0-{devices - 1}"):
            init = flow.truncated_normal(0.3)
            hidden = flow.layers.dense(images, 16, activation=flow.nn.relu, kernel_initializer=init, name="hidden")
            logits = flow.layers.dense(hidden, 4, kernel_initializer=init, name="output")
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="loss")
            flow.optimizer.Adam(flow.optimizer.PiecewiseConstantScheduler([], [0.01])).minimize(loss)
            return loss

    losses = [train(*_data(step)) for step in range(steps)]
    resource = flow.current_resource()
    return losses, {name: var.numpy() for name, var in flow.get_all_variables().items()}, resource


_MAPPED_CUDA = (
    "def mapped_cuda():\n"
    "    names = ('libweir_cuda', 'libcudart', 'libcublas', 'libcudnn', 'libnccl')\n"
    "    return sorted({n for line in open('/proc/self/maps') for n in names if n in line})\n"
)


def _driver_present():
    if any(os.path.exists(node) for node in ("/dev/nvidiactl", "/proc/driver/nvidia/version", "/dev/dxg")):
        return True
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def test_a_cpu_program_maps_no_cuda_library():
    """The CUDA backend is loaded only when a GPU is asked for: import, CPU jobs and (without an NVIDIA
    driver) a GPU session that falls back to the CPU map none of cudart, cuBLAS, cuDNN or NCCL."""
    program = _MAPPED_CUDA + (
        "import numpy as np, weir as flow, weir.typing as tp\n"
        "print('import', mapped_cuda())\n"
        "@flow.global_function(type='predict')\n"
        "def f(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:\n"
        "    return flow.math.tanh(x)\n"
        "f(np.ones(3, np.float32))\n"
        "print('cpu job', mapped_cuda())\n"
        "flow.clear_default_session()\n"
        "flow.config.gpu_device_num(1)\n"
        "f(np.ones(3, np.float32))\n"
        "print('gpu asked', mapped_cuda())\n"
        "gpu_ops = flow.supported_ops('gpu')\n"
        "print('gpu kernels', mapped_cuda(), len(gpu_ops))\n"
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(" [", 1) for line in result.stdout.splitlines() if " [" in line)
    assert lines["import"] == "]" and lines["cpu job"] == "]", result.stdout
    if not _driver_present():
        assert lines["gpu asked"] == "]", result.stdout
    if flow.supported_ops("gpu"):  # a CUDA build: asking for its kernels loads the backend
        assert lines["gpu kernels"].startswith("'libcublas', 'libcudart', 'libcudnn', 'libnccl', 'libweir_cuda']")


def test_visible_gpus_counts_cuda_devices():
    assert isinstance(flow.visible_gpus(), int) and flow.visible_gpus() >= 0


def test_without_a_gpu_a_gpu_session_runs_on_the_cpu_saying_why():
    if flow.visible_gpus() > 0:
        pytest.skip("a GPU is visible: the session uses it")
    program = (
        "import numpy as np, weir as flow, weir.typing as tp\n"
        "flow.config.gpu_device_num(1)\n"
        "@flow.global_function(type='predict')\n"
        "def f(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:\n"
        "    with flow.scope.placement('gpu', '0:0'):\n"
        "        return flow.math.tanh(x)\n"
        "print(f(np.ones(3, np.float32)).tolist(), flow.current_resource()['gpu_device_num'])\n"
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "1 GPU device(s) requested" in result.stderr and "runs on 1 CPU device(s) instead" in result.stderr
    assert result.stderr.count("GPU device(s) requested") == 1  # one notice
    assert ("this build has no CUDA" in result.stderr) or ("0 GPU(s) visible" in result.stderr)
    assert result.stdout.split()[-1] == "0"


@pytest.mark.skipif(flow.visible_gpus() == 0, reason="no GPU visible")
def test_training_on_the_gpu_matches_the_cpu():
    cpu_losses, cpu_variables, _ = _train(5, 0)
    gpu_losses, gpu_variables, resource = _train(5, 1)
    assert resource["gpu_device_num"] == 1
    for a, b in zip(cpu_losses, gpu_losses):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
    assert cpu_variables.keys() == gpu_variables.keys()
    for name, value in cpu_variables.items():
        assert isinstance(gpu_variables[name], np.ndarray)
        np.testing.assert_allclose(gpu_variables[name], value, rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.skipif(flow.visible_gpus() < 2, reason="fewer than 2 GPUs visible")
def test_data_parallel_training_on_two_gpus_of_one_process_matches_two_cpu_devices():
    cpu_losses, cpu_variables, _ = _train(5, 0, devices=2)
    gpu_losses, gpu_variables, resource = _train(5, 2, devices=2)
    assert resource["gpu_device_num"] == 2
    for a, b in zip(cpu_losses, gpu_losses):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
    for name, value in cpu_variables.items():
        np.testing.assert_allclose(gpu_variables[name], value, rtol=1e-4, atol=1e-5, err_msg=name)


def test_the_gpu_benchmark_runs(tmp_path):
    """bench/gpu_step.py on the CPU (--smoke-cpu): the program a GPU day runs keeps working."""
    import json
    import os

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    kinds = "weir,weir-tf32,weir-amp,torch-eager,torch-eager-amp"
    result = subprocess.run([sys.executable, os.path.join(root, "bench", "gpu_step.py"), "--smoke-cpu", "--models", "mlp",
                             "--steps", "2", "--repeats", "1", "--warmup", "1", "--kinds", kinds],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.splitlines()[-1])
    rows = summary["models"]["mlp"]
    assert summary["smoke_cpu"] and rows["weir"]["step_ms"] > 0
    for kind in kinds.split(","):
        assert "step_ms" in rows[kind] or "skipped" in rows[kind], (kind, rows[kind])


def test_tensor_float_32_compute_is_checked_and_leaves_cpu_results_exact():
    with pytest.raises(ValueError, match="enable_tensor_float_32_compute: expected True or False, got 1"):
        flow.config.enable_tensor_float_32_compute(1)
    # On the CPU (or on a GPU, f32 products within TF32's rounding) the switch computes the same product.
    results = []
    for allowed in (False, True):
        flow.clear_default_session()
        flow.config.enable_tensor_float_32_compute(allowed)

        @flow.global_function(type="predict")
        def product(x: tp.Numpy.Placeholder((BATCH, FEATURES))) -> tp.Numpy:
            return flow.matmul(x, x, transpose_b=True)

        results.append(product(_data(0)[0]))
    flow.clear_default_session()
    np.testing.assert_allclose(results[1], results[0], rtol=5e-3, atol=5e-3)


def test_copy_stream_threshold_is_checked_and_taken():
    with pytest.raises(ValueError, match="copy_stream_threshold_mb: expected a number of MiB in \\[0, 1048576\\], got -1"):
        flow.config.copy_stream_threshold_mb(-1)
    with pytest.raises(ValueError, match="got True"):
        flow.config.copy_stream_threshold_mb(True)
    # Either placement of the copies computes the same (on the GPU where one is visible, else the CPU).
    results = []
    for mb in (0, 1):
        flow.clear_default_session()
        flow.config.gpu_device_num(1)
        flow.config.copy_stream_threshold_mb(mb)

        @flow.global_function(type="predict")
        def scaled(x: tp.Numpy.Placeholder((BATCH, FEATURES))) -> tp.Numpy:
            with flow.scope.placement("gpu", "0:0"):
                return flow.math.tanh(x) * 2

        images = _data(0)[0]
        results.append(scaled(images))
        np.testing.assert_allclose(results[-1], np.tanh(images) * 2, rtol=1e-5)
    flow.clear_default_session()
