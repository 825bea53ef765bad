"""The launcher, `python -m weir.distributed.launch`: environment per rank, rank-prefixed output and
per-rank logs, a failing or killed rank stopping the others, signals, no process left behind, and
bad options. The ranks are small plain-Python scripts, so none of this needs the C++ build: the
launcher runs from the source tree through a stand-in `weir` package (the real weir/__init__.py
loads the compiled runtime) holding only a link to python/weir/distributed. Every wait is bounded."""

import importlib.util
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = os.path.join(ROOT, "python", "weir", "distributed")
TIMEOUT_S = 30  # hard bound on every launcher run

# Put before every rank script: its rank, and files in the script's folder to meet the other ranks.
PRELUDE = """\
import os, signal, subprocess, sys, time
RANK = int(os.environ["RANK"])
DIR = os.path.dirname(os.path.abspath(__file__))

def write(name, text):  # atomically, so a reader never sees half a file
    with open(os.path.join(DIR, name + ".tmp"), "w") as f:
        f.write(str(text))
    os.replace(os.path.join(DIR, name + ".tmp"), os.path.join(DIR, name))

def wait_for(*names):
    end = time.monotonic() + 10
    while not all(os.path.exists(os.path.join(DIR, n)) for n in names):
        if time.monotonic() > end:
            sys.exit(f"rank {RANK}: timed out waiting for {names}")
        time.sleep(0.01)
"""


@pytest.fixture(scope="module")
def package_path(tmp_path_factory):
    """A PYTHONPATH entry where `weir.distributed.launch` is the source tree's launcher."""
    root = tmp_path_factory.mktemp("package")
    (root / "weir").mkdir()
    (root / "weir" / "__init__.py").write_text("")
    os.symlink(SOURCE, root / "weir" / "distributed")
    return str(root)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _script(tmp_path, body, name="rank.py"):
    path = tmp_path / name
    path.write_text(PRELUDE + body)
    return str(path)


def _command(package_path, *args, **popen):
    env = dict(os.environ, PYTHONPATH=package_path)
    return dict(args=[sys.executable, "-m", "weir.distributed.launch", *args], env=env, **popen)


def _launch(package_path, *args, cwd=None):
    return subprocess.run(**_command(package_path, *args, cwd=cwd, capture_output=True, text=True,
                                     timeout=TIMEOUT_S))


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie has exited; only its parent has not collected it yet
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _assert_all_gone(pids):
    end = time.monotonic() + 3  # a SIGKILLed process still needs a moment to die
    while any(_alive(p) for p in pids) and time.monotonic() < end:
        time.sleep(0.02)
    assert [p for p in pids if _alive(p)] == [], "processes left behind"


def _pids(tmp_path, pattern="*.pid"):
    return {p.name: int(p.read_text()) for p in tmp_path.glob(pattern)}


@pytest.fixture
def reaper(tmp_path):
    """Kills whatever the ranks wrote a pid file for, should a test fail halfway."""
    yield
    for pid in _pids(tmp_path).values():
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


ENV_SCRIPT = """
import json
keys = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
        "MASTER_PORT", "WEIR_RDZV_TIMEOUT"]
print("ENV " + json.dumps({k: os.environ[k] for k in keys} | {"argv": sys.argv[1:]}))
"""


@pytest.mark.parametrize("options, ranks, world, node", [
    ([], [0, 1], 2, 0),
    (["--nnodes", "2", "--node_rank", "1", "--master_addr", "10.1.2.3", "--master_port", "1234",
      "--rdzv_timeout", "7"], [2, 3], 4, 1),
])
def test_each_rank_gets_its_environment(package_path, tmp_path, monkeypatch, options, ranks, world, node):
    monkeypatch.setenv("WEIR_JOB_TOKEN", "shared-secret")  # several nodes need one of their own
    script = _script(tmp_path, ENV_SCRIPT)
    result = _launch(package_path, "--nproc_per_node", "2", *options, script, "--nnodes", "5", "x y")
    assert result.returncode == 0, result.stderr
    envs = {}
    for line in result.stdout.splitlines():
        prefix, text = line.split(":", 1)
        assert text.startswith("ENV "), line
        envs[prefix] = json.loads(text[4:])
    assert sorted(envs) == [f"[rank{r}]" for r in ranks]
    for local_rank, rank in enumerate(ranks):
        env = envs[f"[rank{rank}]"]
        assert env == {"RANK": str(rank), "LOCAL_RANK": str(local_rank), "WORLD_SIZE": str(world),
                       "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": str(node),
                       "MASTER_ADDR": "10.1.2.3" if node else "127.0.0.1",
                       "MASTER_PORT": "1234" if node else "29500", "WEIR_RDZV_TIMEOUT": "7" if node else "300",
                       # the script's own arguments pass unchanged, the launcher's option names included
                       "argv": ["--nnodes", "5", "x y"]}


