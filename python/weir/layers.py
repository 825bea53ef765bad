"""``flow.layers``: ops that create their own variables, named "<name>-weight" and
"<name>-bias" (also their checkpoint folder names)."""

from __future__ import annotations

import warnings

from weir import _C, _context, distribute, initializers
from weir import math as _math
from weir import nn as _nn
from weir import ops as _ops
from weir._image import check_format, pair, padding_spec
from weir._ops_util import check_blob, wrap

__all__ = ["dense", "conv2d", "batch_normalization", "batch_normalization_relu", "batch_normalization_add_relu",
           "layer_norm"]

_warned_zero_dense = False  # flow.layers.dense's zero-kernel warning is given once per process


def _regularizer(value, what):
    if value is None:
        return _C.Regularizer()
    if not isinstance(value, _C.Regularizer):
        raise TypeError(f"{what}: expected a flow.regularizers value, got {value!r}")
    return value


def _layer_name(name, op: str, default: str = "") -> str:
    """The layer's scoped name; a name given may be used once per job (OneFlow's reuse=False). A layer
    left unnamed takes `default`, then `default_1`, `default_2`...: programs that stack unnamed dense
    layers (the docs' hybrid_parallelism_mlp.py) get one set of variables per layer."""
    context = _context.current(op)
    if name is None:
        full, n = _context.scoped_name(default), 0
        while full in context.layer_names:
            n += 1
            full = _context.scoped_name(f"{default}_{n}")
    else:
        full = _context.scoped_name(name)
        if full in context.layer_names:
            raise ValueError(f"{op}: job {context.function_name} already has a layer named {full!r}")
    context.layer_names.add(full)
    return full


def _activate(out, activation, name):
    if activation is None:
        return out
    if not callable(activation):
        raise TypeError(f"activation must be callable (e.g. flow.nn.relu), got {activation!r}")
    return activation(out, name=f"{name}-activation")


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None, bias_initializer=None,
          kernel_regularizer=None, bias_regularizer=None, trainable=True, name=None, model_distribute=None):
    """inputs (N, in) · weightᵀ + bias with weight (units, in) and bias (units); inputs of rank > 2
    are flattened to (-1, last) and reshaped back. Both initializers default to constant 0, as in
    OneFlow: a model whose dense weights all start at zero does not learn (every unit gets the same
    gradient), so the first such layer of a process says so in a warning."""
    global _warned_zero_dense
    x = check_blob(inputs, "flow.layers.dense", "inputs")
    if int(units) <= 0:
        raise ValueError(f"flow.layers.dense: units must be positive, got {units}")
    full = _layer_name(name, "flow.layers.dense", "Dense")
    if kernel_initializer is None and trainable and not _warned_zero_dense:
        _warned_zero_dense = True
        warnings.warn(
            f"flow.layers.dense({full!r}) has no kernel_initializer: its weight starts at zero, as in OneFlow, and "
            "a model whose dense weights all start at zero does not learn; pass one, e.g. "
            "kernel_initializer=flow.truncated_normal(0.1) (this warning is given once)", UserWarning, stacklevel=2)
    out = wrap(
        _C.dense(
            x._c, int(units), "none", bool(use_bias),
            initializers.resolve(kernel_initializer, "flow.layers.dense: kernel_initializer"),
            initializers.resolve(bias_initializer, "flow.layers.dense: bias_initializer"),
            _regularizer(kernel_regularizer, "flow.layers.dense: kernel_regularizer"),
            _regularizer(bias_regularizer, "flow.layers.dense: bias_regularizer"),
            bool(trainable), full, distribute.to_c(model_distribute, "flow.layers.dense: model_distribute"),
        ),
        x,
    )
    return _activate(out, activation, full)


def conv2d(inputs, filters, kernel_size=1, strides=1, padding="VALID", data_format="NCHW", dilation_rate=None,
           groups=1, activation=None, use_bias=True, kernel_initializer=None, bias_initializer=None,
           kernel_regularizer=None, bias_regularizer=None, trainable=True, name=None, weight_name=None,
           bias_name=None):
    """2-D convolution with variables "<name>-weight" (filters, C/groups, kh, kw) for NCHW or
    (filters, kh, kw, C/groups) for NHWC, and "<name>-bias" (filters). The kernel initializer defaults to
    xavier_uniform over the data format's fans (OneFlow's default), the bias to zeros."""
    op = "flow.layers.conv2d"
    x = check_blob(inputs, op, "inputs")
    if weight_name is not None or bias_name is not None:
        raise ValueError(f"{op}: weight_name/bias_name are not supported; variables are named <name>-weight/-bias")
    data_format = check_format(data_format, op)
    kind, pads = padding_spec(padding, op, data_format)
    full = _layer_name(name, op, "Conv2d")
    kernel_init = None if kernel_initializer is None else initializers.resolve(kernel_initializer, f"{op}: kernel_initializer")
    out = wrap(
        _C.conv2d_layer(
            x._c, int(filters), pair(kernel_size, "kernel_size", op, data_format),
            pair(strides, "strides", op, data_format), kind, pads, data_format,
            pair(1 if dilation_rate is None else dilation_rate, "dilation_rate", op, data_format), int(groups), "none",
            bool(use_bias), kernel_init, initializers.resolve(bias_initializer, f"{op}: bias_initializer"),
            _regularizer(kernel_regularizer, f"{op}: kernel_regularizer"),
            _regularizer(bias_regularizer, f"{op}: bias_regularizer"), bool(trainable), full,
        ),
        x,
    )
    return _activate(out, activation, full)


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=0.001, center=True, scale=True,
                        beta_initializer=None, gamma_initializer=None, beta_regularizer=None, gamma_regularizer=None,
                        moving_mean_initializer=None, moving_variance_initializer=None, trainable=True, training=True,
                        name=None):
    """Batch normalization with variables "<name>-gamma", "<name>-beta" and the moving statistics
    "<name>-moving_mean", "<name>-moving_variance". In train jobs it normalizes with the batch
    statistics and updates the moving ones; in predict jobs (or with training=False) it uses the
    moving statistics. Unnamed layers are "BatchNorm", "BatchNorm_1", ... as dense and conv2d."""
    op = "flow.layers.batch_normalization"
    x = check_blob(inputs, op, "inputs")
    full = _layer_name(name, op, "BatchNorm")
    zeros, ones = _C.constant_initializer(0.0), _C.constant_initializer(1.0)
    context = _context.current(op)
    # OneFlow trains the statistics only where a backward pass runs: train jobs.
    use_batch_statistics = bool(training) and context.is_train
    return wrap(
        _C.batch_normalization_layer(
            x._c, int(axis), float(momentum), float(epsilon), bool(center), bool(scale),
            initializers.resolve(beta_initializer, f"{op}: beta_initializer", zeros),
            initializers.resolve(gamma_initializer, f"{op}: gamma_initializer", ones),
            initializers.resolve(moving_mean_initializer, f"{op}: moving_mean_initializer", zeros),
            initializers.resolve(moving_variance_initializer, f"{op}: moving_variance_initializer", ones),
            _regularizer(beta_regularizer, f"{op}: beta_regularizer"),
            _regularizer(gamma_regularizer, f"{op}: gamma_regularizer"),
            bool(trainable), use_batch_statistics, full,
        ),
        x,
    )


