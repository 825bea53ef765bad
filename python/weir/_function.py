"""``@flow.global_function``: job functions, their configuration, and calling them.

The body runs once per session, at compile time, with placeholder blobs (the trace); each call
then pushes numpy arrays through the compiled job. Sync calls return numpy data as the return
annotation says; ``tp.Callback[T]`` calls return a registrar; unannotated calls a legacy future.
"""

from __future__ import annotations

import functools
import inspect
import linecache
import os
import re
import sys
import threading
import traceback
import warnings

from weir import _C, _context, _session, dtypes, optimizer, scope
from weir._blob import Blob, TensorListBlob, is_blob, to_c_dtype
from weir._signature import LegacyFuture, TensorListShapes, parse_signature

__all__ = ["FunctionConfig", "function_config", "global_function", "JobFunction"]


class _Setter:
    """A config entry: calling it records the value (bool flags default to True); attribute
    access reaches nested entries (``config.train.primary_lr(0.1)``)."""

    def __init__(self, config, path):
        self._config = config
        self._path = path

    def __call__(self, value=True):
        self._config._set(self._path, value)
        return self._config

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _option(self._config, f"{self._path}.{name}")


# OneFlow's other FunctionConfig options (v0.3/v0.4). Weir acts on train.primary_lr and
# train.model_update_conf (flow.losses.add_loss's optimizer), enable_auto_mixed_precision and
# quantization-aware training (enable_qat and qat.*); the rest are performance and backend knobs
# (cuDNN, memory reuse, fusion, XLA/TensorRT) that Weir decides by itself or does not have: they are
# recorded in ``config.flags`` and noticed once each.
_QAT_OPTIONS = frozenset({
    "qat.per_channel_weight_quantization", "qat.symmetric", "qat.moving_min_max_momentum",
    "qat.moving_min_max_stop_update_after_iters", "qat.target_backend",
})
_ACTED_ON = frozenset({"train.primary_lr", "train.model_update_conf", "enable_auto_mixed_precision",
                       "enable_quantization_aware_training", "enable_qat"}) | _QAT_OPTIONS
_OPTIONS = _ACTED_ON | frozenset({
    "default_initializer_conf", "exp_run_conf", "use_memory_allocation_algorithm_v2",
    "static_mem_alloc_policy_white_list.has", "static_mem_alloc_policy_white_list.add",
    "static_mem_alloc_policy_white_list.remove", "static_mem_alloc_policy_white_list.policy_mem_size_first",
    "static_mem_alloc_policy_white_list.policy_mutual_exclusion_first",
    "static_mem_alloc_policy_white_list.policy_time_line", "static_mem_alloc_algo_white_list.show",
    "enable_cudnn", "cudnn_buf_limit_mbyte", "cudnn_conv_force_fwd_algo", "cudnn_conv_force_bwd_data_algo",
    "cudnn_conv_force_bwd_filter_algo", "cudnn_conv_heuristic_search_algo", "cudnn_conv_use_deterministic_algo_only",
    "enable_cudnn_fused_normalization_add_relu", "enable_fuse_add_to_output", "enable_fuse_cast_scale",
    "enable_reused_mem", "enable_inplace", "enable_inplace_in_reduce_struct", "enable_nccl",
    "use_nccl_inter_node_communication", "use_boxing_v2", "do_parallel_cast_before_widening_type_cast",
    "enable_all_reduce_group", "all_reduce_group_num", "all_reduce_lazy_ratio", "all_reduce_group_min_mbyte",
    "all_reduce_group_size_warmup", "all_reduce_fp16", "optimizer_placement_optimization_mode",
    "train.optimizer_placement_optimization_mode", "optimizer_placement_optimization_threshold",
    "train.optimizer_placement_optimization_threshold", "enable_non_distributed_optimizer",
    "disable_all_reduce_sequence", "prune_parallel_cast_ops", "prune_cast_to_static_shape_ops",
    "non_distributed_optimizer_group_size_mbyte", "enable_true_half_config_when_conv", "cudnn_conv_enable_true_half",
    "cudnn_conv_enable_pseudo_half", "enable_cudnn_conv_pseudo_half", "enable_float_compute_for_half_gemm",
    "enable_keep_header_only", "concurrency_width", "indexed_slices_optimizer_conf",
    "enable_fuse_model_update_ops", "enable_gradients_stats_aggregation", "train.loss_scale_factor",
    "train.secondary_lr", "use_xla_jit", "use_tensorrt", "tensorrt.use_fp16", "tensorrt.use_int8",
    "tensorrt.int8_calibration", "allow_cpu_return_op",
})
_NOTICED = set()
# How many shapes of a job function's dynamic inputs stay compiled at once (JobFunction._variant).
_MAX_VARIANTS = 32


