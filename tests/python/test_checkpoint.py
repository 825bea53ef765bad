"""Checkpoint APIs: flow.train.CheckPoint, flow.checkpoint.save/get, flow.load_variables,
flow.get_all_variables; OneFlow's on-disk layout."""

import os

import numpy as np
import pytest

import weir as flow
import weir.typing as tp


def _define_jobs():
    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((3,))) -> tp.Callback[tp.Numpy]:
        w = flow.get_variable("layer-weight", shape=(3,), initializer=flow.constant_initializer(1.0))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [3.0]), momentum=0).minimize(w * x)
        return w

    @flow.global_function()
    def read() -> tp.Numpy:
        return flow.get_variable("layer-weight", shape=(3,), initializer=flow.constant_initializer(1.0))

    return train, read


def test_save_writes_oneflow_layout_after_pending_callbacks(tmp_path):
    train, read = _define_jobs()
    seen = []
    for _ in range(4):
        train(np.ones(3, np.float32))(seen.append)
    path = tmp_path / "model"
    flow.checkpoint.save(str(path))
    assert len(seen) == 4  # every pending callback ran before the save returned
    assert (path / "snapshot_done").exists()
    raw = np.fromfile(path / "layer-weight" / "out", dtype=np.float32)
    np.testing.assert_allclose(raw, 1.0 - 4 * 1.0)  # 4 steps of lr 3 / 3 elements
    assert "data_type" in (path / "layer-weight" / "meta").read_text()
    steps = [name for name in os.listdir(path) if name.startswith("System-Train-TrainStep")]
    assert steps, "the train-step counter is saved too"


def test_get_returns_variables_and_single_variable_folders(tmp_path):
    train, read = _define_jobs()
    train(np.ones(3, np.float32))
    flow.checkpoint.save(str(tmp_path / "m"))
    variables = flow.checkpoint.get(str(tmp_path / "m"))
    assert "layer-weight" in variables
    np.testing.assert_allclose(variables["layer-weight"].numpy(), 0.0)
    assert variables["layer-weight"].shape == (3,)
    single = flow.checkpoint.get(str(tmp_path / "m" / "layer-weight"))
    np.testing.assert_allclose(single.numpy(), 0.0)


def test_load_variables_and_get_all_variables(tmp_path):
    train, read = _define_jobs()
    flow.load_variables({"layer-weight": np.array([7, 8, 9], np.float32), "unknown": np.zeros(1, np.float32)})
    np.testing.assert_allclose(read(), [7, 8, 9])
    np.testing.assert_allclose(flow.get_all_variables()["layer-weight"].numpy(), [7, 8, 9])
    with pytest.raises(RuntimeError, match="unknown"):
        flow.load_variables({"unknown": np.zeros(1, np.float32)}, ignore_mismatch=False)
    np.testing.assert_allclose(read(), [7, 8, 9])  # nothing was assigned
    # A value of the wrong shape is the same error as from a checkpoint object's load.
    with pytest.raises(ValueError, match=r"'layer-weight' is f32\(3\), the value given is f32\(4\)"):
        flow.load_variables({"layer-weight": np.zeros(4, np.float32)})
    flow.checkpoint.save(str(tmp_path / "wrong"), {"layer-weight": np.zeros(4, np.float32)})
    with pytest.raises(ValueError, match=r"'layer-weight' is f32\(3\), the value given is f32\(4\)"):
        flow.train.CheckPoint().load(str(tmp_path / "wrong"))
    np.testing.assert_allclose(read(), [7, 8, 9])


def test_checkpoint_object_round_trip_into_a_new_session(tmp_path):
    train, read = _define_jobs()
    ckpt = flow.train.CheckPoint()
    ckpt.init()
    train(np.ones(3, np.float32))
    ckpt.save(str(tmp_path / "m"))
    with pytest.raises(FileExistsError, match=r"'.*m' is a non-empty folder; remove it or save to another path"):
        ckpt.save(str(tmp_path / "m"))  # OneFlow refuses a non-empty target too
    flow.clear_default_session()
    train, read = _define_jobs()
    np.testing.assert_allclose(read(), 1.0)
    flow.train.CheckPoint().load(str(tmp_path / "m"))
    np.testing.assert_allclose(read(), 0.0)
    flow.load_variables(flow.checkpoint.get(str(tmp_path / "m")))
    np.testing.assert_allclose(read(), 0.0)
