"""Run one script on several processes, with torchrun's conventions: `python -m weir.distributed.launch`,
also installed as the `weir-launch` command.

    weir-launch --nproc_per_node 2 train.py --epochs 3     # 2 processes on this machine
    # 2 machines x 2 processes: the same command on both, --node_rank 1 on the second one
    weir-launch --nnodes 2 --node_rank 0 --nproc_per_node 2 \\
                --master_addr 10.0.0.1 --master_port 29500 train.py --epochs 3

Options (each also spelled with dashes, `--nproc-per-node`, as torchrun accepts):
    --nproc_per_node N  processes on this node, N >= 1 (default 1)
    --nnodes M          nodes (machines) in the job, M >= 1 (default 1)
    --node_rank R       this node's index, 0 <= R < M (default 0); node 0 hosts the master
    --master_addr A     node 0's address (default 127.0.0.1)
    --master_port P     the master's port, 1..65535 (default 29500)
    --rdzv_timeout S    seconds the ranks may wait for each other at start (default 300)
    --log_dir DIR       each rank's output goes to DIR/rank_<r>/stdout.log and stderr.log
    --grace_period S    seconds between SIGTERM and SIGKILL when ranks are stopped (default 5)
    -m, --module        run the script as a module, `python -m script`
    --no_python         run the script as a program of its own, without the Python interpreter
    script [args ...]   everything after the script is passed to it unchanged

Processes. Each of the N ranks of this node runs `[sys.executable, script, *args]` (with -m,
`[sys.executable, "-m", script, *args]`; with --no_python, `[script, *args]`), stdin /dev/null, with
these variables added to the launcher's environment:
    RANK = node_rank * N + LOCAL_RANK, LOCAL_RANK = 0 .. N-1, WORLD_SIZE = M * N,
    LOCAL_WORLD_SIZE = N, GROUP_RANK = node_rank, MASTER_ADDR, MASTER_PORT,
    WEIR_RDZV_TIMEOUT (--rdzv_timeout), WEIR_JOB_TOKEN (below), and PYTHONUNBUFFERED=1 unless it is
    already set, so that a Python rank's output shows as it prints rather than when a pipe's buffer
    fills. With several ranks on the node, OMP_NUM_THREADS = (this machine's usable cores) / N unless it is set (torchrun
    sets 1), so that the ranks share the cores instead of each using all of them.
A Weir session reads these: the ranks form one distributed session (docs/distributed.md).

Job token. Every rank proves to the master that it knows WEIR_JOB_TOKEN before it may join, so a
process that merely reaches the master's port cannot (docs/distributed.md, "Threat model"). The
launcher keeps a WEIR_JOB_TOKEN already in its environment; otherwise, with one node, it makes a
random one for this job (secrets.token_hex(32)). It passes the token in the ranks' environment,
never on a command line, where other users could read it. With several nodes each launcher would
make a different one, so set WEIR_JOB_TOKEN to the same secret on every node; without it the
launcher refuses to start (a usage error), unless the master's address is a loopback address.

Output. Every line a rank writes to stdout (stderr) is written to the launcher's stdout (stderr)
as soon as the line is complete, prefixed with the rank's global rank as torchrun does,
`[rank1]:<line>`; lines never interleave. With --log_dir the output goes to the files instead,
unprefixed, and the launcher says where.

Failures. When a rank exits non-zero or is killed by a signal, the other ranks get a second to exit
on their own (losing a peer, they fail within a fraction of a second and say why), then the launcher
sends SIGTERM to the ranks still running, SIGKILL to those left after the grace period, and ends
with a line such as
    weir-launch: rank 1 (pid 1234) exited with status 3; stopped rank 0
exiting with the rank's status (128 + n for a rank killed by signal n, as shells report it). A rank
found stopped (SIGSTOP, a debugger) when another fails is named as the likely cause. When every
rank exits 0 the launcher exits 0. A rank that cannot be started at all gives status 1.

The ranks die with the launcher: each gets SIGKILL from the kernel when the launcher ends, even by
SIGKILL (Linux's parent-death signal), so no rank trains on as an orphan.

Signals. SIGINT (Ctrl-C), SIGTERM and SIGHUP to the launcher are forwarded to every rank; ranks
still running after the grace period are killed, and a second signal kills them at once. The
launcher then exits 128 + the signal's number (130 after Ctrl-C), as a shell does.

Process groups. Each rank starts in a session (so a process group) of its own: Ctrl-C in a
terminal reaches only the launcher, and each rank gets exactly one signal, the forwarded one.
Signals go to a rank's whole group, and when the launcher ends it kills whatever is left in each
group, so no process a rank started outlives the launcher.

Bad options are usage errors (status 2) naming the option, what it expects and what it got.
"""

import argparse
import ctypes
import ipaddress
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