def notice_once(key: str, message: str) -> None:
    """Prints `message` on stderr the first time `key` is seen in this process."""
    if key not in _NOTICED:
        _NOTICED.add(key)
        print(f"[weir] {message}", file=sys.stderr)


def _option(config, path):
    """The setter of option `path`, or of a group of them (``train``, ``qat``); AttributeError for a
    name OneFlow's FunctionConfig does not have."""
    if path not in _OPTIONS and not any(option.startswith(path + ".") for option in _OPTIONS):
        raise AttributeError(f"flow.FunctionConfig has no option {path!r}")
    return _Setter(config, path)


class FunctionConfig:
    """OneFlow's ``flow.FunctionConfig()``: ``config.default_data_type(flow.float)``,
    ``config.default_logical_view(flow.scope.mirrored_view())``,
    ``config.default_placement_scope(flow.scope.placement(...))``,
    ``config.enable_auto_mixed_precision(True)`` (matmul, batch_matmul and conv2d in bfloat16 on CPUs
    with AVX512_BF16 or AMX, float16 on GPUs; docs/python.md), ``config.enable_qat(True)`` with the
    ``config.qat.*`` options (quantization-aware training: fake quantization where an int8 backend
    would quantize; docs/python.md). OneFlow's other options are
    accepted and recorded in ``config.flags``; those Weir does not act on (performance knobs it decides
    by itself) print a notice once each; a name OneFlow does not have is an AttributeError."""

    _DEPRECATED = {
        "default_distribute_strategy": "default_logical_view",
        "train.primary_lr": None,
        "train.model_update_conf": None,
        "train.secondary_lr": None,
        "train.loss_scale_factor": None,
    }

    def __init__(self):
        self.flags = {}
        self.default_data_type_value = dtypes.float32
        self.channels_last_convolutions_value = None  # None: on the CPU, not on a GPU
        self.default_logical_view_value = None
        self.default_placement_scope_value = None

    def default_data_type(self, dtype):
        self.default_data_type_value = dtypes.as_dtype(dtype)
        to_c_dtype(self.default_data_type_value, "default_data_type")
        return self

    def channels_last_convolutions(self, value: bool = True):
        """Weir's own: run NCHW convolution chains in NHWC internally (docs/runtime.md), where oneDNN's
        CPU kernels are fastest. By default on for jobs on the CPU and off on a GPU, where cuDNN's NCHW
        engines measured faster than the NHWC ones with the transposes. Results are the same either way;
        ``False`` keeps every op in the layout the job wrote."""
        if not isinstance(value, bool):
            raise TypeError(f"channels_last_convolutions: expected a bool, got {value!r}")
        self.channels_last_convolutions_value = value
        return self

    def default_logical_view(self, view):
        if not isinstance(view, scope.LogicalView):
            raise TypeError(
                f"default_logical_view: expected flow.scope.mirrored_view() or flow.scope.consistent_view(), got {view!r}"
            )
        self.default_logical_view_value = view
        return self

    def default_distribute_strategy(self, view):
        warnings.warn(
            "default_distribute_strategy is deprecated; use default_logical_view", DeprecationWarning, stacklevel=2
        )
        return self.default_logical_view(view)

    def default_placement_scope(self, placement):
        if not isinstance(placement, scope.PlacementScope):
            raise TypeError(f"default_placement_scope: expected flow.scope.placement(...), got {placement!r}")
        self.default_placement_scope_value = placement
        return self

    @property
    def function_desc(self):
        return _FunctionDesc(self)

    def _set(self, path, value):
        if path not in _OPTIONS:
            raise AttributeError(f"flow.FunctionConfig.{path} is a group of options, not one: "
                                 f"{', '.join(sorted(o for o in _OPTIONS if o.startswith(path + '.')))}")
        if path.startswith("train."):
            warnings.warn(f"func_config.{path} has been deprecated; use flow.optimizer", DeprecationWarning, stacklevel=3)
        if path not in _ACTED_ON:
            notice_once(path, f"FunctionConfig.{path}({value!r}) is recorded but has no effect in Weir")
        self.flags[path] = value

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _option(self, name)


