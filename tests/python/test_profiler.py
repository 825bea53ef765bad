"""weir.profiler: per-actor busy time and per-call latency of job functions, sync and async."""

import json
import os
import re
import subprocess
import sys

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


def test_trace_writes_a_timeline_of_every_firing_and_call_by_device(tmp_path):
    import json

    flow.config.cpu_device_num(2)

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((8, 6)), labels: tp.Numpy.Placeholder((8,), dtype=flow.int32)) -> tp.Numpy:
        hidden = flow.layers.dense(x, 5, activation=flow.nn.relu, name="hidden")
        logits = flow.layers.dense(hidden, 3, name="out")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    x = np.random.default_rng(0).standard_normal((8, 6)).astype(np.float32)
    labels = np.arange(8, dtype=np.int32) % 3
    train(x, labels)  # before the trace: not in it
    path = tmp_path / "run.json"
    with flow.profiler.trace(path):
        for _ in range(2):
            train(x, labels)
    train(x, labels)  # after it: not in it either

    events = json.loads(path.read_text())["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    # The devices, and "cpu:0-1" for collective actors on the collective stream (here a scatter).
    assert {"calls", "cpu:0", "cpu:1"} <= set(processes.values()) <= {"calls", "cpu:0", "cpu:1", "cpu:0-1"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    device_of = {name: pid for pid, name in processes.items()}
    assert "train cpu:0/compute0" in threads.values() and "train cpu:1/compute0" in threads.values()
    spans = [e for e in events if e["ph"] in "be"]
    call_ids = sorted({e["id"] for e in spans})
    assert len(call_ids) == 2 and [e["ph"] for e in spans].count("b") == 2  # the two calls of the block
    slices = [e for e in events if e["ph"] == "X"]
    assert {e["args"]["call"] for e in slices} == set(call_ids)
    by_name = {}
    for e in slices:
        assert e["ts"] >= 0 and e["dur"] >= 0 and (e["pid"], e["tid"]) in threads
        by_name.setdefault(e["name"], []).append(e)
    # Each device runs its replica of the layers, twice; each device reduces its rows of each
    # weight gradient, and those slices are marked as collectives.
    for device in (0, 1):
        replica = by_name[f"hidden-matmul:{device}"]
        assert len(replica) == 2 and all(e["pid"] == device_of[f"cpu:{device}"] for e in replica)
        assert replica[0]["cat"] == "matmul_bias_act" and replica[0]["args"]["bytes"] == 4 * 5 * 4
    collectives = [e for e in slices if e["cat"] == "collective"]
    assert collectives and "reduce_scatter" in {e["args"]["op_type"] for e in collectives}
    # A call's span covers its firings.
    for call in call_ids:
        begin = next(e["ts"] for e in spans if e["id"] == call and e["ph"] == "b")
        end = next(e["ts"] for e in spans if e["id"] == call and e["ph"] == "e")
        inside = [e for e in slices if e["args"]["call"] == call and e["args"]["kind"] == "kernel"]
        assert inside and all(begin <= e["ts"] and e["ts"] + e["dur"] <= end + 1e-3 for e in inside)


def test_trace_errors_name_what_is_wrong(tmp_path):
    @flow.global_function()
    def double(x: tp.Numpy.Placeholder((4,))) -> tp.Numpy:
        return x * 2

    double(np.ones(4, np.float32))
    ran = []
    # Refused when the block starts, not after the whole run it would record.
    with pytest.raises(FileNotFoundError, match=r"trace: path '.*no_such_dir/run.json': folder '.*no_such_dir' does not"):
        with flow.profiler.trace(tmp_path / "no_such_dir" / "run.json"):
            ran.append(double(np.ones(4, np.float32)))
    assert ran == []
    (tmp_path / "later_gone").mkdir()
    with pytest.raises(RuntimeError, match=r"StopTrace: cannot write '.*later_gone/run.json'"):
        with flow.profiler.trace(tmp_path / "later_gone" / "run.json"):
            double(np.ones(4, np.float32))
            (tmp_path / "later_gone").rmdir()
    session = flow._session.default_session().c_session()
    with pytest.raises(RuntimeError, match="no trace is being recorded"):
        session.stop_trace(str(tmp_path / "x.json"))
    with flow.profiler.trace(tmp_path / "ok.json"):  # the failed write left no trace running
        with pytest.raises(RuntimeError, match="a trace is already being recorded"):
            session.start_trace()
    assert (tmp_path / "ok.json").exists()


def test_describe_state_says_what_calls_wait_for_and_the_watchdog_can_be_set():
    assert flow.describe_state() == "no calls in flight\n"  # before the session starts
    flow.config.watchdog_timeout(0.5)
    with pytest.raises(ValueError, match=r"watchdog_timeout: expected a number of seconds >= 0, got -1"):
        flow.config.watchdog_timeout(-1)

    @flow.global_function()
    def double(x: tp.Numpy.Placeholder((4,))) -> tp.Numpy:
        return x * 2

    np.testing.assert_array_equal(double(np.ones(4, np.float32)), np.full(4, 2.0))
    assert flow.describe_state() == "no calls in flight\n"  # the call completed


def test_trace_ops_sums_device_time_by_op_type(tmp_path):
    """bench/trace_ops.py (device time by op type, from a trace with an actor per kernel) over the C++
    train-step benchmark on CPU device streams, which record device slices as a GPU's do."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    binary = os.path.join(os.environ.get("WEIR_BUILD", os.path.join(root, "build")), "bench", "train_step")
    trace = tmp_path / "mlp.json"
    subprocess.run([binary, "--model", "mlp", "--cpu-device-streams", "--no-stream-graphs", "--trace", str(trace),
                    "--steps", "2", "--repeats", "1", "--warmup", "1", "--no-async", "--no-infer"], check=True,
                   capture_output=True, timeout=120)
    out = subprocess.run([sys.executable, os.path.join(root, "bench", "trace_ops.py"), str(trace), "--top", "3"],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    assert re.match(r"train_job: 20 calls, median \S+ ms a call; device slices \S+ ms a call", out), out
    shares = {m.group(1): float(m.group(2)) for m in re.finditer(r"^  (\w+) +\d+ +\S+ +(\S+)% +\S+$", out, re.MULTILINE)}
    assert "matmul_bias_act" in shares and "sparse_softmax_cross_entropy" in shares, out
    assert abs(sum(shares.values()) - 100.0) < 1.0, out
    assert len(re.findall(r"^    \S+ +\S+ ms$", out, re.MULTILINE)) == 3, out


def test_a_sync_caller_waiting_for_the_device_itself_trains_as_when_the_poller_wakes_it():
    """WEIR_CALLER_COMPLETION_US (off by default): a sync caller of a job on one device stream waits for
    the device's event and handles the completion on its own thread. On CPU device streams (the GPU's
    path, without a GPU) the C++ train-step benchmark ends with the same loss either way."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    binary = os.path.join(os.environ.get("WEIR_BUILD", os.path.join(root, "build")), "bench", "train_step")
    losses = []
    for completion_us in ("0", "2000"):
        out = subprocess.run([binary, "--model", "mlp", "--cpu-device-streams", "--steps", "120", "--repeats", "1",
                              "--warmup", "2", "--no-async", "--no-infer"], check=True, capture_output=True, text=True,
                             timeout=120, env=dict(os.environ, WEIR_CALLER_COMPLETION_US=completion_us)).stdout
        losses.append(json.loads(out.strip().splitlines()[-1])["final_loss"])
    assert losses[0] == losses[1], losses
