"""Sessions across processes (docs/distributed.md): real processes on 127.0.0.1 with free ports, started
by weir-launch or directly with its environment. Mirrored training on 2 and 3 processes (and 2 processes
x 2 devices; gradients in fusion buckets and one by one) ends with the variables of one process on the whole
batch, and a checkpoint saved once (by
rank 0) loads on every rank; consistent training split over 2 and 3 processes ends the same way; a
pipeline with a stage in each process trains as one process; a killed rank, jobs that differ, a rank that never comes and a port in use are clear
errors within a bound. Every process run has a hard time limit."""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import weir as flow
import weir.typing as tp

TIMEOUT_S = 120  # hard bound on every multi-process run

# One program for every scenario, run the same on every rank (SPMD): argv = out_prefix view devices mode.
PROGRAM = r'''
import os, signal, sys, time
import numpy as np
import weir as flow
import weir.typing as tp

out, view, devices, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
world = int(os.environ.get("WORLD_SIZE", "1"))
rank = int(os.environ.get("RANK", "0"))
GLOBAL = 12
if os.environ.get("TEST_GPU") == "1":  # one GPU per process, NCCL between them
    flow.config.gpu_device_num(1)
else:
    flow.config.cpu_device_num(devices)
flow.config.collective_timeout(20)
flow.config.collective_boxing.enable_fusion(os.environ.get("TEST_FUSION", "1") == "1")
config = flow.FunctionConfig()
hidden = 16 + (rank if mode == "differ" else 0)

if view == "mirrored":
    config.default_logical_view(flow.scope.mirrored_view())
    per = GLOBAL // (world * devices)
    Images, Labels, Out = tp.ListNumpy.Placeholder((per, 8)), tp.ListNumpy.Placeholder((per,), dtype=flow.int32), tp.ListNumpy
else:
    Images, Labels, Out = tp.Numpy.Placeholder((GLOBAL, 8)), tp.Numpy.Placeholder((GLOBAL,), dtype=flow.int32), tp.Numpy

@flow.global_function(type="train", function_config=config)
def train(images: Images, labels: Labels) -> Out:
    h = flow.layers.dense(images, hidden, activation=flow.nn.relu, name="hidden")
    logits = flow.layers.dense(h, 4, name="output")
    if mode == "badtail":  # the loss's labels stay in range; a gather no collective waits for reads them raw
        flow.watch(flow.gather(flow.constant(0.0, dtype=flow.float, shape=(4,)), labels), lambda value: None)
        labels = flow.clip_by_value(labels, 0, 3)
    loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
    flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
    return loss

rng = np.random.default_rng(0)
for step in range(6):
    x = rng.standard_normal((GLOBAL, 8)).astype(np.float32)
    y = rng.integers(0, 4, GLOBAL).astype(np.int32)
    if mode == "skip2" and step == 2:
        continue
    if mode in ("badlabel", "badtail") and step == 2:
        y[GLOBAL - 1] = 99  # out of range, in the last process's rows
    try:
        if view == "mirrored":
            first = rank * devices * per
            loss = train([x[first + d * per: first + (d + 1) * per] for d in range(devices)],
                         [y[first + d * per: first + (d + 1) * per] for d in range(devices)])
        else:
            loss = train(x, y)
    except Exception as error:
        if mode not in ("badlabel", "badtail"):
            raise
        print(f"step {step} failed: {error}", flush=True)
        continue
    if mode == "die" and rank == int(os.environ.get("DIE_RANK", "1")) and step == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    print(f"step {step} done", flush=True)
resource = flow.current_resource()
assert resource["process_num"] == world and resource["rank"] == rank, resource
print("collectives", resource["collectives"], flush=True)
mine = flow.checkpoint.get_all_variables()
np.savez(f"{out}_{rank}.npz", **{k: v.numpy() for k, v in mine.items()})
if mode == "train":  # rank 0 writes the checkpoint once; every rank returns after it is written
    if rank > 0 and os.environ.get("TEST_LATE_SAVE") == "1":  # rank 0 has written it by now
        time.sleep(1.0)
    flow.checkpoint.save(out + "_checkpoint")
    loaded = flow.checkpoint.get(out + "_checkpoint")
    assert sorted(loaded) == sorted(mine)
    assert all(np.array_equal(loaded[k].numpy(), mine[k].numpy()) for k in mine)
    print("checkpoint ok", flush=True)
'''


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "program.py"
    path.write_text(PROGRAM)
    return str(path)