class _FunctionDesc:
    def __init__(self, config):
        self._config = config

    def __getattr__(self, name):
        if name in self._config.flags:
            return self._config.flags[name]
        raise AttributeError(f"function config has no flag {name!r} set")


def function_config() -> FunctionConfig:
    return FunctionConfig()


class _Compiled:
    """A job function compiled in one session."""

    __slots__ = ("session", "c_session", "owed", "job", "template", "devices", "mirrored")

    def __init__(self, session, job, template, devices, mirrored=False):
        self.session = session
        self.c_session = session.c_session()  # resolved once, not under the session lock per call
        self.owed = session.owed_callbacks
        self.devices = devices  # a mirrored placeholder takes one array per device of the job's placement
        self.job = job
        self.template = template
        self.mirrored = mirrored  # a consistent (tp.Numpy) placeholder's array is split over the devices


class _CompileFailure:
    """Why a job function did not trace or compile in a session. Each call of that function raises
    it again (a new exception of the original type), naming the function, where it was defined
    and the line of the job function's body that created the failing op."""

    __slots__ = ("_type", "message", "_cause")

    def __init__(self, function, error, op_sites=None):
        name = function.__name__
        code = getattr(function._fn, "__code__", None)
        where = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
        # The session's own "[session] job 'x' does not compile: " would say it twice.
        message = re.sub(r"^\[session\] job '[^']*' does not compile: ", "", str(error))
        lines = [f"job function '{name}'{where} does not compile: {message}"]
        # The innermost frame outside the weir package is the user's line that made the op; for an error
        # the planner raises after tracing, the line that made the op it names.
        site = None
        for frame in traceback.extract_tb(error.__traceback__):
            if not os.path.abspath(frame.filename).startswith(_context.PACKAGE_DIR):
                site = (frame.filename, frame.lineno)
        named = re.search(r"op '([^']+)'", message)
        if site is None and named and op_sites and named.group(1) in op_sites:
            site = op_sites[named.group(1)]
        if site is not None:
            line = linecache.getline(site[0], site[1]).strip()
            lines.append(f"  the op was created at {site[0]}:{site[1]}: {line}".rstrip())
        self.message = "\n".join(lines)
        self._type = type(error)
        self._cause = error

    def throw(self):
        try:
            error = self._type(self.message)
        except Exception:  # noqa: BLE001 - an exception type that takes other arguments
            error = RuntimeError(self.message)
        raise error from self._cause