PROG = "weir-launch"
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
POLL_S = 0.05  # how often the ranks are polled and pending signals acted on
# After a rank fails, the others usually fail on losing it within a fraction of a second and print why:
# they get this long to exit on their own before SIGTERM cuts their output short.
SETTLE_S = 1.0
_PR_SET_PDEATHSIG = 1


def _die_with_launcher(launcher_pid):
    """Run in each rank between fork and exec: the kernel sends the rank SIGKILL when the launcher dies
    (even by SIGKILL), and a launcher already gone by now ends the rank at once."""
    libc = ctypes.CDLL(None, use_errno=True)  # loaded before the fork: nothing to import here

    def preexec():
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != launcher_pid:
            os._exit(1)
    return preexec


def _number(kind, low, high=None):
    """An argparse type: a `kind` (int or float) in [low, high], or an error saying so."""
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            name = "an integer" if kind is int else "a number"
            bound = f"in {low}..{high}" if high is not None else f">= {low}"
            raise argparse.ArgumentTypeError(f"expected {name} {bound}, got {text!r}")
        return value
    return parse


def _parse(argv):
    parser = argparse.ArgumentParser(
        prog=PROG, description="Run a script on several processes (torchrun's conventions).",
        epilog="See `pydoc weir.distributed.launch` for the environment, output and exit statuses.")
    add = parser.add_argument
    add("--nproc_per_node", "--nproc-per-node", type=_number(int, 1), default=1, metavar="N",
        help="processes on this node (default 1)")
    add("--nnodes", type=_number(int, 1), default=1, metavar="M", help="nodes in the job (default 1)")
    add("--node_rank", "--node-rank", type=_number(int, 0), default=0, metavar="R",
        help="this node's index, 0 <= R < nnodes (default 0)")
    add("--master_addr", "--master-addr", default="127.0.0.1", metavar="ADDR",
        help="node 0's address (default 127.0.0.1)")
    add("--master_port", "--master-port", type=_number(int, 1, 65535), default=29500, metavar="PORT",
        help="the master's port (default 29500)")
    add("--rdzv_timeout", "--rdzv-timeout", type=_number(int, 1), default=300, metavar="S",
        help="seconds the ranks may wait for each other at start, WEIR_RDZV_TIMEOUT (default 300)")
    add("--log_dir", "--log-dir", metavar="DIR",
        help="write rank r's output to DIR/rank_<r>/stdout.log and stderr.log instead of prefixing it")
    add("--grace_period", "--grace-period", type=_number(float, 0), default=5.0, metavar="S",
        help="seconds between SIGTERM and SIGKILL when ranks are stopped (default 5)")
    add("-m", "--module", action="store_true", help="run the script as a module: python -m script")
    add("--no_python", "--no-python", action="store_true",
        help="run the script as a program, without the Python interpreter")
    add("script", nargs="?", help="the script (module, program) each process runs")
    add("script_args", nargs=argparse.REMAINDER, metavar="...", help="its arguments")
    args = parser.parse_args(argv)

    if args.script is None:
        parser.error("argument script: expected the script to run, got nothing")

    if args.node_rank >= args.nnodes:
        parser.error(f"argument --node_rank: expected 0 <= node_rank < nnodes={args.nnodes}, "
                     f"got {args.node_rank}")
    if args.module and args.no_python:
        parser.error("argument --no_python: not allowed with -m/--module")
    if args.no_python and shutil.which(args.script) is None:
        parser.error(f"argument script: expected a program on PATH or a path to one, got {args.script!r}")
    if not args.module and not args.no_python and not os.path.isfile(args.script):
        parser.error(f"argument script: expected a Python file, got {args.script!r}, which does not exist")
    if args.nnodes > 1 and not os.environ.get("WEIR_JOB_TOKEN") and not _is_loopback(args.master_addr):
        parser.error(f"--nnodes {args.nnodes}: expected WEIR_JOB_TOKEN in the environment, set to the same secret on "
                     f"every node (for example the output of `python3 -c \"import secrets; "
                     f"print(secrets.token_hex(32))\"`), got none: the master {args.master_addr} is not a loopback "
                     f"address, and each node's launcher would make a different token")
    return args


def _is_loopback(address):
    """Whether `address` (or every address the name resolves to) is a loopback address."""
    def loopback(text):
        ip = ipaddress.ip_address(text.split("%")[0])
        return (getattr(ip, "ipv4_mapped", None) or ip).is_loopback  # ::ffff:127.0.0.1 too
    try:
        return loopback(address)
    except ValueError:
        pass
    try:
        found = {info[4][0] for info in socket.getaddrinfo(address, None)}
    except OSError:
        return False
    return bool(found) and all(loopback(a) for a in found)


