"""The example programs (the seeds' programs with only the imports changed, plus argument
parsing) run end to end on real MNIST (`make data`) and print what the seeds print."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples", "python")


def _run(script, *args, cwd):
    result = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, script), *args],
        cwd=cwd, capture_output=True, text=True, timeout=900,
    )
    assert result.returncode == 0, f"{script} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_async_mlp_trains_saves_and_evaluates(tmp_path):
    out = _run("async_single_job.py", "--epochs", "1", cwd=tmp_path)
    losses = [float(line) for line in out.splitlines() if re.fullmatch(r"-?\d+(\.\d+)?(e-?\d+)?", line)]
    assert len(losses) == 30  # every 20th of 600 steps, as the seed prints
    assert losses[-1] < losses[0] / 3
    assert "model saved" in out
    assert (tmp_path / "mlp_models_1" / "hidden-weight" / "out").exists()
    out = _run("async_batch_job.py", cwd=tmp_path)
    accuracy = float(re.search(r"accuracy: (\d+\.\d)%", out).group(1))
    assert accuracy > 90.0  # one epoch; twenty reach the seeds' 97.6 % (make demo)


def test_sync_lenet_trains_saves_and_evaluates(tmp_path):
    out = _run("synchronize_single_job.py", "--epochs", "1", "--steps", "60", cwd=tmp_path)
    losses = [float(line) for line in out.splitlines() if re.fullmatch(r"-?\d+(\.\d+)?(e-?\d+)?", line)]
    assert len(losses) == 3 and losses[-1] < losses[0]
    assert "model saved" in out
    for name in ("conv1-weight", "conv2-bias", "dense1-weight", "dense2-bias"):
        assert (tmp_path / "lenet_models_1" / name / "out").exists()
    out = _run("synchronize_batch_job.py", cwd=tmp_path)
    accuracy = float(re.search(r"accuracy: (\d+\.\d)%", out).group(1))
    assert accuracy > 70.0  # after 60 steps; 20 epochs reach the seeds' 99.3 %


def test_quick_start_prints_epoch_lines_and_accuracy(tmp_path):
    out = _run("mlp_mnist.py", "--epochs", "1", cwd=tmp_path)
    assert re.search(r"Epoch \[1/1\], Loss: \d+\.\d{4}", out)
    accuracy = float(re.search(r"accuracy: (\d+\.\d)%", out).group(1))
    assert accuracy > 90.0
