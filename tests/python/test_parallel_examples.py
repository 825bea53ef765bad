"""The docs' multi-device programs in examples/python/ (OneFlow's published programs with only the
imports changed, plus flags marked "Weir:" for shorter runs) run on 2 CPU devices on real MNIST
(`make data`) and print what the docs print: the mean loss every 20 steps."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples", "python")


def _losses(script, *args, cwd):
    result = subprocess.run([sys.executable, os.path.join(EXAMPLES, script), *args], cwd=cwd,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{script} failed:\n{result.stdout}\n{result.stderr}"
    assert "runs on 2 CPU device(s)" in result.stderr  # gpu_device_num(2) without 2 GPUs: CPU devices
    return [float(line) for line in result.stdout.splitlines() if re.fullmatch(r"-?\d+(\.\d+)?(e-?\d+)?", line)]


def test_mirrored_strategy_trains_on_two_devices(tmp_path):
    losses = _losses("mirrored_strategy.py", "--max-steps", "200", cwd=tmp_path)
    assert len(losses) == 10  # every 20th step
    assert losses[-1] < losses[0] / 4


def test_hybrid_parallelism_lenet_trains_as_a_two_stage_pipeline(tmp_path):
    losses = _losses("hybrid_parallelism_lenet.py", "--epochs", "1", "--max-steps", "60", cwd=tmp_path)
    assert len(losses) == 3
    assert losses[-1] < losses[0] / 2


def test_consistent_strategy_splits_lenet_batches_over_two_devices(tmp_path):
    losses = _losses("consistent_strategy.py", "--epochs", "1", "--max-steps", "60", cwd=tmp_path)
    assert len(losses) == 3
    assert losses[-1] < losses[0] / 2


def test_hybrid_parallelism_mlp_trains_a_model_parallel_output_layer(tmp_path):
    losses = _losses("hybrid_parallelism_mlp.py", "--epochs", "1", "--max-steps", "200", cwd=tmp_path)
    assert len(losses) == 10  # every 20th step
    assert losses[-1] < losses[0] / 4
