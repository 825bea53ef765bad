"""Weir: an actor-model dataflow runtime for deep-learning jobs, with OneFlow's job-function API.

    import weir as flow
    import weir.typing as tp

    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((100, 1, 28, 28), dtype=flow.float),
                  labels: tp.Numpy.Placeholder((100,), dtype=flow.int32)) -> tp.Numpy:
        ...

The body runs once, when the job is compiled; every op becomes an actor of the C++ runtime
(weir._C), and each call pipelines through them.
"""

import types as _types

import numpy as _np

from weir import _C  # noqa: F401 - loads the runtime first, so import errors surface here
from weir import (
    _context,
    _session,
    advanced,
    checkpoint,
    compiler,
    config,
    data,
    distribute,
    env,
    experimental,
    image,
    keras,
    layers,
    losses,
    math,
    nn,
    optimizer,
    profiler,
    quantization,
    random,
    regularizers,
    scope,
    train,
    typing,
    unittest,
)
from weir._blob import BlobDef
from weir._function import FunctionConfig, function_config, global_function
from weir._function import FunctionConfig as ExecutionConfig  # OneFlow 0.4's name for it (flow.compiler.trace)
from weir._session import clear_default_session, sync_default_session
from weir.checkpoint import get_all_variables, load_variables
from weir.dtypes import (
    bfloat16,
    bool_,
    char,
    convert_oneflow_dtype_to_numpy_dtype,
    double,
    float,
    float16,
    float32,
    float64,
    int8,
    int32,
    int64,
    tensor_buffer,
    uint8,
)
from weir.initializers import (
    constant_initializer,
    glorot_normal_initializer,
    glorot_uniform_initializer,
    kaiming_initializer,
    ones_initializer,
    random_normal_initializer,
    random_uniform_initializer,
    truncated_normal,
    truncated_normal_initializer,
    variance_scaling_initializer,
    xavier_normal_initializer,
    xavier_uniform_initializer,
    zeros_initializer,
)
from weir.input_blob_def import FixedTensorDef, MirroredTensorDef, MirroredTensorListDef
from weir._blob import INVALID_BATCH_AXIS, INVALID_SPLIT_AXIS
from weir._user_op import user_op_builder
from weir.math import unsorted_segment_sum, unsorted_segment_sum_like  # OneFlow exports them at the top too
from weir.ops import *  # noqa: F401,F403 - flow.reshape, flow.matmul, ...: every name of ops.__all__

__version__ = "0.1.0"

current_resource = env.current_resource
supported_ops = env.supported_ops
visible_gpus = env.visible_gpus


def current_machine_id() -> int:
    """This process's rank among the session's processes (OneFlow runs one process per machine;
    each process weir-launch or ``flow.env.machine`` starts counts as one): RANK under weir-launch,
    the node's position in ``flow.env.machine``'s list otherwise, 0 in a session of one process."""
    return _session.current_rank()


class FunctionDesc:
    """What ``flow.current_global_function_desc()`` gives inside a job function being traced (OneFlow's
    FunctionDesc): ``IsTrainable()`` (a train job) and ``job_config_proto.job_name``."""

    def __init__(self, job_name: str, trainable: bool):
        self._trainable = trainable
        self.job_config_proto = _types.SimpleNamespace(job_name=job_name)

    def IsTrainable(self) -> bool:  # noqa: N802 (OneFlow's name)
        return self._trainable

    def __repr__(self) -> str:
        return f"FunctionDesc(job_name={self.job_config_proto.job_name!r}, trainable={self._trainable})"


def current_global_function_desc() -> FunctionDesc:
    """The job function being traced, as OneFlow's layers ask about it (``IsTrainable()``: batch norm
    and dropout run in inference mode outside train jobs). Outside a job function it raises."""
    context = _context.current("flow.current_global_function_desc()")
    return FunctionDesc(context.function_name, context.is_train)


def eager_execution_enabled() -> bool:
    """Whether job functions run eagerly (flow.enable_eager_execution); False by default: compiled
    once and called (OneFlow's lazy mode)."""
    return _context.eager_execution


def enable_eager_execution(val: bool = True) -> None:
    """OneFlow's eager mode: while on, a job function's body runs at each call and each op runs as
    it is written, alone (a one-op job, compiled, run and released: about a millisecond an op), so a
    blob's ``.numpy()`` is its value and Python's control flow may read it. A predict function returns
    the values its ops computed; a train function then runs the step its body built once (the forward
    ops again, the gradients and the updates) and returns that step's values, so a random op (dropout)
    draws twice. Consistent-view job functions in a one-process session."""
    if not isinstance(val, bool):
        raise ValueError(f"flow.enable_eager_execution: expected True or False, got {val!r}")
    _context.eager_execution = val


def range(start, limit=None, delta=1, dtype=None, name=None):  # noqa: A001 - OneFlow's name
    """The integers start, start + delta, ... before limit (0 ... start - 1 when limit is None), as a
    constant blob of `dtype` (default int64, the one OneFlow takes)."""
    if limit is None:
        start, limit = 0, start
    for argument, value in (("start", start), ("limit", limit), ("delta", delta)):
        if not isinstance(value, (int, _np.integer)) or isinstance(value, bool):
            raise TypeError(f"flow.range: {argument} must be an int, got {value!r}")
    if delta == 0:
        raise ValueError("flow.range: delta must not be 0")
    values = _np.arange(int(start), int(limit), int(delta))
    return constant(values, int64 if dtype is None else dtype, values.shape, name)  # noqa: F405 - from weir.ops


def cast_to_current_logical_view(blob):
    """A blob in the current view. Weir's consistent blobs (variables, placeholders) are readable
    by every device's replica in the mirrored view as they are, so this returns ``blob`` itself."""
    return blob


def describe_state() -> str:
    """What every job function with calls in flight waits for, on demand (the watchdog prints the
    same when nothing moves for ``flow.config.watchdog_timeout`` seconds): its calls in flight and
    the oldest one's age, the kernel each busy executor is inside, and each actor that cannot fire,
    with the inputs it lacks and the outputs whose slots others still hold."""
    session = _session.default_session()
    if not session.started:
        return "no calls in flight\n"
    return session.c_session().describe_state()


def plan_dot(job_function) -> str:
    """The compiled plan of ``job_function`` (compiled in the default session if it is not yet)
    as Graphviz dot: every actor labelled with its device (``cpu:0``, ``cpu:1``), collective
    actors named by their collective (``all_reduce(...)``)."""
    compiled = job_function._compiled()
    if compiled.job is None:
        raise ValueError(f"plan_dot: {job_function.__name__} computes nothing (no outputs, no optimizer)")
    return _session.default_session().c_session().plan_dot(compiled.job)


# Old names OneFlow 0.2 programs still use.
def function(*args, **kwargs):
    """OneFlow 0.2's decorator of a job function: bare, ``@flow.function`` (a predict job with the
    default config); called, as ``global_function`` (``@flow.function(config)`` among others)."""
    if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], FunctionConfig):
        return global_function()(args[0])
    return global_function(*args, **kwargs)


fixed_placement = scope.placement
device_prior_placement = scope.placement
name_scope = scope.namespace
current_scope = scope.current_scope