def _env(**extra):
    env = dict(os.environ)
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                 "WEIR_COLLECTIVES", "WEIR_NODE_RANK"):
        env.pop(name, None)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _launch(program, nproc, *args, collectives="auto", master_addr="127.0.0.1", timeout=TIMEOUT_S, **env):
    command = [sys.executable, "-m", "weir.distributed.launch", "--nproc_per_node", str(nproc),
               "--master_addr", master_addr, "--master_port", str(_free_port()), program, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                          env=_env(WEIR_COLLECTIVES=collectives, **env))


def _single(program, *args, **env):
    return subprocess.run([sys.executable, program, *args], capture_output=True, text=True, timeout=TIMEOUT_S,
                          env=_env(**env))


def _variables(path):
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


def _assert_same(expected, got):
    assert sorted(expected) == sorted(got)
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    """The variables one process with one device ends with, mirrored, on the whole batch."""
    tmp = tmp_path_factory.mktemp("one")
    path = tmp / "program.py"
    path.write_text(PROGRAM)
    done = _single(str(path), str(tmp / "one"), "mirrored", "1", "train")
    assert done.returncode == 0, done.stderr
    return _variables(tmp / "one_0.npz")


@pytest.mark.parametrize("view", ["mirrored", "consistent"])
def test_one_gpu_per_process_over_nccl_trains_as_one_process(program, tmp_path, one_process, view):
    import weir
    if weir.visible_gpus() < 2:
        pytest.skip(f"needs 2 GPUs (one per process), {weir.visible_gpus()} visible")
    done = _launch(program, 2, str(tmp_path / "run"), view, "1", "train", TEST_GPU=1)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("collectives nccl") == 2, done.stdout
    assert done.stdout.count("checkpoint ok") == 2
    for rank in range(2):
        got = _variables(tmp_path / f"run_{rank}.npz")
        for name in one_process:  # the GPU's float sums differ from the CPU's in the last bits
            np.testing.assert_allclose(got[name], one_process[name], rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("processes,devices,collectives,fusion",
                         [(2, 1, "shm", 1), (2, 1, "gloo", 1), (2, 1, "gloo", 0), (3, 1, "shm", 1), (3, 1, "gloo", 1),
                          (2, 2, "auto", 1)])
def test_mirrored_training_across_processes_matches_one_process(program, tmp_path, one_process, processes, devices,
                                                                collectives, fusion):
    done = _launch(program, processes, str(tmp_path / "run"), "mirrored", str(devices), "train",
                   collectives=collectives, TEST_FUSION=fusion)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("step 5 done") == processes
    expected = "shm" if collectives == "auto" else collectives  # auto: one machine, shared memory
    assert done.stdout.count(f"collectives {expected}") == processes
    assert done.stdout.count("checkpoint ok") == processes
    for rank in range(processes):
        _assert_same(one_process, _variables(tmp_path / f"run_{rank}.npz"))


@pytest.mark.parametrize("view,collectives,mode,error", [
    ("mirrored", "shm", "badlabel", "[sparse_softmax_cross_entropy] label 99 at row 5 is outside [0, 4)"),
    ("mirrored", "gloo", "badlabel", "[sparse_softmax_cross_entropy] label 99 at row 5 is outside [0, 4)"),
    ("consistent", "shm", "badlabel", "[sparse_softmax_cross_entropy] label 99 at row 5 is outside [0, 4)"),
    ("mirrored", "shm", "badtail", "[gather] index 99 at position 5 is outside [0, 4)"),
    ("consistent", "gloo", "badtail", "[gather] index 99 at position"),
])
def test_a_call_that_fails_in_one_process_fails_in_every_process_and_trains_nothing(program, tmp_path, view,
                                                                                     collectives, mode, error):
    # Step 2's last label is out of range: only the last process's part of the batch has it. Every
    # process's call fails (the others' naming it), their collectives stay paired, and the processes
    # end as one process that skipped step 2, the train step counter included. badlabel: the loss
    # fails (before, the others went on, paired with the next call's collectives, and trained on
    # garbage); badtail: an op no collective waits for fails (before, the others applied the step's
    # updates; a consistent job split over processes also moved its step counter).
    done = _launch(program, 2, str(tmp_path / "run"), view, "1", mode, collectives=collectives)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("step 2 failed") == 2, done.stdout
    assert error in done.stdout, done.stdout
    assert "the call failed in process rank 1 (its error is there)" in done.stdout, done.stdout
    assert done.stdout.count("step 5 done") == 2
    skipped = _single(program, str(tmp_path / "skipped"), view, "1", "skip2")
    assert skipped.returncode == 0, skipped.stdout + skipped.stderr
    expected = _variables(tmp_path / "skipped_0.npz")
    for rank in range(2):
        _assert_same(expected, _variables(tmp_path / f"run_{rank}.npz"))


def test_a_rank_that_saves_after_rank_0_has_written_the_checkpoint_is_not_refused(program, tmp_path):
    # Rank 0 alone writes; a rank reaching save() later finds the folder written, which is no error.
    done = _launch(program, 2, str(tmp_path / "run"), "mirrored", "1", "train", collectives="shm", TEST_LATE_SAVE=1)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("checkpoint ok") == 2


def test_collective_boxing_knobs_are_checked_and_oneflows_others_recorded():
    flow.config.collective_boxing.enable_fusion(False)
    flow.config.collective_boxing.nccl_fusion_threshold_mb(4)
    flow.config.collective_boxing.nccl_num_streams(2)  # OneFlow's, nothing to do in Weir: recorded
    config = flow._session.default_session().config
    assert (config.enable_fusion, config.fusion_threshold_mb) == (False, 4.0)
    assert config.options["collective_boxing.nccl_num_streams"] == 2
    with pytest.raises(ValueError, match=r"enable_fusion: expected True or False, got 'yes'"):
        flow.config.collective_boxing.enable_fusion("yes")
    with pytest.raises(ValueError, match=r"nccl_fusion_threshold_mb: expected a number of MiB in \[0, 1048576\], got -1"):
        flow.config.collective_boxing.nccl_fusion_threshold_mb(-1)


def test_machine_num_is_checked_against_the_machines_the_session_spans():
    with pytest.raises(ValueError, match=r"machine_num: expected an int >= 1, got 0"):
        flow.config.machine_num(0)
    flow.config.machine_num(2)

    @flow.global_function()
    def double(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
        return x * 2

    with pytest.raises(ValueError, match=r"machine_num\(2\): the session runs on 1 machine\(s\)"):
        double(np.ones(2, np.float32))
    flow.clear_default_session()
    flow.config.machine_num(1)
    np.testing.assert_array_equal(double(np.ones(2, np.float32)), np.full(2, 2.0))


def test_a_master_given_by_host_name(program, tmp_path, one_process):
    """Regression: MASTER_ADDR=localhost (torchrun's users often name the master) was refused."""
    done = _launch(program, 2, str(tmp_path / "run"), "mirrored", "1", "train", collectives="gloo",
                   master_addr="localhost")
    assert done.returncode == 0, done.stdout + done.stderr
    _assert_same(one_process, _variables(tmp_path / "run_1.npz"))


@pytest.mark.parametrize("processes,devices,collectives", [(2, 1, "shm"), (2, 1, "gloo"), (3, 1, "auto"), (2, 2, "auto")])
def test_consistent_training_split_over_processes_matches_one_process(program, tmp_path, processes, devices,
                                                                      collectives):
    """Every process passes the whole batch and computes on its rows; the variables end as one process's."""
    alone = _single(program, str(tmp_path / "alone"), "consistent", "1", "train")
    assert alone.returncode == 0, alone.stderr
    done = _launch(program, processes, str(tmp_path / "run"), "consistent", str(devices), "train",
                   collectives=collectives)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("checkpoint ok") == processes
    expected = _variables(tmp_path / "alone_0.npz")
    for rank in range(processes):
        _assert_same(expected, _variables(tmp_path / f"run_{rank}.npz"))


# A pipeline: the hidden layer on machine 0, the output layer and the loss on machine `second` (argv[2]);
# each rank prints its losses and saves its variables (every rank makes every update).
PIPELINE = r'''
import os, sys
import numpy as np
import weir as flow
import weir.typing as tp

out, second = sys.argv[1], sys.argv[2]
rank = int(os.environ.get("RANK", "0"))

@flow.global_function(type="train")
def train(images: tp.Numpy.Placeholder((12, 8)), labels: tp.Numpy.Placeholder((12,), dtype=flow.int32)) -> tp.Numpy:
    with flow.scope.placement("cpu", "0:0"):
        h = flow.layers.dense(images, 16, activation=flow.nn.relu, name="hidden")
    with flow.scope.placement("cpu", second):
        logits = flow.layers.dense(h, 4, name="output")
        loss = flow.math.reduce_mean(flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
    return loss

rng = np.random.default_rng(0)
for step in range(6):
    x = rng.standard_normal((12, 8)).astype(np.float32)
    y = rng.integers(0, 4, 12).astype(np.int32)
    print("loss", repr(float(train(x, y))), flush=True)
np.savez(f"{out}_{rank}.npz", **{k: v.numpy() for k, v in flow.checkpoint.get_all_variables().items()})
'''


def test_a_pipeline_with_a_stage_in_each_process_trains_as_one_process(tmp_path):
    path = tmp_path / "pipeline.py"
    path.write_text(PIPELINE)
    alone = _single(str(path), str(tmp_path / "alone"), "0:0")
    assert alone.returncode == 0, alone.stderr
    done = _launch(str(path), 2, str(tmp_path / "run"), "1:0")
    assert done.returncode == 0, done.stdout + done.stderr
    expected = [line for line in alone.stdout.splitlines() if line.startswith("loss")]
    assert len(expected) == 6
    for rank in range(2):  # both ranks get every step's loss
        mine = [line.split(":", 1)[1] for line in done.stdout.splitlines() if line.startswith(f"[rank{rank}]:")]
        got = [float(line.split()[1]) for line in mine if line.startswith("loss")]
        np.testing.assert_allclose(got, [float(line.split()[1]) for line in expected], rtol=1e-5)
    for rank in range(2):
        _assert_same(_variables(tmp_path / "alone_0.npz"), _variables(tmp_path / f"run_{rank}.npz"))


def test_killed_rank_fails_the_launcher_naming_it(program, tmp_path):
    start = time.monotonic()
    done = _launch(program, 2, str(tmp_path / "run"), "mirrored", "1", "die")
    assert done.returncode == 128 + signal.SIGKILL, done.stdout + done.stderr
    assert "weir-launch: rank 1" in done.stderr and "killed by SIGKILL" in done.stderr, done.stderr
    assert time.monotonic() - start < 60


@pytest.mark.parametrize("collectives,dies", [("shm", 1), ("gloo", 1), ("shm", 0), ("gloo", 0)])
def test_killed_rank_fails_the_survivors_call_naming_the_lost_rank(program, tmp_path, collectives, dies):
    """Without the launcher (which would stop the survivor at once): the survivor's next collective fails,
    naming the lost rank, or the master's connection when rank 0 (the master) is the one lost."""
    port = _free_port()
    start = time.monotonic()
    ranks = [subprocess.Popen([sys.executable, program, str(tmp_path / "run"), "mirrored", "1", "die"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=_env(RANK=r, WORLD_SIZE=2, MASTER_PORT=port, WEIR_RDZV_TIMEOUT=30,
                                       WEIR_COLLECTIVES=collectives, DIE_RANK=dies))
             for r in range(2)]
    try:
        outputs = [rank.communicate(timeout=TIMEOUT_S) for rank in ranks]
    finally:
        for rank in ranks:
            rank.kill()
    survivor = 1 - dies
    assert ranks[dies].returncode == -signal.SIGKILL
    assert ranks[survivor].returncode != 0
    error = outputs[survivor][1]
    assert f"[{collectives}] rank {survivor}: all-reduce all_reduce(" in error, error  # names the collective
    if dies == 1:
        assert "rank 1 lost" in error, error
    else:
        assert "the connection to the master" in error, error
    assert time.monotonic() - start < 60


def test_jobs_that_differ_between_ranks_fail_naming_the_job(program, tmp_path):
    done = _launch(program, 2, str(tmp_path / "run"), "mirrored", "1", "differ")
    assert done.returncode != 0
    assert "job 'train' differs between processes" in done.stderr, done.stderr


def test_a_rank_that_never_comes_is_an_error_naming_it(program, tmp_path):
    start = time.monotonic()
    done = _single(program, str(tmp_path / "run"), "mirrored", "1", "train", RANK=0, WORLD_SIZE=2,
                   MASTER_PORT=_free_port(), WEIR_RDZV_TIMEOUT=2)
    assert done.returncode != 0
    assert "waiting for 1 of 2 ranks" in done.stderr and "rank 1 never connected" in done.stderr, done.stderr
    assert time.monotonic() - start < 30


def test_a_port_in_use_is_an_error_at_once(program, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        start = time.monotonic()
        done = _single(program, str(tmp_path / "run"), "mirrored", "1", "train", RANK=0, WORLD_SIZE=2,
                       MASTER_PORT=taken.getsockname()[1], WEIR_RDZV_TIMEOUT=60)
    assert done.returncode != 0
    assert "address already in use" in done.stderr, done.stderr
    assert time.monotonic() - start < 20


def test_bad_environment_names_the_variable(program, tmp_path):
    done = _single(program, str(tmp_path / "run"), "mirrored", "1", "train", RANK=2, WORLD_SIZE=2)
    assert done.returncode != 0
    assert "environment variable RANK: expected an integer in [0, 1], got '2'" in done.stderr, done.stderr


EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples",
                       "python", "distributed_train.py")


def _ip(*args):
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


@pytest.fixture(scope="module")
def two_machines():
    """Two "machines": network namespaces joined by a veth pair, as (namespaces, addresses). Traffic goes
    only to those addresses; the namespaces (and with them the veth pair) are removed afterwards."""
    if os.geteuid() != 0:
        pytest.skip("making network namespaces needs root")
    if shutil.which("ip") is None:
        pytest.skip("the ip command (iproute2) is missing")
    tag = os.getpid() % 100000
    namespaces = [f"weir{tag}a", f"weir{tag}b"]
    links = [f"wv{tag}a", f"wv{tag}b"]
    addresses = [f"10.{200 + tag % 50}.{tag // 50 % 250}.1", f"10.{200 + tag % 50}.{tag // 50 % 250}.2"]
    try:
        steps = [("netns", "add", namespaces[0]), ("netns", "add", namespaces[1]),
                 ("link", "add", links[0], "type", "veth", "peer", "name", links[1])]
        for i in range(2):
            steps += [("link", "set", links[i], "netns", namespaces[i]),
                      ("-n", namespaces[i], "addr", "add", f"{addresses[i]}/24", "dev", links[i]),
                      ("-n", namespaces[i], "link", "set", links[i], "up"),
                      ("-n", namespaces[i], "link", "set", "lo", "up")]
        for step in steps:
            made = _ip(*step)
            if made.returncode != 0:
                pytest.skip(f"cannot make the network namespaces here: ip {' '.join(step)}: {made.stderr.strip()}")
        yield namespaces, addresses
    finally:
        for ns in namespaces:
            _ip("netns", "del", ns)


def _run_in(namespaces, argv, envs):
    ranks = [subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, *argv], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env)
             for ns, env in zip(namespaces, envs)]
    try:
        outputs = [rank.communicate(timeout=TIMEOUT_S) for rank in ranks]
    finally:
        for rank in ranks:
            rank.kill()
    for rank, (out, err) in zip(ranks, outputs):
        assert rank.returncode == 0, out + err
    return [out for out, _ in outputs]


def test_two_machines_run_the_docs_distributed_train(two_machines):
    """The docs' program on each "machine", flow.env.machine set to both addresses: each finds its rank
    from its own address."""
    namespaces, addresses = two_machines
    token = dict(WEIR_JOB_TOKEN="the-same-secret-on-both")  # the master is not on a loopback address
    outputs = _run_in(namespaces, [EXAMPLE, "--machines", ",".join(addresses), "--ctrl-port", "29500",
                                   "--max-steps", "41"], [_env(**token), _env(**token)])
    losses = []
    for out in outputs:
        assert out.startswith("distributed config\n"), out
        losses.append([float(line) for line in out.splitlines() if re.fullmatch(r"-?\d+\.\d+(e-?\d+)?", line)])
    assert len(losses[0]) == 3  # steps 0, 20 and 40
    assert losses[0] == losses[1]  # the consistent job's loss is returned on both machines
    assert losses[0][-1] < losses[0][0]


def test_two_machines_train_mirrored_over_gloo(two_machines, program, tmp_path, one_process):
    """Data parallel across the two "machines": Gloo over the veth pair (their machine identities
    differ, so no shared memory), ending with one process's variables."""
    namespaces, addresses = two_machines
    envs = [_env(RANK=r, WORLD_SIZE=2, MASTER_ADDR=addresses[0], MASTER_PORT=29501, WEIR_JOB_TOKEN="secret")
            for r in range(2)]
    outputs = _run_in(namespaces, [program, str(tmp_path / "run"), "mirrored", "1", "train"], envs)
    for out in outputs:
        assert "collectives gloo" in out and "checkpoint ok" in out, out
    for rank in range(2):
        _assert_same(one_process, _variables(tmp_path / f"run_{rank}.npz"))


# A small mirrored train job on every rank; argv: folder, mode, collective timeout (s). "stall": every
# rank compiles it, then rank 1 is stuck in its own code while rank 0's call waits in its collective for
# it. "loop": the ranks train on until something stops them. Each rank marks the folder when ready.
TRAIN_PROGRAM = r'''
import os, sys, time
import numpy as np
import weir as flow
import weir.typing as tp

folder, mode, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
rank = int(os.environ["RANK"])
flow.config.collective_timeout(timeout)
config = flow.FunctionConfig()
config.default_logical_view(flow.scope.mirrored_view())

@flow.global_function(type="train", function_config=config)
def train(x: tp.ListNumpy.Placeholder((4, 3))) -> tp.ListNumpy:
    w = flow.get_variable("w", shape=(3,), dtype=flow.float, initializer=flow.zeros_initializer())
    loss = x * w
    flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
    return loss

flow._session.default_session().start()  # every rank compiles the job
if mode == "stall":
    open(os.path.join(folder, f"rank{rank}_ready"), "w").close()
    if rank == 1:
        time.sleep(120)
    else:
        train([np.ones((4, 3), np.float32)])
else:
    for step in range(100000):
        train([np.ones((4, 3), np.float32)])
        if step == 0:
            open(os.path.join(folder, f"rank{rank}_ready"), "w").close()
        time.sleep(0.02)
'''


def _interrupt(process):
    """Sends SIGINT to `process`; its stderr, and the seconds it took to end."""
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=TIMEOUT_S)
    return err, time.monotonic() - sent