class _PendingResult:
    """An async call's result meeting the callbacks registered for it. The job runs from the
    moment it is called (as in OneFlow), not when a callback is registered. The runtime's callback
    thread only stores the result; the callbacks run when the session releases the call, on the
    releasing thread (``_session.OwedCallbacks``), or at registration if that came first."""

    __slots__ = ("_lock", "_done", "_arrays", "_error", "_callbacks", "_released")

    def __init__(self):
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._arrays = None
        self._error = None
        self._callbacks = []
        self._released = False

    def deliver(self, arrays, error):
        self._arrays, self._error = arrays, error
        self._done.set()

    def register(self, callback):
        with self._lock:
            if not self._released:
                self._callbacks.append(callback)
                return
        callback(self._arrays, self._error)

    def release(self):
        """Waits for the result, then runs the callbacks registered so far; later ones run when
        they are registered."""
        self._done.wait()
        with self._lock:
            self._released = True
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self._arrays, self._error)

    def wait(self):
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._arrays


# flow.experimental.enable_typing_check: job functions decorated while it is on must annotate every
# parameter and the return.
_require_annotations = False


def set_typing_check(val: bool) -> None:
    global _require_annotations
    _require_annotations = val


class JobFunction:
    """A function decorated by ``@flow.global_function``. Call it with positional numpy arrays."""

    def __init__(self, fn, job_type: str, config: FunctionConfig):
        self._fn = fn
        self.job_type = job_type
        self.config = config
        self.signature = parse_signature(fn, require_annotations=_require_annotations)
        # A ListNumpy/ListListNumpy placeholder may take smaller arrays than declared (dynamic shapes).
        self._dynamic = any(leaf.kind != "numpy" for leaf in self.signature.leaves)
        self._lock = threading.Lock()
        functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        return f"<weir job function {self.__name__} ({self.job_type})>"

    # --- compile
    def _compile_in(self, session):
        """This function's compiled job in `session`, or the _CompileFailure that its calls raise:
        a job function that does not trace or compile fails alone, the session and every other
        job function stay usable."""
        compiled = session.compiled.get(self)
        if compiled is not None:
            return compiled
        with self._lock:
            compiled = session.compiled.get(self)
            if compiled is None:
                try:
                    compiled = self._trace(session)
                except Exception as error:  # noqa: BLE001 - kept, and raised by this function's calls
                    compiled = _CompileFailure(self, error, getattr(error, "weir_op_sites", None))
                session.compiled[self] = compiled
        return compiled

    def _new_builder(self, session, mirrored):
        """A builder for this function's job in `session`, and the context its body is traced in."""
        name = self.__name__
        job_type = _C.JobType.train if self.job_type == "train" else _C.JobType.predict
        # Where the session runs (a GPU session on a machine without one runs on the CPU).
        on_cuda = session.c_session().resource()["gpu_device_num"] > 0
        mixed_precision = self._mixed_precision_dtype(on_cuda)
        builder = _C.JobBuilder(
            name,
            job_type,
            to_c_dtype(self.config.default_data_type_value),
            channels_last_convolutions=(not on_cuda if self.config.channels_last_convolutions_value is None
                                        else self.config.channels_last_convolutions_value),
            mirrored=mirrored,
            mixed_precision=mixed_precision,
            on_cuda=on_cuda,
            quantization_aware_training=self._quantization_aware_training(),
        )
        if self.config.default_placement_scope_value is not None:
            self.config.default_placement_scope_value.push_to(builder)
        return builder, _context.BuildContext(builder, name, self.job_type, self.config, session), mixed_precision

    def _finish_body(self, context, value):
        """After the body ran: the legacy losses' optimizer, the train job's check, and the template
        of what the body returned."""
        name = self.__name__
        if context.losses and not context.minimized:
            _legacy_optimizer(self.config, name).minimize(context.losses)
        if self.job_type == "train" and not context.minimized:
            raise RuntimeError(
                f"{name} is a train job but no optimizer was given: call "
                "flow.optimizer.SGD(...).minimize(loss) in its body (or use type=\"predict\")"
            )
        template = self.signature.flatten_returns(value, is_blob)
        for blob in template.leaves:
            if blob._job is not context.builder:
                raise ValueError(f"{name} returns a blob of another job function: {blob.logical_blob_name}")
        return template

    def _trace(self, session, shapes=None) -> _Compiled:
        """Traces and compiles the body; `shapes` ({leaf name: shape}) overrides declared shapes
        of mirrored placeholders (a call's smaller arrays, OneFlow's dynamic shapes)."""
        name = self.__name__
        shapes = shapes or {}
        mirrored = scope._current_view(self.config) == "mirrored"
        devices = self._placement_devices(session)
        builder, context, mixed_precision = self._new_builder(session, mirrored)
        with _context.tracing(context):
            # In the mirrored view a consistent (tp.Numpy) placeholder is split over the devices, as
            # OneFlow does: each device's blob holds its rows; the call passes the one array.
            def placeholder(leaf, tensor_name=None, shape=None):
                shape = shape or shapes.get(leaf.name) or (leaf.per_device_shape(devices, name) if mirrored else leaf.shape)
                dtype = to_c_dtype(leaf.dtype, f"{name}: {leaf.where}")
                return Blob(builder.placeholder(tensor_name or leaf.name, shape, dtype), builder, leaf.batch_axis)

            def argument(leaf):
                tensors = shapes.get(leaf.name)
                if isinstance(tensors, TensorListShapes):  # a tensor list of several tensors: a placeholder each
                    return TensorListBlob([placeholder(leaf, f"{leaf.name}_tensor{k}", shape)
                                           for k, shape in enumerate(tensors)], leaf.shape)
                return placeholder(leaf)

            args = self.signature.build_arguments(argument)
            template = self._finish_body(context, self._fn(*args))
            for index, blob in enumerate(template.outputs):
                builder.output(f"return_{index}", blob._c)
            if not template.leaves and not context.watches and not context.minimized and not context.writes:
                # Nothing to compute (an empty body returning None): calls only check their inputs.
                return _Compiled(session, None, template, devices, mirrored)
        job = builder.build()
        if mixed_precision is not None and job.mixed_precision_ops == 0:
            notice_once(f"mixed:{name}", f"enable_auto_mixed_precision: job {name} has no matmul, batch_matmul or "
                         f"conv2d with {mixed_precision.name} kernels on this device: it runs in float32")
        try:
            session.c_session().compile(job)
        except Exception as error:
            error.weir_op_sites = context.op_sites  # where the op the planner names was made
            raise
        return _Compiled(session, job, template, devices, mirrored)

    def _placement_devices(self, session) -> int:
        """The devices of this process that the job's inputs are placed on: its function_config's
        default_placement_scope, else every device of the session. A mirrored placeholder takes one
        array per device."""
        placement = self.config.default_placement_scope_value
        if placement is None:
            return session.devices()
        return placement.devices_on(_session.current_rank())

    def _quantization_aware_training(self):
        """The job's quantization-aware training (OneFlow's enable_qat and qat.* options), or None."""
        flags = self.config.flags
        if not (flags.get("enable_qat", False) or flags.get("enable_quantization_aware_training", False)):
            return None
        qat = _C.QuantizationAwareTraining()
        for option in _QAT_OPTIONS:
            if option in flags:
                setattr(qat, option[len("qat."):], flags[option])
        return qat

    def _mixed_precision_dtype(self, on_cuda: bool):
        """The 16-bit dtype of enable_auto_mixed_precision(True) on this session's device, or None."""
        if not self.config.flags.get("enable_auto_mixed_precision", False):
            return None
        dtype = _C.mixed_precision_dtype(on_cuda)
        if dtype is None:
            notice_once("mixed:cpu", "enable_auto_mixed_precision: this CPU has no native bfloat16 (AVX512_BF16 or "
                         "AMX), where bfloat16 products would be slower than float32: jobs run in float32")
        return dtype

    def _compiled(self, failure_ok: bool = False):
        """This function compiled in the default session (compiled with the session's other functions
        when it starts); its compile failure raises, or with `failure_ok` is returned."""
        session = _session.default_session()
        compiled = session.compiled.get(self)
        if compiled is None:
            if self not in session._functions:
                session.register(self)
            session.start()  # compiles every registered job function, this one included
            compiled = session.compiled[self]
        if isinstance(compiled, _CompileFailure) and not failure_ok:
            compiled.throw()
        return compiled

    # --- dynamic shapes
    def _actual_shapes(self, devices, mirrored, arrays) -> dict:
        """{leaf name: shape} for each mirrored placeholder whose arrays in this call are smaller
        than declared (OneFlow's dynamic blobs); empty when the call fits the declared shapes."""
        shapes = {}
        index = 0
        for leaf in self.signature.leaves:
            count = devices if leaf.kind != "numpy" or mirrored else 1
            if leaf.kind == "numpy":
                index += count
                continue
            tensors = []  # a tensor list's tensors come one after another, each once per device
            for _ in range(arrays.tensor_list_items.get(leaf.name, 1)):
                got = {arrays[i].shape for i in range(index, index + count)}
                if len(got) > 1:
                    raise NotImplementedError(
                        f"{self.__name__}(): the devices' arrays of {leaf.where} have different shapes "
                        f"({', '.join(str(arrays[i].shape) for i in range(index, index + count))}); Weir compiles a job "
                        "for one shape of each placeholder, so each device's array must have the same shape")
                tensors.append(got.pop())
                index += count
            if len(tensors) > 1:
                shapes[leaf.name] = TensorListShapes(tensors)
            elif tensors[0] != leaf.shape:
                shapes[leaf.name] = tensors[0]
        return shapes

    def _variant(self, session, shapes) -> _Compiled:
        """This function compiled for the actual shapes of a call's dynamic inputs, compiled at the
        first call with those shapes (its ops then compute on the actual sizes, as OneFlow's dynamic
        blobs do) and kept for later calls; the least recently used of more than _MAX_VARIANTS is
        released. The variants share the session's variables with the declared-shape job (which
        need not compile itself: a concat bounded by max_dim_size may only fit smaller inputs)."""
        key = tuple(sorted(shapes.items()))
        with self._lock:
            variants = session.variants.setdefault(self, {})  # key -> _Compiled, most recently used last
            variant = variants.pop(key, None)
            if variant is None:
                if session.c_session().resource()["process_num"] > 1:
                    raise NotImplementedError(
                        f"{self.__name__}(): inputs smaller than their placeholders' shapes ({shapes}) are supported in "
                        "a session of one process: every process would have to compile the same job at the same call")
                try:
                    variant = self._trace(session, shapes)
                except Exception as error:  # noqa: BLE001 - raised as a compile failure naming the function
                    _CompileFailure(self, error, getattr(error, "weir_op_sites", None)).throw()
                self._release_old_variants(variants)
            variants[key] = variant
        return variant

    @staticmethod
    def _release_old_variants(variants) -> None:
        for key in list(variants):
            if len(variants) < _MAX_VARIANTS:
                return
            try:
                variants[key].c_session.release(variants[key].job)
            except RuntimeError:
                continue  # a call of it is in flight: kept for now
            del variants[key]

    # --- eager mode
    def _call_eagerly(self, args, kwargs):
        """flow.enable_eager_execution(True): the body runs at each call, each op run as it is
        written, alone, as a one-op job (a blob's .numpy() is its value). A predict function returns
        those values; a train function then runs the step its body built once, which computes the
        forward ops again and applies the gradients, and returns that step's values."""
        name = self.__name__
        session = _session.default_session()
        c_session = session.c_session()
        if c_session.resource()["process_num"] > 1:
            raise NotImplementedError(f"{name}: eager mode runs in a one-process session")
        # On one device the mirrored view computes what the consistent one does; a mirrored
        # placeholder's array may be smaller than declared (a dynamic blob): its ops run on its shape.
        devices = self._placement_devices(session)
        if scope._current_view(self.config) == "mirrored" and devices != 1:
            raise NotImplementedError(f"{name}: eager mode runs mirrored-view job functions placed on one device; this "
                                      f"one is placed on {devices}")
        arrays = self.signature.flatten_call_args(args, kwargs, devices=1, split_whole=False)
        builder, context, _ = self._new_builder(session, False)
        eager = _C.EagerRun(c_session, builder)
        context.eager = eager
        values = iter(arrays)

        def placeholder(leaf, tensor_name=None):
            value = next(values)
            shape = leaf.shape if leaf.kind == "numpy" else value.shape
            dtype = to_c_dtype(leaf.dtype, f"{name}: {leaf.where}")
            blob = Blob(builder.placeholder(tensor_name or leaf.name, shape, dtype), builder, leaf.batch_axis)
            eager.set_value(blob._c, value)
            return blob

        def argument(leaf):
            tensors = arrays.tensor_list_items.get(leaf.name, 1)
            if tensors == 1:
                return placeholder(leaf)
            return TensorListBlob([placeholder(leaf, f"{leaf.name}_tensor{k}") for k in range(tensors)], leaf.shape)

        with _context.tracing(context):
            template = self._finish_body(context, self._fn(*self.signature.build_arguments(argument)))
            if self.job_type != "train":
                eager.run_writers()  # the ops no value asked for: those that write variables (assign)
                outputs = [eager.value(blob._c) for blob in template.outputs]
            else:
                for index, blob in enumerate(template.outputs):
                    builder.output(f"return_{index}", blob._c)
        if self.job_type == "train":
            job = builder.build()
            try:
                outputs = c_session.call(job, arrays)
            finally:
                c_session.release(job)
        if self.signature.is_async:
            return _Registrar.done(template, name, outputs)
        if self.signature.returns_future:
            return LegacyFuture(lambda: outputs, template)
        return template.build(outputs)

    # --- call
    def __call__(self, *args, **kwargs):
        if _context.eager_execution:
            return self._call_eagerly(args, kwargs)
        compiled = self._compiled(failure_ok=self._dynamic)
        failed = isinstance(compiled, _CompileFailure)  # its declared shapes do not compile: a call's smaller ones may
        default = _session.default_session()
        if failed:
            devices = self._placement_devices(default)
            mirrored = scope._current_view(self.config) == "mirrored"
        else:
            devices, mirrored = compiled.devices, compiled.mirrored
        arrays = self.signature.flatten_call_args(args, kwargs, devices=devices, split_whole=mirrored)
        if self._dynamic and (failed or compiled.job is not None):
            shapes = self._actual_shapes(devices, mirrored, arrays)
            if shapes:
                compiled = self._variant(default, shapes)
            elif failed:
                compiled.throw()
        session = compiled.c_session
        template = compiled.template
        if compiled.job is None:
            if self.signature.is_async:
                return _Registrar.done(template, self.__name__)
            if self.signature.returns_future:
                return LegacyFuture(lambda: [], template, lambda deliver: deliver([]))
            return None
        owed = compiled.owed
        owed.raise_held()  # a callback of an earlier call failed: before this call launches anything
        if self.signature.is_async or self.signature.returns_future:
            pending = _PendingResult()
            session.call_async(compiled.job, arrays, pending.deliver)
            owed.add(self, pending)
            # The loop waits here for the call ASYNC_CALLS_AHEAD back, and runs its callback (an
            # exception of that callback comes out of the next call or sync point: this call runs).
            owed.run_ahead_of(self, _session.ASYNC_CALLS_AHEAD)
            if self.signature.is_async:
                return _Registrar(pending, template, self.__name__)
            return LegacyFuture(
                lambda: pending.wait(),
                template,
                lambda deliver: pending.register(lambda outputs, error: _raise_or(error, deliver, outputs)),
            )
        if owed and not _session.in_callback():
            # A sync call comes after the callbacks of the calls before it, as in the runtime's
            # one ordered stream of calls; they run before it starts, so an exception from one
            # never costs this call's result.
            owed.run_all()
        return template.build(session.call(compiled.job, arrays))


