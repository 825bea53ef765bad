"""The default session: the C++ session that runs every job function, the job functions
registered with it, the callbacks its async calls still owe, and the resource configuration
set before it starts.

OneFlow's model (reference §1): importing opens a default session; the first job call or
checkpoint call initialises it, compiling every registered job function; ``flow.config.*``
only counts before that. Weir relaxes one rule on purpose: a job function may be defined
(and is compiled on its first call) after the session started.
"""

from __future__ import annotations

import atexit
import collections
import os
import sys
import threading
import traceback
import weakref

from weir import _C
from weir import _machines

__all__ = ["default_session", "sync_default_session", "clear_default_session"]


class ResourceConfig:
    """What ``flow.config`` records: the session's CPU devices (``cpu_device_num``), and GPU
    devices: n run the jobs on n GPUs when the build has CUDA and they are visible (under weir-launch,
    each process on n GPUs from LOCAL_RANK * n, NCCL between the processes); otherwise they become
    CPU devices, one notice saying why."""

    def __init__(self):
        self.gpu_device_num = None
        self.cpu_device_num = None
        self.machine_num = None  # flow.config.machine_num: checked when the session starts
        self.compute_thread_pool_size = None
        self.watchdog_timeout = 300.0  # seconds; flow.config.watchdog_timeout
        self.collective_timeout = 180.0  # seconds; flow.config.collective_timeout
        self.stream_graphs = True  # flow.config.stream_graphs
        self.copy_stream_threshold_mb = 1.0  # flow.config.copy_stream_threshold_mb
        self.tensor_float_32 = False  # flow.config.enable_tensor_float_32_compute
        self.commit_before_writes = True  # flow.config.commit_before_writes
        self.enable_fusion = True  # flow.config.collective_boxing.enable_fusion
        self.fusion_threshold_mb = 16.0  # flow.config.collective_boxing.nccl_fusion_threshold_mb
        self.options = {}  # every other documented knob, recorded as given


# When an async call's callback runs: always on a thread that calls into Weir, never on the
# runtime's callback thread, and at points fixed by the sequence of calls alone, so that what a
# program observes after a loop does not depend on timing (README, "When callbacks run"):
# - an async call of a job function returns once at most ASYNC_CALLS_AHEAD calls of that job
#   function still owe their callback: it waits for the oldest ones and runs their callbacks
#   (with every callback owed by an earlier call, of any job function, before them);
# - a sync call, flow.sync_default_session(), a checkpoint call, clear_default_session() and the
#   interpreter's exit run every callback owed by the calls made before them.
# So a loop of N async calls overlaps its host work with up to ASYNC_CALLS_AHEAD calls, and when
# it ends exactly the callbacks of its first N - ASYNC_CALLS_AHEAD calls have run. Two keeps the
# runtime busy while the caller prepares the next input (bench/async_pipeline.py) and leaves out
# only the last two batches of a loop that reads its callbacks' results without a sync.
ASYNC_CALLS_AHEAD = 2

_callback_depth = threading.local()


def in_callback() -> bool:
    """True on a thread that is running a job function's callback."""
    return getattr(_callback_depth, "value", 0) > 0


class OwedCallbacks:
    """The async calls of a session whose callbacks have not run yet, in call order.

    Each entry is (job function, pending result); ``pending.release()`` waits for the call's
    result, runs the callbacks registered so far and lets later ones run at registration."""

    def __init__(self):
        self._lock = threading.Lock()  # guards _calls and _owed
        self._run_lock = threading.Lock()  # one runner at a time, so callbacks keep call order
        self._calls = collections.deque()
        self._owed = {}  # job function -> its entries in _calls
        # A callback's exception raised while an async call waited for room: that call was already
        # launched and returns its registrar; the exception comes out of the next call, before it
        # launches anything, or of the next sync point.
        self._held = None

    def __bool__(self) -> bool:
        return bool(self._calls)

    def add(self, function, pending) -> None:
        with self._lock:
            self._calls.append((function, pending))
            self._owed[function] = self._owed.get(function, 0) + 1

    def run_ahead_of(self, function, keep: int) -> None:
        """Runs owed callbacks, oldest first, until `function` owes at most `keep`. A callback's
        exception is held (raise_held) once the others due here have run: the call that waits here
        has been launched, and its caller gets its registrar."""
        if in_callback():
            return  # a call made by a callback: the thread running that callback runs the rest
        with self._run_lock:
            # Never past the calls made so far: callbacks that call again must not keep us here.
            with self._lock:
                count = len(self._calls)
            try:
                self._run(lambda popped: popped < count and self._owed.get(function, 0) > keep)
            except Exception as error:  # noqa: BLE001 - raised by the next call or sync point
                with self._lock:
                    if self._held is None:
                        self._held = error

    def raise_held(self) -> None:
        """Raises (once) the callback exception that an earlier async call held."""
        if self._held is None or in_callback():
            return
        with self._lock:
            error, self._held = self._held, None
        if error is not None:
            raise error

    def run_all(self) -> None:
        """Runs the callbacks owed by every call made so far (not those of calls these callbacks
        make). The first exception a callback raised is raised after all have run."""
        if in_callback():
            raise RuntimeError(
                "a sync point (flow.sync_default_session(), a checkpoint or session call) inside a job "
                "function's callback would wait for that callback itself (sync calls of a job function may be "
                "made there)"
            )
        if self._calls:
            with self._run_lock:
                # Only the runner pops and others append: the calls made so far are the first ones.
                with self._lock:
                    count = len(self._calls)
                try:
                    self._run(lambda popped: popped < count)
                except Exception:
                    self.raise_held()  # the first exception wins: a held one came before this one
                    raise
        self.raise_held()

    def _run(self, more) -> None:
        error = None
        popped = 0
        while True:
            with self._lock:
                if not self._calls or not more(popped):
                    break
                function, pending = self._calls.popleft()
                popped += 1
                owed = self._owed[function] - 1
                if owed:
                    self._owed[function] = owed
                else:
                    del self._owed[function]
            _callback_depth.value = getattr(_callback_depth, "value", 0) + 1
            try:
                pending.release()
            except Exception as e:  # noqa: BLE001 - raised below, once the others due have run
                if error is None:
                    error = e
            finally:
                _callback_depth.value -= 1
        if error is not None:
            raise error


