"""Our model zoo (examples/python/zoo/, written in OneFlow's API) trains from OFRecord files of real
images with no placeholder: MNIST written as JPEG OFRecords by weir.data.ofrecord, read, decoded,
cropped, resized and normalized by the job itself, as OneFlow's CNN trainer reads ImageNet. Sizes
chosen to keep `make test` short; the accuracies after these few steps are far from converged ones."""

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