def _raise_or(error, deliver, outputs):
    if error is not None:
        raise error
    deliver(outputs)


def _legacy_optimizer(config, name):
    """The optimizer that `func_config.train.primary_lr` and `train.model_update_conf` describe
    (OneFlow before flow.optimizer): naive_conf is plain SGD, momentum_conf and adam_conf too."""
    lr = config.flags.get("train.primary_lr")
    if lr is None:
        raise RuntimeError(
            f"{name}: flow.losses.add_loss() needs a learning rate: call "
            "flow.optimizer.SGD(...).minimize(loss) in the job function, or set func_config.train.primary_lr"
        )
    update = config.flags.get("train.model_update_conf", {"naive_conf": {}})
    if "naive_conf" in update:
        return optimizer.SGD(lr, momentum=0.0)
    if "momentum_conf" in update:
        return optimizer.SGD(lr, momentum=update["momentum_conf"].get("beta", 0.9))
    if "adam_conf" in update:
        conf = update["adam_conf"]
        return optimizer.Adam(lr, conf.get("beta1", 0.9), conf.get("beta2", 0.999), conf.get("epsilon", 1e-8))
    raise ValueError(f"{name}: train.model_update_conf {update!r}: expected naive_conf, momentum_conf or adam_conf")


class _Registrar:
    """What a ``tp.Callback[T]`` job returns: call it with the callback, which later receives
    the job's result converted as ``T``."""

    __slots__ = ("_pending", "_template", "_name", "_registered")

    def __init__(self, pending, template, name):
        self._pending = pending
        self._template = template
        self._name = name
        self._registered = False

    @classmethod
    def done(cls, template, name, outputs=()):
        """The registrar of a call that has finished (with `outputs`; a call that produced nothing
        with none): the callback gets them at once."""
        pending = _PendingResult()
        pending.deliver(list(outputs), None)
        pending.release()
        return cls(pending, template, name)

    def __call__(self, callback):
        if not callable(callback):
            raise TypeError(f"{self._name}: the result of a tp.Callback job takes a callable, got {callback!r}")
        if self._registered:
            raise RuntimeError(f"{self._name}: a callback was already registered for this call")
        self._registered = True
        template = self._template

        def run(outputs, error):
            if error is not None:
                raise error
            callback(template.build(outputs))

        self._pending.register(run)