def _env_int(name: str, default: int, low: int, high: int) -> int:
    text = os.environ.get(name, "")
    if text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        raise ValueError(f"environment variable {name}: expected an integer in [{low}, {high}], got {text!r}")
    return value


def current_rank() -> int:
    """This process's rank among the session's processes: 0 in a session of one process."""
    return distributed_options().get("rank", 0)


def distributed_options() -> dict:
    """The processes this session spans (docs/distributed.md): weir-launch's (and torchrun's) RANK,
    LOCAL_RANK (a GPU session's process uses that GPU), WORLD_SIZE, MASTER_ADDR, MASTER_PORT and WEIR_RDZV_TIMEOUT when WORLD_SIZE is set (WEIR_COLLECTIVES
    picks the data plane: auto, shm or gloo); otherwise
    OneFlow's ``flow.env.machine([...])`` with ``flow.env.ctrl_port(p)``: one process per machine,
    machine 0 the master, this one's rank WEIR_NODE_RANK or the position of its own address in the
    list. An empty dict: one process."""
    def common():  # read only for a session of several processes
        return {"rendezvous_timeout_s": float(_env_int("WEIR_RDZV_TIMEOUT", 300, 1, 1 << 30)),
                "collectives": os.environ.get("WEIR_COLLECTIVES") or "auto",
                "job_token": os.environ.get("WEIR_JOB_TOKEN", "")}

    if os.environ.get("WORLD_SIZE", "") != "":
        world = _env_int("WORLD_SIZE", 1, 1, 1 << 20)
        if world == 1:
            return {}
        return {
            "world_size": world,
            "rank": _env_int("RANK", 0, 0, world - 1),
            "local_rank": _env_int("LOCAL_RANK", 0, 0, world - 1),
            "master_addr": os.environ.get("MASTER_ADDR") or "127.0.0.1",
            "master_port": _env_int("MASTER_PORT", 29500, 1, 65535),
            **common(),
        }
    machines = _machines.machines()
    if len(machines) <= 1:
        return {}
    return {
        "world_size": len(machines),
        "rank": _machines.node_rank(),
        "master_addr": machines[0],
        "master_port": _machines.control_port(),
        **common(),
    }


