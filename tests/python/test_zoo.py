"""Our model zoo (examples/python/zoo/, written in OneFlow's API) trains from OFRecord files with no
placeholder: the CNNs from MNIST written as JPEG OFRecords by weir.data.ofrecord, read, decoded,
cropped, resized and normalized by the job itself, as OneFlow's CNN trainer reads ImageNet; Wide &
Deep from synthetic click records. Sizes chosen to keep `make test` short; the CNNs' accuracies after
these few steps are far from converged ones."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAIN_CNN = os.path.join(ROOT, "examples", "python", "zoo", "train_cnn.py")


def _train(model, steps, data):
    result = subprocess.run([sys.executable, TRAIN_CNN, "--model", model, "--steps", str(steps), "--data", str(data),
                             "--train-examples", "6000"], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    losses = [float(v) for v in re.findall(r"^step \d+: loss (\S+)$", result.stdout, re.MULTILINE)]
    accuracy = float(re.search(r"^accuracy: (\S+)%$", result.stdout, re.MULTILINE).group(1))
    return losses, accuracy, result.stdout


def test_resnet50_trains_on_mnist_jpeg_records(tmp_path_factory):
    # 150 steps of 32 at 32x32 (4800 digits): 92.7 % when measured; a converged ResNet-50 does 99 %+.
    losses, accuracy, out = _train("resnet50", 150, tmp_path_factory.getbasetemp() / "mnist-ofrecord")
    assert losses[-1] < losses[0] / 2, out
    assert accuracy > 85.0, out


def test_mobilenet_v2_trains_on_mnist_jpeg_records(tmp_path_factory):
    # 400 steps of 32 at 32x32: 89.8 % when measured.
    losses, accuracy, out = _train("mobilenetv2", 400, tmp_path_factory.getbasetemp() / "mnist-ofrecord")
    assert losses[-1] < losses[0] / 2, out
    assert accuracy > 80.0, out


def test_wide_and_deep_learns_synthetic_clicks_from_ofrecords(tmp_path):
    # One epoch of 128000 synthetic clicks (batch 256): AUC 0.843 when measured, against 0.887 for the
    # hidden model that drew the labels.
    result = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "python", "zoo", "wide_and_deep.py"),
                             "--data", str(tmp_path)], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    match = re.search(r"^auc: (\S+) \(ceiling (\S+)\)$", result.stdout, re.MULTILINE)
    auc, ceiling = float(match.group(1)), float(match.group(2))
    assert auc > 0.8 and ceiling - auc < 0.08, result.stdout


def test_the_model_zoo_benchmark_runs():
    """bench/model_zoo.py (ResNet-50, Weir through bench/train_step against PyTorch) at a toy size on the
    CPU: the program a GPU day runs keeps working, and both sides train the same network."""
    import json

    binary = os.path.join(os.environ.get("WEIR_BUILD", os.path.join(ROOT, "build")), "bench", "train_step")
    assert os.access(binary, os.X_OK), f"{binary}: build it first (make build), or set WEIR_BUILD"
    result = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "bench", "model_zoo.py"), "--image-size", "32",
                             "--batch", "2", "--steps", "1", "--repeats", "1", "--warmup", "1", "--weir-binary", binary,
                             "--kinds", "weir,torch-eager,torch-compile"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    summary = json.loads(result.stdout.splitlines()[-1])
    rows = summary["rows"]
    assert rows["weir"]["step_ms"] > 0 and rows["weir"]["model"] == "resnet50", rows["weir"]
    assert rows["weir"]["batch"] == 2 and rows["weir"]["image_size"] == 32
    for kind in ("torch-eager", "torch-compile"):  # Debian's torch 1.13 has no torch.compile
        assert "step_ms" in rows[kind] or "skipped" in rows[kind], (kind, rows[kind])
