"""The default session: the C++ session that runs every job function, the job functions
registered with it, and the resource configuration set before it starts.

OneFlow's model (reference §1): importing opens a default session; the first job call or
checkpoint call initialises it, compiling every registered job function; ``flow.config.*``
only counts before that. Weir relaxes one rule on purpose: a job function may be defined
(and is compiled on its first call) after the session started.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import traceback
import weakref

from weir import _C

__all__ = ["default_session", "sync_default_session", "clear_default_session"]


class ResourceConfig:
    """What ``flow.config`` records: the session's CPU devices (``cpu_device_num``), and GPU
    devices, which become CPU devices while Weir has no CUDA kernels (one notice says so)."""

    def __init__(self):
        self.gpu_device_num = None
        self.cpu_device_num = None
        self.machine_num = 1
        self.compute_thread_pool_size = None
        self.options = {}  # every other documented knob, recorded as given


class Session:
    """A session: its job functions, its C++ session (made when it starts), its config."""

    def __init__(self):
        self.config = ResourceConfig()
        self._lock = threading.RLock()
        self._c = None
        self._closed = False
        # Job functions registered while this session is current, in definition order.
        self._functions = []
        # Per job function: the compiled job of this session.
        self.compiled = weakref.WeakKeyDictionary()

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
                threads = self.config.compute_thread_pool_size or 0
                self._c = _C.Session(
                    scheduler_threads=threads,
                    cpu_devices=self.config.cpu_device_num or 1,
                    gpu_devices=self.config.gpu_device_num or 0,
                )
            return self._c

    def start(self):
        """Initialises the session as OneFlow does: compiles every registered job function."""
        with self._lock:
            session = self.c_session()
            for function in list(self._functions):
                function._compile_in(self)
            return session

    def devices(self) -> int:
        """The devices jobs of this session run on (mirrored jobs take one array per device)."""
        if self._c is not None:
            return self._c.resource()["cpu_device_num"]
        return max(self.config.cpu_device_num or 1, self.config.gpu_device_num or 0)

    def sync(self) -> None:
        """Waits for every call and callback; re-raises the first exception a callback raised."""
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
    """Blocks until every job call launched so far and its callback have finished; re-raises
    an exception raised inside a callback."""
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
    # Pending callbacks run before the interpreter goes away; a callback's exception is
    # reported (it cannot be raised anywhere useful any more).
    try:
        _current.close()
    except BaseException:  # noqa: BLE001 - last chance to say what went wrong
        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