def _job_token(args):
    """The token the ranks prove to the master: the environment's, else a new one when this launcher
    starts every rank; "" for several nodes on a loopback master (each launcher would differ)."""
    token = os.environ.get("WEIR_JOB_TOKEN", "")
    if token or args.nnodes > 1:
        return token
    return secrets.token_hex(32)


def _signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _ranks_phrase(ranks):
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(str(r) for r in ranks)


def _process_state(pid):
    """The state letter of /proc/<pid>/stat ("R", "S", "T" stopped, ...), or "" when unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0].decode()
    except (OSError, IndexError):
        return ""


class _Rank:
    def __init__(self, rank, process, log_dir):
        self.rank, self.process, self.log_dir = rank, process, log_dir
        self.done = False  # its exit has been seen by the supervising loop


class _Launcher:
    def __init__(self, args):
        self.args = args
        self.ranks = []
        self.pumps = []               # threads copying the ranks' pipes to our stdout/stderr
        self.output_lock = threading.Lock()
        self.signals = []             # signals received, appended by the handler, acted on by the loop
        self.cause = None             # why the ranks are being stopped (None: they were not)
        self.status = 0               # the launcher's exit status
        self.stopped = []             # ranks still running when the stop began
        self.killed = []              # ranks that got SIGKILL: after the grace period, or a second signal
        self.kill_at = None           # monotonic time of that SIGKILL, while stopping
        self.kill_why = ""            # why SIGKILL came then
        self.term_signal = None       # what stops the ranks, sent at term_at (monotonic) while set
        self.term_at = None

    def run(self):
        # The handler only records the signal: the loop forwards it, so that a rank being started
        # while the signal arrives gets it too.
        previous = {s: signal.signal(s, lambda number, _frame: self.signals.append(number))
                    for s in FORWARDED_SIGNALS}
        try:
            self._start()
            self._supervise()
        finally:
            self._clean_up()
            for number, handler in previous.items():
                signal.signal(number, handler)
        if self.cause is not None:
            stopped = f"stopped {_ranks_phrase(self.stopped)}" if self.stopped else "no rank was still running"
            if self.killed:
                stopped += f" ({_ranks_phrase(self.killed)} killed with SIGKILL {self.kill_why})"
            self._say(f"{self.cause}; {stopped}")
        return self.status

    def _say(self, message):
        with self.output_lock:
            try:
                print(f"{PROG}: {message}", file=sys.stderr, flush=True)
            except OSError:
                pass

    def _start(self):
        a = self.args
        if a.module:
            command = [sys.executable, "-m", a.script, *a.script_args]
        elif a.no_python:
            command = [a.script, *a.script_args]
        else:
            command = [sys.executable, a.script, *a.script_args]
        first = a.node_rank * a.nproc_per_node
        token = _job_token(a)
        preexec = _die_with_launcher(os.getpid()) if sys.platform.startswith("linux") else None
        if a.log_dir:
            last = first + a.nproc_per_node - 1
            self._say(f"writing rank r's output to {os.path.join(a.log_dir, 'rank_<r>')}/stdout.log and "
                      f"stderr.log, for r = {first}" + (f"..{last}" if last > first else ""))
        for local_rank in range(a.nproc_per_node):
            if self.signals:
                return  # the loop stops those already started
            rank = first + local_rank
            env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(local_rank),
                       WORLD_SIZE=str(a.nnodes * a.nproc_per_node), LOCAL_WORLD_SIZE=str(a.nproc_per_node),
                       GROUP_RANK=str(a.node_rank), MASTER_ADDR=a.master_addr,
                       MASTER_PORT=str(a.master_port), WEIR_RDZV_TIMEOUT=str(a.rdzv_timeout))
            env["WEIR_JOB_TOKEN"] = token  # the environment only: a command line is visible to every user
            env.setdefault("PYTHONUNBUFFERED", "1")
            if a.nproc_per_node > 1:
                env.setdefault("OMP_NUM_THREADS", str(max(1, len(os.sched_getaffinity(0)) // a.nproc_per_node)))
            log_dir = os.path.join(a.log_dir, f"rank_{rank}") if a.log_dir else None
            try:
                if log_dir:
                    os.makedirs(log_dir, exist_ok=True)
                    with open(os.path.join(log_dir, "stdout.log"), "wb") as out, \
                         open(os.path.join(log_dir, "stderr.log"), "wb") as err:
                        process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                                   stderr=err, start_new_session=True, preexec_fn=preexec)
                else:
                    process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                               stderr=subprocess.PIPE, start_new_session=True, preexec_fn=preexec)
            except OSError as error:
                self._stop(f"cannot start rank {rank}: {error}", 1, signal.SIGTERM)
                return
            self.ranks.append(_Rank(rank, process, log_dir))
            if not log_dir:
                prefix = f"[rank{rank}]:".encode()
                for pipe, out in ((process.stdout, sys.stdout), (process.stderr, sys.stderr)):
                    thread = threading.Thread(target=self._pump, args=(pipe, out.buffer, prefix), daemon=True)
                    thread.start()
                    self.pumps.append(thread)

    def _pump(self, pipe, out, prefix):
        with pipe:
            for line in iter(pipe.readline, b""):
                if not line.endswith(b"\n"):
                    line += b"\n"
                with self.output_lock:
                    try:
                        out.write(prefix + line)
                        out.flush()
                    except (OSError, ValueError):
                        pass  # our output is gone (a closed pipe): keep draining so the rank never blocks

    def _running(self):
        return [r for r in self.ranks if r.process.poll() is None]

    def _send(self, ranks, number):
        for r in ranks:
            try:
                os.killpg(r.process.pid, number)  # the group's id is the rank's pid (start_new_session)
            except (ProcessLookupError, PermissionError):
                pass  # the group is already empty

    def _stop(self, cause, status, number, settle=0.0):
        """Stops the running ranks with signal `number` (after `settle` seconds in which they may exit
        on their own), SIGKILL after the grace period; the first cause is the one reported."""
        self.cause, self.status = cause, status
        self.term_signal, self.term_at = number, time.monotonic() + settle
        if settle <= 0:
            self._terminate()

    def _terminate(self):
        self.term_at = None
        self.stopped = [r.rank for r in self._running()]
        self._send(self._running(), self.term_signal)
        self.kill_at = time.monotonic() + self.args.grace_period
        self.kill_why = f"after the {self.args.grace_period:g} s grace period"

    def _supervise(self):
        handled = 0  # how many of self.signals have been acted on
        while True:
            new = self.signals[handled:]  # (a signal may arrive right after this line: next round)
            handled += len(new)
            if new and (self.cause is None or self.term_at is not None):
                if self.cause is None:
                    self._stop(f"received {_signal_name(new[0])}", 128 + new[0], new[0])
                else:  # a rank had failed, the others were settling: forward the signal now
                    self.term_signal = new[0]
                    self._terminate()
                new = new[1:]
            if new:  # a second signal: no more grace
                self.kill_at, self.kill_why = time.monotonic(), f"at a second signal, {_signal_name(new[0])}"
            failed = []
            for r in self.ranks:
                code = r.process.poll()
                if code is None or r.done:
                    continue
                r.done = True
                if code != 0:
                    failed.append((r, code))
            if failed and self.cause is None:
                # Ranks seen failing in the same round: a rank killed by a signal is the likelier cause (the
                # others then fail on losing it), so it is the one reported.
                r, code = next(((r, code) for r, code in failed if code < 0), failed[0])
                how = f"was killed by {_signal_name(-code)}" if code < 0 else f"exited with status {code}"
                where = f" (its output: {r.log_dir})" if r.log_dir else ""
                also = "".join(f"; rank {o.rank} exited with status {c}" if c > 0 else
                               f"; rank {o.rank} was killed by {_signal_name(-c)}" for o, c in failed if o is not r)
                # A rank stopped (SIGSTOP, a debugger) is the likelier cause of a healthy rank's timeout.
                halted = [o.rank for o in self._running() if _process_state(o.process.pid) in ("T", "t")]
                if halted:
                    also += (f"; {_ranks_phrase(halted)} {'was' if len(halted) == 1 else 'were'} stopped (not running: "
                             f"SIGSTOP or a debugger), which the failure likely follows")
                self._stop(f"rank {r.rank} (pid {r.process.pid}) {how}{where}{also}", code if code > 0 else 128 - code,
                           signal.SIGTERM, settle=min(SETTLE_S, self.args.grace_period))
            running = self._running()
            if not running:
                return
            if self.term_at is not None and time.monotonic() >= self.term_at:
                self._terminate()
                running = self._running()
            if self.kill_at is not None and time.monotonic() >= self.kill_at:
                self.killed += [r.rank for r in running if r.rank not in self.killed]
                self._send(running, signal.SIGKILL)
            time.sleep(POLL_S)

    def _clean_up(self):
        # Normally every rank has exited here; after an unexpected error in the launcher, kill them.
        self._send(self.ranks, signal.SIGKILL)  # also what the ranks left behind in their groups
        for r in self.ranks:
            r.process.wait()
        # The pipes close once nothing in the groups holds them; a process that left its group
        # could hold one open forever, hence the bound.
        deadline = time.monotonic() + 2
        for thread in self.pumps:
            thread.join(max(0, deadline - time.monotonic()))


def main(argv=None):
    """Runs the launcher on argv (default sys.argv[1:]); returns its exit status."""
    return _Launcher(_parse(argv)).run()


if __name__ == "__main__":
    sys.exit(main())