def _wait_for_files(*paths, limit=60):
    end = time.monotonic() + limit
    while not all(os.path.exists(p) for p in paths):
        assert time.monotonic() < end, f"never appeared: {paths}"
        time.sleep(0.05)


def test_ctrl_c_ends_a_call_waiting_in_a_collective_within_two_seconds(tmp_path):
    program = tmp_path / "train.py"
    program.write_text(TRAIN_PROGRAM)
    port = _free_port()
    ranks = [subprocess.Popen([sys.executable, str(program), str(tmp_path), "stall", "120"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              env=_env(RANK=r, WORLD_SIZE=2, MASTER_PORT=port, WEIR_RDZV_TIMEOUT=60))
             for r in range(2)]
    try:
        _wait_for_files(tmp_path / "rank0_ready", tmp_path / "rank1_ready")
        time.sleep(0.5)  # rank 0 is inside its call, waiting for rank 1
        err, took = _interrupt(ranks[0])
    finally:
        for rank in ranks:
            rank.kill()
            rank.communicate()
    assert took < 2, err
    assert "KeyboardInterrupt" in err, err
    assert "[weir] interrupted while waiting: exiting without waiting for the calls in flight" in err, err
    assert ranks[0].returncode == 130


def test_ctrl_c_ends_the_rendezvous_within_two_seconds(tmp_path):
    program = tmp_path / "train.py"
    program.write_text(TRAIN_PROGRAM)
    rank = subprocess.Popen([sys.executable, str(program), str(tmp_path), "stall", "120"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env=_env(RANK=0, WORLD_SIZE=2, MASTER_PORT=_free_port(), WEIR_RDZV_TIMEOUT=60))
    try:
        time.sleep(3)  # the interpreter has started and waits for a rank 1 that never comes
        assert rank.poll() is None
        err, took = _interrupt(rank)
    finally:
        rank.kill()
    assert took < 2, err
    assert "KeyboardInterrupt" in err, err


def test_ctrl_c_to_the_launcher_stops_every_rank_within_two_seconds(tmp_path):
    program = tmp_path / "train.py"
    program.write_text(TRAIN_PROGRAM)
    command = [sys.executable, "-m", "weir.distributed.launch", "--nproc_per_node", "2", "--master_port",
               str(_free_port()), str(program), str(tmp_path), "stall", "120"]
    launcher = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    try:
        _wait_for_files(tmp_path / "rank0_ready", tmp_path / "rank1_ready")
        time.sleep(0.5)
        err, took = _interrupt(launcher)
    finally:
        launcher.kill()
    assert took < 2.5, err
    assert "weir-launch: received SIGINT; stopped ranks 0, 1" in err, err
    assert "SIGKILL" not in err, err  # every rank ended on its own, before the grace period




def test_a_partition_between_machines_fails_both_sides_naming_the_other_and_they_exit(two_machines, tmp_path):
    namespaces, addresses = two_machines
    program = tmp_path / "train.py"
    program.write_text(TRAIN_PROGRAM)
    envs = [_env(RANK=r, WORLD_SIZE=2, MASTER_ADDR=addresses[0], MASTER_PORT=29502, WEIR_JOB_TOKEN="secret")
            for r in range(2)]
    ranks = [subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, str(program), str(tmp_path), "loop", "3"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for ns, env in zip(namespaces, envs)]
    link = _ip("-n", namespaces[0], "-o", "link", "show", "type", "veth").stdout.split(":")[1].strip().split("@")[0]
    try:
        _wait_for_files(tmp_path / "rank0_ready", tmp_path / "rank1_ready")
        cut = time.monotonic()
        assert _ip("-n", namespaces[0], "link", "set", link, "down").returncode == 0
        outputs = [rank.communicate(timeout=TIMEOUT_S) for rank in ranks]
        took = time.monotonic() - cut
    finally:
        _ip("-n", namespaces[0], "link", "set", link, "up")
        for rank in ranks:
            rank.kill()
    errors = [err for _, err in outputs]
    assert all(rank.returncode != 0 for rank in ranks), errors
    # The collective timeout (3 s), a second for the other's word, closing (3 s; the cut-off rank's
    # goodbye to the master: 2 s more), and slack: not the rendezvous timeout's 300 s.
    assert took < 20, errors
    assert "timed out after 3000 ms" in errors[0] and "rank 1 did not reach it" in errors[0], errors[0]
    assert "timed out after 3000 ms" in errors[1] and "(rank 0)" in errors[1], errors[1]