def batch_normalization_relu(inputs, axis=-1, momentum=0.99, epsilon=0.001, center=True, scale=True,
                             beta_initializer=None, gamma_initializer=None, beta_regularizer=None,
                             gamma_regularizer=None, moving_mean_initializer=None, moving_variance_initializer=None,
                             trainable=True, training=True, name=None):
    """relu(batch_normalization(inputs, ...)): OneFlow's fused form (ResNet-50's train_fp32.sh), here
    the two ops, with the same variables as batch_normalization."""
    normalized = batch_normalization(inputs, axis, momentum, epsilon, center, scale, beta_initializer, gamma_initializer,
                                     beta_regularizer, gamma_regularizer, moving_mean_initializer,
                                     moving_variance_initializer, trainable, training, name)
    return _math.relu(normalized)


def batch_normalization_add_relu(inputs, addend=None, axis=-1, momentum=0.99, epsilon=0.001, center=True, scale=True,
                                 beta_initializer=None, gamma_initializer=None, beta_regularizer=None,
                                 gamma_regularizer=None, moving_mean_initializer=None, moving_variance_initializer=None,
                                 trainable=True, training=True, name=None):
    """relu(batch_normalization(inputs, ...) + addend), addend None: batch_normalization_relu
    (OneFlow's fused residual form, ResNet-50's)."""
    normalized = batch_normalization(inputs, axis, momentum, epsilon, center, scale, beta_initializer, gamma_initializer,
                                     beta_regularizer, gamma_regularizer, moving_mean_initializer,
                                     moving_variance_initializer, trainable, training, name)
    if addend is not None:
        normalized = normalized + check_blob(addend, "flow.layers.batch_normalization_add_relu", "addend")
    return _math.relu(normalized)


def layer_norm(inputs, center=True, scale=True, trainable=True, begin_norm_axis=1, begin_params_axis=-1,
               epsilon=1e-5, name=None):
    """Layer normalization (OneFlow's): each example normalized over the axes from `begin_norm_axis`
    on, y = (x - mean) / sqrt(variance + epsilon), then scaled by "<name>-gamma" and shifted by
    "<name>-beta" (variables of shape inputs.shape[begin_params_axis:], ones and zeros at first).
    Unnamed layers are "LayerNorm", "LayerNorm_1", ... Built from reductions and elementwise ops,
    as OneFlow builds it on the CPU; its gradient is theirs."""
    op = "flow.layers.layer_norm"
    x = check_blob(inputs, op, "inputs")
    rank = len(x.shape)
    if not -rank <= int(begin_norm_axis) < rank:
        raise ValueError(f"{op}: begin_norm_axis must be in [{-rank}, {rank}) for inputs of shape {tuple(x.shape)}, "
                         f"got {begin_norm_axis}")
    if not -rank <= int(begin_params_axis) < rank:
        raise ValueError(f"{op}: begin_params_axis must be in [{-rank}, {rank}) for inputs of shape "
                         f"{tuple(x.shape)}, got {begin_params_axis}")
    full = _layer_name(name, op, "LayerNorm")
    layer = full[len(_context.scoped_name("")):]  # get_variable adds the namespaces again
    norm_axis = int(begin_norm_axis) % rank
    mean, variance = _nn.moments(x, list(range(norm_axis, rank)), keepdims=True)
    y = (x - mean) * _math.rsqrt(variance + float(epsilon))
    params_shape = list(x.shape[int(begin_params_axis) % rank:])
    broadcast_shape = [1] * (rank - len(params_shape)) + params_shape
    if scale:
        gamma = _ops.get_variable(f"{layer}-gamma", shape=params_shape, dtype=x.dtype,
                                  initializer=initializers.ones_initializer(), trainable=bool(trainable))
        y = y * _ops.reshape(gamma, broadcast_shape)
    if center:
        beta = _ops.get_variable(f"{layer}-beta", shape=params_shape, dtype=x.dtype,
                                 initializer=initializers.zeros_initializer(), trainable=bool(trainable))
        y = y + _ops.reshape(beta, broadcast_shape)
    return y