def test_output_is_prefixed_with_the_rank_line_by_line_as_it_comes(package_path, tmp_path):
    script = _script(tmp_path, """
print(f"out of {RANK}")
print(f"err of {RANK}", file=sys.stderr)
if RANK == 0:
    wait_for("go")  # the test sees this rank's lines while the rank still runs
sys.stdout.write("no newline")
""")
    launcher = subprocess.Popen(**_command(package_path, "--nproc_per_node", "2", script,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0))
    try:
        seen = b""
        end = time.monotonic() + TIMEOUT_S
        while b"[rank0]:out of 0\n" not in seen:
            remaining = end - time.monotonic()
            assert remaining > 0, seen
            if select.select([launcher.stdout], [], [], remaining)[0]:
                chunk = launcher.stdout.read(4096)
                assert chunk, f"the launcher ended early: {seen}"
                seen += chunk
        (tmp_path / "go").touch()
        out, err = launcher.communicate(timeout=TIMEOUT_S)
    finally:
        launcher.kill()
    out = (seen + out).decode()
    assert launcher.returncode == 0
    assert sorted(out.splitlines()) == ["[rank0]:no newline", "[rank0]:out of 0",
                                        "[rank1]:no newline", "[rank1]:out of 1"]
    assert sorted(err.decode().splitlines()) == ["[rank0]:err of 0", "[rank1]:err of 1"]


def test_log_dir_holds_each_ranks_output(package_path, tmp_path):
    script = _script(tmp_path, """
print(f"out of {RANK}")
print(f"err of {RANK}", file=sys.stderr)
""")
    logs = tmp_path / "logs"
    result = _launch(package_path, "--nproc_per_node", "2", "--log_dir", str(logs), script)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert f"{logs}/rank_<r>/stdout.log and stderr.log, for r = 0..1" in result.stderr
    for rank in (0, 1):
        assert (logs / f"rank_{rank}" / "stdout.log").read_text() == f"out of {rank}\n"
        assert (logs / f"rank_{rank}" / "stderr.log").read_text() == f"err of {rank}\n"