def machines_spanned() -> int:
    """The machines of this session: weir-launch's WORLD_SIZE / LOCAL_WORLD_SIZE (its --nnodes), or
    flow.env.machine's list."""
    if os.environ.get("WORLD_SIZE", "") != "":
        world = _env_int("WORLD_SIZE", 1, 1, 1 << 20)
        return max(1, world // _env_int("LOCAL_WORLD_SIZE", world, 1, world))
    return max(1, len(_machines.machines()))


class _CSession(_C.Session):
    """The C++ session, whose sync() also runs the callbacks still owed (checkpoint and profiler
    calls sync through it)."""

    def __init__(self, owed: OwedCallbacks, **kwargs):
        super().__init__(**kwargs)
        self.owed = owed

    def sync(self):
        if in_callback():
            self.owed.run_all()  # raises: it would wait for the running callback
        super().sync()
        self.owed.run_all()


class Session:
    """A session: its job functions, its C++ session (made when it starts), its config."""

    def __init__(self):
        self.config = ResourceConfig()
        self._lock = threading.RLock()
        self._c = None
        self._closed = False
        self.owed_callbacks = OwedCallbacks()
        # Job functions registered while this session is current, in definition order.
        self._functions = []
        # Per job function: the compiled job of this session, and the jobs compiled for the actual
        # shapes of its dynamic inputs (JobFunction._variant).
        self.compiled = weakref.WeakKeyDictionary()
        self.variants = weakref.WeakKeyDictionary()
        # The most CPU devices of machine 0 a "cpu" placement of a traced job named (its highest
        # device id + 1, scope.PlacementScope), and the count the session was started again with
        # for them (start()).
        self.cpu_devices_named = 0
        self._implied_cpu_devices = None

    @property
    def started(self) -> bool:
        return self._c is not None

    def register(self, function) -> None:
        with self._lock:
            self._functions = [f for f in self._functions if f.__name__ != function.__name__]
            self._functions.append(function)

    def c_session(self):
        """The C++ session, started on first use."""
        with self._lock:
            if self._closed:
                raise RuntimeError("this session was closed by flow.clear_default_session(); use the new default session")
            if self._c is None:
                spanned = machines_spanned()
                if self.config.machine_num is not None and self.config.machine_num != spanned:
                    raise ValueError(f"flow.config.machine_num({self.config.machine_num}): the session runs on {spanned} "
                                     "machine(s) (flow.env.machine's list, or weir-launch's --nnodes)")
                threads = self.config.compute_thread_pool_size or 0
                self._c = _CSession(
                    self.owed_callbacks,
                    scheduler_threads=threads,
                    cpu_devices=self.config.cpu_device_num or self._implied_cpu_devices or 1,
                    gpu_devices=self.config.gpu_device_num or 0,
                    watchdog_timeout_s=self.config.watchdog_timeout,
                    collective_timeout_s=self.config.collective_timeout,
                    stream_graphs=self.config.stream_graphs,
                    copy_stream_mb=self.config.copy_stream_threshold_mb,
                    tensor_float_32=self.config.tensor_float_32,
                    commit_before_writes=self.config.commit_before_writes,
                    fusion_threshold_mb=self.config.fusion_threshold_mb if self.config.enable_fusion else 0.0,
                    **distributed_options(),
                )
            return self._c

    def start(self):
        """Initialises the session as OneFlow does: compiles every registered job function."""
        with self._lock:
            fresh = self._c is None
            session = self.c_session()
            for function in list(self._functions):
                function._compile_in(self)
            if fresh and self._needs_more_cpu_devices():
                # As OneFlow, whose CPU placements may name any device ids: a session of one process
                # whose device count was not set starts again, before anything ran, with as many CPU
                # devices as its jobs' "cpu" placements name.
                self._implied_cpu_devices = self.cpu_devices_named
                self._c, old = None, self._c
                old.close()
                self.compiled.clear()
                self.variants.clear()
                session = self.c_session()
                for function in list(self._functions):
                    function._compile_in(self)
            return session

    def _needs_more_cpu_devices(self) -> bool:
        return (self.cpu_devices_named > self._c.resource()["cpu_device_num"] and self.config.cpu_device_num is None
                and self.config.gpu_device_num is None and self._c.resource()["process_num"] == 1)

    def devices(self) -> int:
        """The devices jobs of this session run on (mirrored jobs take one array per device)."""
        if self._c is not None:
            return self._c.resource()["cpu_device_num"]
        return max(self.config.cpu_device_num or 1, self.config.gpu_device_num or 0)

    def sync(self) -> None:
        """Waits for every call, then runs the callbacks still owed on this thread; re-raises the
        first exception a callback raised."""
        c = self._c
        if c is not None:
            c.sync()

    def close(self) -> None:
        with self._lock:
            c, self._c = self._c, None
            self._closed = True
        if c is not None:
            try:
                c.sync()
            finally:
                c.close()


_current = Session()
_current_lock = threading.Lock()


def default_session() -> Session:
    return _current


def sync_default_session() -> None:
    """Blocks until every job call launched so far has finished and runs, on this thread, every
    callback still owed; re-raises an exception raised inside a callback."""
    _current.sync()


def clear_default_session() -> None:
    """Closes the default session (after waiting for its calls and callbacks) and opens a new
    one: job functions compile again on their next call, variables start afresh, and
    ``flow.config`` may be changed again."""
    global _current
    with _current_lock:
        old, _current = _current, Session()
    old.close()


@atexit.register
def _close_at_exit() -> None:
    # A program that ends because Ctrl-C interrupted a wait of Weir's may have calls stuck in flight
    # (a collective waiting for a rank that is gone): closing would wait for them, so it exits at once
    # (the launcher's ranks within its 2 s promise); the OS reclaims what the session held.
    if _C.wait_interrupted():
        print("[weir] interrupted while waiting: exiting without waiting for the calls in flight", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    # Owed callbacks run before the interpreter goes away (a program may print its callbacks'
    # results without a sync); a callback's exception is reported (it cannot be raised anywhere
    # useful any more).
    try:
        _current.close()
    except BaseException:  # noqa: BLE001 - last chance to say what went wrong
        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)


def current_resource():
    """What the default session has (or will have when it starts): machines, devices and threads."""
    session = default_session()
    if session.started:
        return session.c_session().resource()
    return {"machine_num": machines_spanned(), "cpu_device_num": session.devices(), "gpu_device_num": 0}
