"""weir.profiler: per-actor busy time and per-call latency of job functions, sync and async."""

import numpy as np
import pytest

import weir as flow
import weir.typing as tp


def _dense_job():
    @flow.global_function()
    def dense_job(x: tp.Numpy.Placeholder((64, 256))) -> tp.Numpy:
        return flow.layers.dense(x, 128, activation=flow.math.relu, name="hidden")

    return dense_job


def test_profile_counts_sync_and_async_calls_and_names_the_ops():
    job = _dense_job()
    x = np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32)
    job(x)  # before the block: not counted
    with flow.profiler.profile() as prof:
        for _ in range(3):
            job(x)
    jobs = {j.job: j for j in prof.jobs}
    assert list(jobs) == ["dense_job"]
    profile = jobs["dense_job"]
    assert profile.calls >= 3
    kernels = [a for a in profile.actors if a.kind == "kernel"]
    # The dense layer's matmul, bias_add and relu run as one fused kernel.
    assert [a.op_type for a in kernels] == ["matmul_bias_act"]
    assert kernels[0].name.startswith("hidden")
    assert all(a.firings == profile.calls for a in kernels)
    assert all(a.busy_seconds >= 0 for a in profile.actors)
    assert 0 < profile.busy_seconds() <= profile.call_seconds + 1e-3
    assert prof.wall_seconds >= profile.call_seconds * 0.5
    table = prof.table()
    assert "job 'dense_job'" in table and "matmul_bias_act" in table
    assert "more actors" in prof.table(max_actors=1)
    assert str(prof) == table


def test_async_calls_inside_the_block_count_in_full():
    config = flow.FunctionConfig()

    @flow.global_function(function_config=config)
    def job(x: tp.Numpy.Placeholder((8,))) -> tp.Callback[tp.Numpy]:
        return x * 2

    seen = []
    x = np.ones(8, dtype=np.float32)
    with flow.profiler.profile() as prof:
        for _ in range(5):
            job(x)(seen.append)
    assert len(seen) == 5
    assert prof.jobs[0].calls == 5


def test_profile_is_empty_until_the_block_ends_and_rejects_bad_arguments():
    job = _dense_job()
    with flow.profiler.profile() as prof:
        with pytest.raises(RuntimeError, match="filled in when"):
            prof.table()
        job(np.zeros((64, 256), dtype=np.float32))
    with pytest.raises(ValueError, match="max_actors"):
        prof.table(max_actors=-1)
    with flow.profiler.profile() as empty:
        pass
    assert empty.jobs == []
