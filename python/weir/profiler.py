"""Where a job's time goes: each actor's busy time (its kernel or copy) and each job's call latency.

    with weir.profiler.profile() as prof:
        for images, labels in batches:
            train_job(images, labels)
    print(prof.table())

Profiling costs two clock reads per actor firing while on, nothing while off. Async calls launched
inside the block are waited for before it ends, so they count in full.

A timeline of the same, every actor firing and every call, for Perfetto (https://ui.perfetto.dev)
or chrome://tracing:

    with weir.profiler.trace("run.json"):
        for images, labels in batches:
            train_job(images, labels)
"""

import contextlib
import os

from weir._session import default_session

__all__ = ["Profile", "profile", "trace"]


class Profile:
    """What one ``profile()`` block gathered; filled in when the block ends."""

    def __init__(self):
        self._c = None

    def _ready(self):
        if self._c is None:
            raise RuntimeError("the profile is filled in when its `with weir.profiler.profile()` block ends")
        return self._c

    @property
    def wall_seconds(self) -> float:
        return self._ready().wall_seconds

    @property
    def jobs(self):
        """Per job function that ran: ``job``, ``calls``, ``call_seconds`` and ``actors`` (each with
        ``name``, ``kind``, ``op_type``, ``firings``, ``busy_seconds``, and ``kept``: the firings that
        kept an earlier call's results, as a weight's cast does in a job that never changes the weight)."""
        return self._ready().jobs

    def table(self, max_actors: int = 25) -> str:
        """Per job: calls, mean latency, busy time a call, then its busiest actors (all if 0)."""
        if max_actors < 0:
            raise ValueError(f"max_actors must be >= 0, got {max_actors}")
        return self._ready().format(max_actors)

    def __str__(self) -> str:
        return self.table()


@contextlib.contextmanager
def profile(session=None):
    """Profiles the job functions of ``session`` (the default session) inside the block."""
    c = (session or default_session()).c_session()
    c.start_profiling()
    result = Profile()
    try:
        yield result
        c.sync()  # async calls of the block complete inside it
    finally:
        result._c = c.stop_profiling()


@contextlib.contextmanager
def trace(path, session=None):
    """Records a timeline of the job functions of ``session`` (the default session) inside the
    block and writes it to ``path`` when the block ends, in the Chrome trace event format: a
    process per device with a track per executor (job and stream), a slice per actor firing (its
    name; category its op type, or "collective" for collective actors; args: call id, bytes
    produced), and the calls from launch to completion. Calls of the block are waited for, so they
    are in it in full. Costs two clock reads and an append per firing while on."""
    path = os.fspath(path)
    # Where the file will go is checked now, not after the whole run the block records.
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"weir.profiler.trace: path {path!r}: folder {folder!r} does not exist")
    if not os.access(folder, os.W_OK):
        raise PermissionError(f"weir.profiler.trace: path {path!r}: folder {folder!r} is not writable")
    c = (session or default_session()).c_session()
    c.start_trace()
    try:
        yield
        c.sync()  # async calls of the block complete inside it
    finally:
        c.stop_trace(path)