def test_module_and_no_python_modes(package_path, tmp_path):
    (tmp_path / "hello_module.py").write_text("import os\nprint('module', os.environ['RANK'])\n")
    result = _launch(package_path, "--nproc_per_node", "2", "-m", "hello_module", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == ["[rank0]:module 0", "[rank1]:module 1"]
    program = tmp_path / "hello.sh"
    program.write_text('#!/bin/sh\necho "program $RANK $1"\n')
    program.chmod(0o755)
    result = _launch(package_path, "--no_python", str(program), "arg")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "[rank0]:program 0 arg\n"


def test_a_failing_rank_stops_the_others(package_path, tmp_path, reaper):
    script = _script(tmp_path, """
write(f"rank{RANK}.pid", os.getpid())
if RANK == 1:
    wait_for("rank0.pid", "rank2.pid")
    sys.exit(3)
time.sleep(60)
""")
    start = time.monotonic()
    result = _launch(package_path, "--nproc_per_node", "3", script)
    assert time.monotonic() - start < 10  # not the 60 s the others sleep
    pids = _pids(tmp_path)
    assert result.returncode == 3
    assert f"weir-launch: rank 1 (pid {pids['rank1.pid']}) exited with status 3; stopped ranks 0, 2\n" \
        in result.stderr
    _assert_all_gone(pids.values())


def test_a_rank_killed_by_a_signal_stops_the_others(package_path, tmp_path, reaper):
    script = _script(tmp_path, """
write(f"rank{RANK}.pid", os.getpid())
if RANK == 0:
    wait_for("rank1.pid")
    os.kill(os.getpid(), signal.SIGKILL)
time.sleep(60)
""")
    result = _launch(package_path, "--nproc_per_node", "2", script)
    pids = _pids(tmp_path)
    assert result.returncode == 128 + signal.SIGKILL
    assert f"rank 0 (pid {pids['rank0.pid']}) was killed by SIGKILL; stopped rank 1" in result.stderr
    _assert_all_gone(pids.values())


def test_ranks_that_fail_on_their_own_may_say_why_before_sigterm(package_path, tmp_path, reaper):
    # Rank 0 stands for a survivor whose collective fails a moment after losing rank 1: its own error
    # must come out whole, not be cut short by the launcher's SIGTERM.
    script = _script(tmp_path, """
signal.signal(signal.SIGTERM, lambda *_: sys.exit("rank 0: cut short by SIGTERM"))
write(f"rank{RANK}.pid", os.getpid())
if RANK == 1:
    wait_for("rank0.pid")
    write("rank1.exiting", "")
    sys.exit(3)
wait_for("rank1.exiting")
time.sleep(0.3)
sys.exit("rank 0: lost rank 1 in all-reduce #7")
""")
    result = _launch(package_path, "--nproc_per_node", "2", script)
    assert result.returncode == 3
    assert "[rank0]:rank 0: lost rank 1 in all-reduce #7" in result.stderr
    assert "cut short" not in result.stderr
    assert "; no rank was still running" in result.stderr


def test_a_stopped_rank_is_named_when_another_fails(package_path, tmp_path, reaper):
    script = _script(tmp_path, """
write(f"rank{RANK}.pid", os.getpid())
if RANK == 1:
    os.kill(os.getpid(), signal.SIGSTOP)
wait_for("rank1.pid")
time.sleep(0.3)
sys.exit("rank 0: collective timed out")
""")
    start = time.monotonic()
    result = _launch(package_path, "--nproc_per_node", "2", "--grace_period", "0.5", script)
    assert time.monotonic() - start < 10
    assert result.returncode == 1
    assert "rank 1 was stopped (not running: SIGSTOP or a debugger), which the failure likely follows" \
        in result.stderr
    _assert_all_gone(_pids(tmp_path).values())


def test_ranks_die_with_a_killed_launcher(package_path, tmp_path, reaper):
    script = _script(tmp_path, """
write(f"rank{RANK}.pid", os.getpid())
time.sleep(60)
""")
    launcher = subprocess.Popen(**_command(package_path, "--nproc_per_node", "2", "--log_dir", str(tmp_path / "logs"),
                                           script, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        end = time.monotonic() + TIMEOUT_S
        while len(_pids(tmp_path)) < 2:
            assert time.monotonic() < end and launcher.poll() is None, "the ranks did not start"
            time.sleep(0.02)
        launcher.kill()
        launcher.wait(timeout=TIMEOUT_S)
    finally:
        launcher.kill()
    _assert_all_gone(_pids(tmp_path).values())


def test_ranks_ignoring_sigterm_are_killed_after_the_grace_period(package_path, tmp_path, reaper):
    script = _script(tmp_path, """
signal.signal(signal.SIGTERM, signal.SIG_IGN)
write(f"rank{RANK}.pid", os.getpid())
if RANK == 1:
    wait_for("rank0.pid")
    sys.exit(5)
time.sleep(60)
""")
    start = time.monotonic()
    result = _launch(package_path, "--nproc_per_node", "2", "--grace_period", "0.5", script)
    assert time.monotonic() - start < 10
    assert result.returncode == 5
    assert "stopped rank 0 (rank 0 killed with SIGKILL after the 0.5 s grace period)" in result.stderr
    _assert_all_gone(_pids(tmp_path).values())


def test_sigint_stops_every_rank_and_what_they_started(package_path, tmp_path, reaper):
    # Each rank starts a child that ignores SIGINT and SIGTERM, like a stubborn worker: it must
    # still die with its rank's process group. It writes its pid once it ignores them.
    _script(tmp_path, """
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
write(f"child{RANK}.pid", os.getpid())
time.sleep(60)
""", name="child.py")
    script = _script(tmp_path, """
subprocess.Popen([sys.executable, os.path.join(DIR, "child.py")])
write(f"rank{RANK}.pid", os.getpid())
time.sleep(60)
""")
    launcher = subprocess.Popen(**_command(package_path, "--nproc_per_node", "2", script,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        end = time.monotonic() + TIMEOUT_S
        while len(_pids(tmp_path)) < 4:
            assert time.monotonic() < end and launcher.poll() is None, "the ranks did not start"
            time.sleep(0.02)
        sent = time.monotonic()
        launcher.send_signal(signal.SIGINT)
        out, err = launcher.communicate(timeout=TIMEOUT_S)
        assert time.monotonic() - sent < 5
    finally:
        launcher.kill()
    assert launcher.returncode == 128 + signal.SIGINT
    assert "weir-launch: received SIGINT; stopped ranks 0, 1" in err
    assert "[rank0]:KeyboardInterrupt" in err  # the ranks got the signal itself
    _assert_all_gone(_pids(tmp_path).values())


@pytest.mark.parametrize("options, message", [
    (["--nproc_per_node", "0"], "argument --nproc_per_node/--nproc-per-node: expected an integer >= 1, got '0'"),
    (["--nproc_per_node", "two"], "argument --nproc_per_node/--nproc-per-node: expected an integer >= 1, got 'two'"),
    (["--nnodes", "2", "--node_rank", "2"], "argument --node_rank: expected 0 <= node_rank < nnodes=2, got 2"),
    (["--master_port", "65536"], "argument --master_port/--master-port: expected an integer in 1..65535, got '65536'"),
    (["--master_port", "0"], "argument --master_port/--master-port: expected an integer in 1..65535, got '0'"),
    (["--rdzv_timeout", "0"], "argument --rdzv_timeout/--rdzv-timeout: expected an integer >= 1, got '0'"),
])
def test_bad_options_name_the_option_and_the_values(package_path, tmp_path, options, message):
    result = _launch(package_path, *options, _script(tmp_path, "print('ran')"))
    assert result.returncode == 2
    assert result.stdout == ""
    assert f"weir-launch: error: {message}\n" in result.stderr


def test_a_missing_script_is_a_usage_error(package_path, tmp_path):
    result = _launch(package_path, "--nproc_per_node", "2")
    assert result.returncode == 2
    assert "weir-launch: error: argument script: expected the script to run, got nothing" in result.stderr
    missing = str(tmp_path / "missing.py")
    result = _launch(package_path, missing)
    assert result.returncode == 2
    assert f"argument script: expected a Python file, got {missing!r}, which does not exist" in result.stderr


def test_the_installed_launcher_runs(tmp_path):
    try:
        found = importlib.util.find_spec("weir.distributed.launch") is not None
    except ImportError:  # the source tree's weir without its compiled runtime
        found = False
    if not found:
        pytest.skip("weir.distributed is not installed for this interpreter (make venv installs it)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    script = _script(tmp_path, "print('rank', RANK)")
    commands = [[sys.executable, "-m", "weir.distributed.launch"]]
    command = shutil.which("weir-launch", path=os.path.dirname(sys.executable))
    if command:
        commands.append([command])
    for launcher in commands:
        result = subprocess.run([*launcher, "--nproc_per_node", "2", script], env=env, capture_output=True,
                                text=True, timeout=TIMEOUT_S)
        assert result.returncode == 0, result.stderr
        assert sorted(result.stdout.splitlines()) == ["[rank0]:rank 0", "[rank1]:rank 1"]


def test_a_weir_session_under_the_launcher_spans_the_processes(tmp_path):
    pytest.importorskip("weir._C")
    script = tmp_path / "job.py"
    script.write_text("import weir as flow\nflow.train.CheckPoint().init()\n"
                      "r = flow.current_resource()\nprint(r['process_num'], r['rank'], r['collectives'])\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([sys.executable, "-m", "weir.distributed.launch", "--nproc_per_node", "2",
                             "--master_port", str(_free_port()), str(script)],
                            env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert result.returncode == 0, result.stderr
    for rank in (0, 1):
        assert f"[rank{rank}]:2 {rank} shm" in result.stdout, result.stdout


TOKEN_SCRIPT = """
import json
def cmdline(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().decode(errors="replace")
print("TOKEN " + json.dumps({"token": os.environ.get("WEIR_JOB_TOKEN"), "argv": sys.argv,
                             "own": cmdline(os.getpid()), "launcher": cmdline(os.getppid())}))
"""


def _tokens(result):
    assert result.returncode == 0, result.stderr
    seen = [json.loads(line.split(":", 1)[1][len("TOKEN "):]) for line in result.stdout.splitlines()]
    assert len(seen) == 2, result.stdout
    return seen


def test_the_job_token_goes_in_the_environment_never_on_a_command_line(package_path, tmp_path, monkeypatch):
    monkeypatch.delenv("WEIR_JOB_TOKEN", raising=False)
    script = _script(tmp_path, TOKEN_SCRIPT)
    first = _tokens(_launch(package_path, "--nproc_per_node", "2", script))
    token = first[0]["token"]
    assert len(token) == 64 and int(token, 16) >= 0  # secrets.token_hex(32)
    for rank in first:
        assert rank["token"] == token  # one token for the job
        assert token not in rank["own"] and token not in rank["launcher"] and token not in " ".join(rank["argv"])
    second = _tokens(_launch(package_path, "--nproc_per_node", "2", script))
    assert second[0]["token"] != token  # a new one for each job

    monkeypatch.setenv("WEIR_JOB_TOKEN", "chosen-by-the-user")  # one already set is kept
    assert [r["token"] for r in _tokens(_launch(package_path, "--nproc_per_node", "2", script))] == \
        ["chosen-by-the-user"] * 2


def test_several_nodes_need_the_same_token_set_on_each(package_path, tmp_path, monkeypatch):
    monkeypatch.delenv("WEIR_JOB_TOKEN", raising=False)
    script = _script(tmp_path, TOKEN_SCRIPT)
    result = _launch(package_path, "--nnodes", "2", "--master_addr", "10.1.2.3", script)
    assert result.returncode == 2
    assert ("weir-launch: error: --nnodes 2: expected WEIR_JOB_TOKEN in the environment, set to the same secret on "
            "every node") in result.stderr, result.stderr
    assert "got none: the master 10.1.2.3 is not a loopback address" in result.stderr
    # Nodes that all run on this machine: no token (each launcher would make its own), as a loopback master allows.
    assert [r["token"] for r in _tokens(_launch(package_path, "--nnodes", "2", "--nproc_per_node", "2", script))] == \
        [""] * 2


def _session_rank(script, rank, token, timeout_s, port, master_addr="127.0.0.1"):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR=master_addr, MASTER_PORT=str(port),
               WEIR_RDZV_TIMEOUT=str(timeout_s), WEIR_JOB_TOKEN=token)
    return subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_ranks_with_different_tokens_fail_clearly_within_a_bound(tmp_path):
    pytest.importorskip("weir._C")
    script = tmp_path / "job.py"
    script.write_text("import weir as flow\nflow.train.CheckPoint().init()\nprint('joined')\n")
    port = _free_port()
    start = time.monotonic()
    master = _session_rank(script, 0, "token-of-the-job", 4, port)
    forger = _session_rank(script, 1, "another-token", 60, port)  # a retry would take 60 s
    try:
        forger_out, forger_err = forger.communicate(timeout=TIMEOUT_S)
        forger_took = time.monotonic() - start
        master_out, master_err = master.communicate(timeout=TIMEOUT_S)
    finally:
        master.kill()
        forger.kill()
    assert forger.returncode != 0 and "joined" not in forger_out
    assert (f"[control plane] rank 1: the master 127.0.0.1:{port} (rank 0) refused this rank: the job token did not match "
            "(WEIR_JOB_TOKEN must be the same on every rank)") in forger_err, forger_err
    assert forger_took < 20
    # The master logged the refusal, naming where it came from, and went on waiting for a real rank 1.
    assert master.returncode != 0 and "joined" not in master_out
    assert f"[control plane] master 127.0.0.1:{port} refused a connection from 127.0.0.1:" in master_err, master_err
    assert "claiming rank 1: the job token did not match" in master_err
    assert "rank 1 never connected" in master_err
    assert time.monotonic() - start < TIMEOUT_S


def test_no_token_is_refused_when_the_master_is_not_on_a_loopback_address(tmp_path):
    pytest.importorskip("weir._C")
    script = tmp_path / "job.py"
    script.write_text("import weir as flow\nflow.train.CheckPoint().init()\nprint('joined')\n")
    start = time.monotonic()
    rank = _session_rank(script, 1, "", 60, 29500, master_addr="10.255.255.1")
    try:
        out, err = rank.communicate(timeout=TIMEOUT_S)
    finally:
        rank.kill()
    assert rank.returncode != 0 and "joined" not in out
    assert ("no job token, and master_addr 10.255.255.1 is not a loopback address: set WEIR_JOB_TOKEN to the same "
            "secret on every machine of the job") in err, err
    assert time.monotonic() - start < 20  # at once: no connection is tried