def global_function(type="predict", function_config=None):  # noqa: A002 - OneFlow's parameter name
    """Decorates a job function. ``type`` is "train" or "predict"; ``function_config`` a
    ``flow.FunctionConfig()``. Both may be positional; the legacy form
    ``@flow.global_function(config)`` is accepted with a warning."""
    if isinstance(type, FunctionConfig):  # legacy: config first
        warnings.warn(
            "global_function(function_config) is deprecated; use global_function(type=..., function_config=...)",
            DeprecationWarning,
            stacklevel=2,
        )
        function_config = type
        # Such configs carried their training settings (func_config.train.*): a train job.
        type = "train" if any(key.startswith("train.") for key in function_config.flags) else "predict"
    if callable(type) and not isinstance(type, str):
        raise TypeError("global_function must be called: write @flow.global_function() or @flow.global_function(type=...)")
    if type not in ("train", "predict"):
        raise ValueError(f"global_function: type must be 'train' or 'predict', got {type!r}")
    if function_config is None:
        function_config = FunctionConfig()
    elif not isinstance(function_config, FunctionConfig):
        raise TypeError(f"global_function: function_config must be a flow.FunctionConfig(), got {function_config!r}")

    def decorator(fn):
        if not inspect.isfunction(fn):
            raise TypeError(f"global_function decorates a Python function, got {fn!r}")
        function = JobFunction(fn, type, function_config)
        _session.default_session().register(function)
        return function

    return decorator
