"""What is being built right now: the job whose body is being traced, its name scopes and
placement. Ops, layers, variables and optimizers find their job here."""

from __future__ import annotations

import os
import sys
import threading
from contextlib import contextmanager

__all__ = ["BuildContext", "current", "maybe_current", "tracing", "scoped_name"]

_local = threading.local()
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep  # frames under it are Weir's, not the user's


# flow.enable_eager_execution(True): job functions run their bodies at each call, op by op
# (weir._function.JobFunction._call_eagerly).
eager_execution = False


class BuildContext:
    """One trace of one job function body."""

    def __init__(self, builder, function_name: str, job_type: str, config, session):
        self.builder = builder
        self.session = session  # the _session.Session the job compiles in
        self.function_name = function_name
        self.job_type = job_type
        self.config = config
        self.minimized = False
        self.losses = []  # flow.losses.add_loss (legacy training)
        self.namespaces = []
        self.variables = {}  # name -> Blob, so a job asking twice gets one blob
        self.layer_names = set()
        self.watches = 0
        self.writes = 0  # flow.assign: a job that only writes variables still runs
        self.op_sites = {}  # op name -> (file, line) of the user's line that made it
        self.eager = None  # eager mode: the call's _C.EagerRun, which runs each op as it is made

    def record_op_site(self, op: str) -> None:
        """Remembers the innermost line outside the weir package that made `op`, so that an error the
        planner later raises naming the op can show it."""
        if op in self.op_sites:
            return
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename.startswith(PACKAGE_DIR):
            frame = frame.f_back
        if frame is not None:
            self.op_sites[op] = (frame.f_code.co_filename, frame.f_lineno)

    @property
    def is_train(self) -> bool:
        return self.job_type == "train"


def maybe_current():
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


def current(what: str = "this") -> BuildContext:
    context = maybe_current()
    if context is None:
        raise RuntimeError(
            f"{what} builds part of a job: call it inside a function decorated with "
            "@flow.global_function, while that function is traced"
        )
    return context


@contextmanager
def tracing(context: BuildContext):
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    stack.append(context)
    try:
        yield context
    finally:
        stack.pop()


def scoped_name(name: str) -> str:
    """`name` inside the active flow.scope.namespace()s, joined with '-' as OneFlow does."""
    context = maybe_current()
    prefixes = context.namespaces if context is not None else getattr(_local, "namespaces", [])
    return "-".join([*prefixes, name]) if prefixes else name


def push_namespace(name: str) -> None:
    context = maybe_current()
    if context is not None:
        context.namespaces.append(name)
    else:
        _local.namespaces = [*getattr(_local, "namespaces", []), name]


def pop_namespace() -> None:
    context = maybe_current()
    if context is not None:
        context.namespaces.pop()
    else:
        _local.namespaces = getattr(_local, "namespaces", [])[:-1]


def layer_name(name, op: str, default: str = "") -> str:
    """The layer's scoped name; a name given may be used once per job (OneFlow's reuse=False). A layer
    left unnamed takes `default`, then `default_1`, `default_2`...: programs that stack unnamed dense
    layers (the docs' hybrid_parallelism_mlp.py) get one set of variables per layer."""
    context = current(op)
    if name is None:
        full, n = scoped_name(default), 0
        while full in context.layer_names:
            n += 1
            full = scoped_name(f"{default}_{n}")
    else:
        full = scoped_name(name)
        if full in context.layer_names:
            raise ValueError(f"{op}: job {context.function_name} already has a layer named {full!r}")
    context.layer_names.add(full)
    return full
